"""Bad input in the app -> a dialog that says what is wrong and what to do; the app keeps running.

QMessageBox is replaced by the ``dialogs`` fixture (tests/qt/conftest.py), which records the
title and text of every box instead of blocking.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest

from workbench.qt.workers import ProcessJob

DIGITS = "digits_cnn/model_opset17.onnx"


def wait_dialog(qtbot, dialogs, timeout=540_000) -> str:
    qtbot.waitUntil(lambda: len(dialogs) > 0, timeout=timeout)
    text = dialogs.texts()
    dialogs.clear()
    return text


def still_works(qtbot, win, open_file, corpus) -> None:
    """The window is alive and opens a good model after the failure."""
    open_file(win, corpus / DIGITS)
    assert win.doc.model is not None and len(win.canvas.node_names()) == len(win.doc.model.graph.node)


def test_corrupt_onnx(qtbot, window, open_file, dialogs, corpus, tmp_path):
    bad = tmp_path / "broken.onnx"
    bad.write_bytes((corpus / DIGITS).read_bytes()[:5000])  # truncated file
    window.open_path(bad)
    text = wait_dialog(qtbot, dialogs)
    assert "broken.onnx" in text and "not a readable ONNX model" in text
    assert "Re-export the model" in text  # what to do
    assert window.doc.model is None
    why = ("Could not open broken.onnx: not a readable ONNX model: the file is truncated or not ONNX (Error parsing "
           "message with type 'onnx.ModelProto': Wire format was corrupt); re-export the model (e.g. torch.onnx.export "
           "/ onnx.save) or pick another .onnx file.")
    assert window.status_label.text() == why  # was left at "Opening ...broken.onnx...", then "Could not open broken.onnx."
    still_works(qtbot, window, open_file, corpus)
    window.open_path(bad)  # the model opened before stays open
    wait_dialog(qtbot, dialogs)
    assert window.status_label.text() == f"{why} {Path(DIGITS).name} is still open."
    assert window.doc.model is not None


def test_missing_model_file(qtbot, window, dialogs, tmp_path):
    window.open_path(tmp_path / "nowhere.onnx")
    text = wait_dialog(qtbot, dialogs)
    assert "nowhere.onnx" in text and "no such model file" in text


def _project(qtbot, window, open_file, corpus, tmp_path):
    """A saved project whose model is a copy in tmp_path."""
    model = tmp_path / "model.onnx"
    shutil.copy(corpus / DIGITS, model)
    shutil.copy(corpus / "digits_cnn" / "calib.npz", tmp_path / "calib.npz")
    open_file(window, model)
    proj = window.save_project_to(tmp_path / "job.wbproj")
    return model, proj


def test_project_whose_model_moved(qtbot, window, open_file, dialogs, corpus, tmp_path, monkeypatch):
    """The box offers Locate Model... (tests/qt/test_project_locate_model.py); here the user cancels it."""
    from PySide6.QtWidgets import QMessageBox

    model, proj = _project(qtbot, window, open_file, corpus, tmp_path)
    model.rename(tmp_path / "elsewhere.onnx")
    shown = []
    monkeypatch.setattr(QMessageBox, "exec", lambda box: shown.append(box.text())
                        or box.button(QMessageBox.StandardButton.Cancel).click())
    window.open_path(proj)
    [text] = shown
    assert "job.wbproj" in text and "was not found (moved or deleted)" in text and not dialogs
    assert window.status_label.text() == "Could not open job.wbproj. model.onnx is still open."  # was "Saved ..."
    model.with_name("elsewhere.onnx").rename(model)
    open_file(window, proj)  # and it opens once the model is back
    assert window.doc.project_path == proj


def test_project_whose_model_changed(qtbot, window, open_file, dialogs, corpus, tmp_path):
    model, proj = _project(qtbot, window, open_file, corpus, tmp_path)
    m = onnx.load(str(model))
    m.producer_name = "edited"
    onnx.save(m, str(model))
    window.open_path(proj)
    text = wait_dialog(qtbot, dialogs, timeout=300_000)
    assert "changed since the project was saved" in text and "sha256" in text
    still_works(qtbot, window, open_file, corpus)


@pytest.mark.parametrize("content, expected", [
    (b"{not json", "invalid JSON"),
    (b'{"schema_version": 999, "model": {"path": "m.onnx", "sha256": "0"}}', "newer than this Workbench"),
])
def test_bad_project_file(qtbot, window, dialogs, tmp_path, content, expected):
    proj = tmp_path / "bad.wbproj"
    proj.write_bytes(content)
    window.open_path(proj)
    text = wait_dialog(qtbot, dialogs, timeout=300_000)
    assert "bad.wbproj" in text and expected in text
    assert window.status_label.text() == "Could not open bad.wbproj."


def test_project_with_damaged_results_opens_without_them(qtbot, window, open_file, dialogs, corpus, tmp_path):
    """A malformed row of saved per-unit results raised KeyError from the restore: "Internal error"
    dialog, the title named the project while the canvas kept the model open before, and the status
    stayed at "Opening ..."."""
    model, proj = _project(qtbot, window, open_file, corpus, tmp_path)
    data = json.loads(proj.read_text())
    data["results"] = {"errors": [{"bogus": 1}], "qparams": {}}
    proj.write_text(json.dumps(data))
    open_file(window, corpus / "digits_mlp" / "model_opset17.onnx")
    open_file(window, proj)
    assert window.doc.project_path == proj and window.doc.errors == [] and window.doc.qparams == {}
    assert sorted(window.canvas.node_names()) == sorted(n.name for n in window.doc.model.graph.node)
    assert window.doc.model_path == model.resolve()
    assert window.status_label.text().endswith("The project's saved per-unit results are unreadable (KeyError); "
                                               "calibrate again (F5).")
    assert "(no saved results)" not in window.status_label.text()  # there were some: unreadable, as it says
    assert not window.doc.modified


@pytest.mark.parametrize("arrays, expected", [
    ({"wrong_name": np.zeros((4, 1, 8, 8), np.float32)}, "input"),
    ({"input": np.zeros((4, 3, 8, 8), np.float32)}, "input"),
])
def test_npz_not_matching_the_model(qtbot, window, open_file, dialogs, corpus, tmp_path, arrays, expected):
    """Calibration with data made for another model: a DataError dialog, previous state kept."""
    open_file(window, corpus / DIGITS)
    bad = tmp_path / "other.npz"
    np.savez(bad, **arrays)
    window.calibration.set_data_spec({"kind": "npz", "path": str(bad)}, None)
    failed: list = []
    window.runs.failed.connect(lambda kind, err: failed.append(err))
    with qtbot.waitSignal(window.runs.finished, timeout=540_000):
        window.start_calibration()
    assert failed and type(failed[0]).__name__ == "DataError"
    text = wait_dialog(qtbot, dialogs, timeout=300_000)
    assert "other.npz" in text and expected in text
    assert "Calibrate failed" in text
    assert window.doc.errors == [] and window.doc.calibration is None
    assert window.act_calibrate.isEnabled() and "failed" in window.status_label.text()


def test_calibrate_without_data_or_model(qtbot, window, open_file, dialogs, corpus):
    window.start_calibration()
    assert "No model is open" in wait_dialog(qtbot, dialogs, timeout=60_000)
    open_file(window, corpus / DIGITS)
    window.calibration.set_data_spec(None, None)
    window.start_calibration()
    assert "No calibration data chosen" in wait_dialog(qtbot, dialogs, timeout=60_000)


def test_python_reader_needs_allow_code(qtbot, window, open_file, dialogs, corpus, tmp_path):
    """A Python reader runs only with "allow code" ticked: without it the core refuses, clearly."""
    open_file(window, corpus / DIGITS)
    reader = tmp_path / "reader.py"
    reader.write_text("import numpy as np\ndef samples():\n    yield {'input': np.zeros((1, 1, 8, 8), np.float32)}\n")
    window.calibration.set_data_spec({"kind": "python", "path": str(reader), "allow_code": False}, None)
    with qtbot.waitSignal(window.runs.finished, timeout=540_000):
        window.start_calibration()
    text = wait_dialog(qtbot, dialogs, timeout=300_000)
    assert "reader.py" in text and "allow" in text.lower()


def test_bug_in_a_slot_shows_internal_error_and_app_survives(qtbot, window, open_file, dialogs, corpus,
                                                             monkeypatch):
    open_file(window, corpus / DIGITS)

    def boom(*_a, **_k):
        raise ZeroDivisionError("simulated bug")

    monkeypatch.setattr(window.canvas, "search", boom)
    window.search.setText("Conv")
    window.run_search()
    text = wait_dialog(qtbot, dialogs, timeout=60_000)
    assert "Internal error: ZeroDivisionError: simulated bug" in text and "bug in Workbench" in text
    monkeypatch.undo()
    assert len(window.run_search()) == 3


def test_job_errors_keep_their_class(qtbot):
    """A WorkbenchError raised in the child arrives as the same class; a crash as InternalError."""
    job = ProcessJob("sleep", {"steps": 1, "delay": 0.0, "fail": True}, title="fail")
    with qtbot.waitSignal(job.failed, timeout=300_000) as blocker:
        job.start()
    err = blocker.args[0]
    assert type(err).__name__ == "DataError" and "x.npz" in err.message and err.hint
    qtbot.waitUntil(lambda: not job.running)
    job = ProcessJob("sleep", {"steps": 1, "delay": 0.0, "crash": True}, title="crash")
    with qtbot.waitSignal(job.failed, timeout=300_000) as blocker:
        job.start()
    err = blocker.args[0]
    assert type(err).__name__ == "InternalError" and "simulated bug" in err.message
    assert "Traceback" in err.details
    qtbot.waitUntil(lambda: not job.running)


def test_damaged_saved_sweep_is_reported_and_the_project_opens(qtbot, window, open_file, corpus, tmp_path):
    import json

    _model, proj = _project(qtbot, window, open_file, corpus, tmp_path)
    doc = json.loads(proj.read_text())
    doc["results"] = {"sensitivity": {"sweep": {"rows": "not rows"}, "suggestion": []}}
    proj.write_text(json.dumps(doc))
    open_file(window, proj)
    qtbot.waitUntil(lambda: "sensitivity sweep is unreadable" in window.status_label.text(), timeout=300_000)
    assert window.doc.model is not None and window.doc.sensitivity is None
    assert window.sensitivity.table.rowCount() == 0
