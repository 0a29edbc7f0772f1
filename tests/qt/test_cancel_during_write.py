"""A cancel that reaches an Export or a Report once its file is being written says what happened.

The job ended "cancelled" whenever its result came after the cancel, so a cancel during the write read "Export
cancelled; nothing was written." beside the file just written; and nothing checked the cancel between the
export's quantize and its write, so a cancel there was followed by the write all the same. Now a file job that
returns after the cancel ends as done, "(the cancel came too late to stop the write)", and a cancel before the
write begins stops it: the file already there is left as it was, and the line says nothing was written.
"""

from __future__ import annotations

import threading

import onnx
from bundled_example import EXAMPLE
from latency_fakes import quantized_faster

from workbench.core import jobs
from workbench.core.io.atomic import stale_temps
from workbench.core.pipeline import export as export_module
from workbench.core.report import write as report_write
from workbench.qt.workers import ProcessJob

OLD = b"the file that was there before"


def _hold(monkeypatch, module, name: str, *, after: bool = False) -> tuple[threading.Event, threading.Event]:
    """``module.name`` replaced by a wrapper that sets ``began`` and waits for ``go`` before calling it (``after``:
    once it returned)."""
    began, go = threading.Event(), threading.Event()
    real = getattr(module, name)

    def wait() -> None:
        began.set()
        assert go.wait(300), "the test never let the held call go on"

    def held(*args, **kwargs):
        if not after:
            wait()
        out = real(*args, **kwargs)
        if after:
            wait()
        return out

    monkeypatch.setattr(module, name, held)
    return began, go


def _cancel_while_held(qtbot, win, start, began: threading.Event, go: threading.Event) -> list:
    """Start a job, press Cancel once it reached the held call, then let the call go on; the outcomes seen."""
    seen: list = []
    win.runs.succeeded.connect(lambda kind, res: seen.append(("succeeded", res)))
    win.runs.cancelled.connect(lambda kind: seen.append(("cancelled", None)))
    win.runs.failed.connect(lambda kind, err: seen.append(("failed", err)))
    try:
        with qtbot.waitSignal(win.runs.finished, timeout=300_000):
            start()
            qtbot.waitUntil(began.is_set, timeout=300_000)
            win.runs.cancel()
            assert win.status_label.text().startswith("Cancelling ")
            go.set()
    finally:
        go.set()
    return seen


def _open(win, open_file, monkeypatch) -> None:
    quantized_faster(monkeypatch)  # jobs in this process (the replacements apply), no latency measured
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    win.calibration.set_data_spec({"kind": "npz", "path": str(EXAMPLE / "digits_cnn_calib.npz")}, 16)
    win._on_spec_changed()


def test_export_cancelled_while_writing_says_it_was_written(qtbot, window, open_file, monkeypatch, tmp_path):
    _open(window, open_file, monkeypatch)
    target = tmp_path / "out.onnx"
    target.write_bytes(OLD)
    began, go = _hold(monkeypatch, export_module, "save_model")
    seen = _cancel_while_held(qtbot, window, lambda: window.export_to(target, "qdq"), began, go)
    assert [s for s, _ in seen] == ["succeeded"]
    assert seen[0][1]["cancel_too_late"] is True
    proto = onnx.load(str(target))  # the whole model, written
    assert sum(n.op_type == "QuantizeLinear" for n in proto.graph.node) > 0
    assert window.status_label.text().startswith(f"Done: exported {target} (the cancel came too late to stop the "
                                                 "write): ")
    assert "nothing was written" not in window.calibration.status.text()
    assert not stale_temps(target)


def test_export_cancelled_before_writing_leaves_the_file(qtbot, window, open_file, monkeypatch, tmp_path):
    _open(window, open_file, monkeypatch)
    target = tmp_path / "out.onnx"
    target.write_bytes(OLD)
    # the cancel comes once the model is quantized, just before the write
    began, go = _hold(monkeypatch, jobs, "_quantize_with_cache", after=True)
    seen = _cancel_while_held(qtbot, window, lambda: window.export_to(target, "qdq"), began, go)
    assert [s for s, _ in seen] == ["cancelled"]
    assert target.read_bytes() == OLD and not stale_temps(target)
    text = window.status_label.text()
    assert text.startswith("Export cancelled") and text.endswith("; nothing was written."), text


def test_report_cancelled_while_writing_says_it_was_written(qtbot, window, open_file, monkeypatch, tmp_path):
    _open(window, open_file, monkeypatch)
    target = tmp_path / "r.html"
    target.write_bytes(OLD)
    began, go = _hold(monkeypatch, report_write, "atomic_write_bytes")
    seen = _cancel_while_held(qtbot, window, lambda: window.export_report_to(target), began, go)
    assert [s for s, _ in seen] == ["succeeded"]
    assert target.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")
    assert window.status_label.text() == (f"Done: wrote the report to {target} (the cancel came too late to stop "
                                          "the write) (opens in any browser, offline).")
    assert not stale_temps(target)


def test_report_cancelled_before_writing_leaves_the_file(qtbot, window, open_file, monkeypatch, tmp_path):
    _open(window, open_file, monkeypatch)
    target = tmp_path / "r.html"
    target.write_bytes(OLD)
    began, go = _hold(monkeypatch, report_write, "render_html")  # the page drawn, not yet written
    seen = _cancel_while_held(qtbot, window, lambda: window.export_report_to(target), began, go)
    assert [s for s, _ in seen] == ["cancelled"]
    assert target.read_bytes() == OLD and not stale_temps(target)
    assert window.status_label.text().startswith("Report cancelled") and \
        window.status_label.text().endswith("; nothing was written.")


class _Pipe:
    """The child's side as :meth:`ProcessJob._pump` reads it: one message waiting; cancels sent are kept."""

    def __init__(self, message):
        self.messages, self.sent = [message], []

    def poll(self, _timeout=0):
        return bool(self.messages)

    def recv(self):
        return self.messages.pop(0)

    def send(self, what):
        self.sent.append(what)


def test_a_process_job_result_after_the_cancel_is_kept_only_by_a_file_job(qapp):
    """The app's jobs run in a child process: its result read after the cancel was sent."""
    for keeps, outcome in ((True, ("ok", {"path": "m.onnx"})), (False, ("cancelled", None))):
        job = ProcessJob("export", {}, title="Export to m.onnx")
        job.keeps_late_result = keeps
        job.cancel()
        pipe, ctl = _Pipe(("ok", {"path": "m.onnx"})), _Pipe(None)
        assert job._pump(proc=None, conn=pipe, ctl=ctl, signals=None) == outcome
        assert ctl.sent == ["cancel"] and job.cancel_requested
        job.deleteLater()
