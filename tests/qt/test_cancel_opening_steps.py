"""Cancel while a model opens stops the open at its next step. The open ran as one call the cancel could not
reach (the result was only dropped once the whole read, check, preparation and shape inference had run: about
2 s for ppocrv4_rec, minutes for a multi-GiB model); now api.open_model checks the cancel between the steps
of progress.OPEN_STEPS and the status line names the step running."""

from __future__ import annotations

import threading

from workbench.core.model import load
from workbench.core.progress import OPEN_STEPS
from workbench.qt.welcome import example_model

MODEL = example_model()


def test_a_cancel_during_the_read_stops_before_the_preparation_and_keeps_the_open_model(
        qtbot, window, open_file, tmp_path, monkeypatch):
    win = window
    open_file(win, MODEL)
    before = win.doc.model
    other = tmp_path / "other.onnx"
    other.write_bytes(MODEL.read_bytes())
    read, go_on, prepared = threading.Event(), threading.Event(), []
    real_read, real_prepare = load.read_model_file, load._prepare

    def read_model_file(path, **kw):
        out = real_read(path, **kw)
        read.set()
        go_on.wait(60)  # the cancel arrives while the file is being read
        return out

    def prepare(*args, **kw):
        prepared.append(args[0])
        return real_prepare(*args, **kw)

    monkeypatch.setattr(load, "read_model_file", read_model_file)
    monkeypatch.setattr(load, "_prepare", prepare)
    win.open_path(other)
    qtbot.waitUntil(read.is_set, timeout=60_000)
    win.act_cancel.trigger()
    go_on.set()
    qtbot.waitUntil(lambda: win._open_job is None, timeout=60_000)
    assert prepared == []  # stopped before "Preparing"
    assert win.doc.model is before and win.doc.model_path == MODEL
    assert win.status_label.text() == f"Opening other.onnx cancelled. {MODEL.name} is still open."
    assert win.act_calibrate.isEnabled() and not win.act_cancel.isEnabled()


def test_the_status_line_names_each_step_of_an_open(qtbot, window):
    win = window
    lines = []
    win.open_path(MODEL)
    win._open_job.progress.connect(lambda done, total, step: lines.append((done, total, win.status_label.text())))
    qtbot.waitUntil(lambda: win._open_job is None, timeout=120_000)
    assert win.doc.model_path == MODEL
    assert OPEN_STEPS == ("Reading", "Checking", "Preparing", "Inferring shapes")
    steps = ["Reading", "Checking", "Checking", "Preparing", "Inferring shapes"]
    assert [(d, t) for d, t, _ in lines] == [(OPEN_STEPS.index(s), 4) for s in steps]
    assert [text for _, _, text in lines] == [f"Opening {MODEL}: {s}... (Esc cancels)" for s in steps]
