"""Opening or dropping a file while a job runs: the app's one-line message (what runs, what to do), no traceback
on stderr, and the job runs on to its end."""

from __future__ import annotations

import shutil
from pathlib import Path

from bundled_example import EXAMPLE
from latency_fakes import quantized_faster
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent


def _drop(win, path: Path) -> None:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    win.dropEvent(QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.NoButton,
                             Qt.KeyboardModifier.NoModifier))


def test_open_and_drop_while_calibrating_say_so_and_the_job_goes_on(qtbot, window, open_file, tmp_path, monkeypatch,
                                                                     dialogs, capfd, corpus):
    quantized_faster(monkeypatch)
    for name in ("digits_cnn.onnx", "digits_cnn_calib.npz"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    open_file(window, tmp_path / "digits_cnn.onnx")
    other = corpus / "digits_cnn" / "model_opset13.onnx"
    seen = []
    window.runs.succeeded.connect(lambda kind, res: seen.append("succeeded"))
    window.runs.failed.connect(lambda kind, err: seen.append("failed"))
    capfd.readouterr()
    window.act_calibrate.trigger()
    job = window.runs.job
    assert window.runs.busy
    window.open_path(other)
    said = window.status_label.text()
    _drop(window, other)
    assert window.status_label.text() == said
    _drop(window, tmp_path / "digits_cnn_calib.npz")  # data for the open model: not taken while the job reads it
    assert said == f"{job.title} is running; model_opset13.onnx was not opened."
    hint = "\n\nWait until it ends or cancel it (Run > Cancel, Esc)."
    assert [text for _kind, _title, text in dialogs] == [f"{job.title} is running; model_opset13.onnx was not opened."
                                                         + hint] * 2 + [
        f"{job.title} is running; digits_cnn_calib.npz was not opened." + hint]
    dialogs.clear()
    assert window.runs.job is job and job.running and window.doc.model_path == tmp_path / "digits_cnn.onnx"
    with qtbot.waitSignal(window.runs.finished, timeout=300_000):
        pass
    assert seen == ["succeeded"]
    err = capfd.readouterr().err
    assert "Traceback" not in err and err == "", err


def test_drop_while_a_model_loads_says_so_and_the_load_goes_on(qtbot, window, open_file, dialogs, capfd, corpus):
    first, other = corpus / "digits_cnn" / "model_opset17.onnx", corpus / "digits_cnn" / "model_opset13.onnx"
    capfd.readouterr()
    window.open_path(first)  # loads in the background
    loading = window._open_job
    assert loading is not None
    _drop(window, other)
    assert [text for _kind, _title, text in dialogs] == [
        f"{loading.title} is still running; model_opset13.onnx was not opened.\n\nWait until it ends or cancel it (Esc)."]
    dialogs.clear()
    assert window._open_job is loading
    qtbot.waitUntil(lambda: window._open_job is None, timeout=300_000)
    assert window.doc.model_path == first
    err = capfd.readouterr().err
    assert "Traceback" not in err and err == "", err
