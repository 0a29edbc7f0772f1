"""The export dialogs (model, report, node data, picture) never let an error escape: a refusal is one
line in a message box and the status line, no job starts, nothing is written.

File > Export Report lacked the guard that turns an exception into a message box: with no calibration
data chosen, its refusal escaped the slot. An output whose folder is a file was refused only after the
export or report job had quantized the model; it is refused before any work now.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bundled_example import EXAMPLE
from latency_fakes import quantized_faster
from PySide6.QtWidgets import QFileDialog


def _answer(monkeypatch, path: Path) -> None:
    """The save dialog answers ``path`` with the file type it offered first."""
    monkeypatch.setattr(QFileDialog, "getSaveFileName",
                        staticmethod(lambda parent, title, start, filters="", selected="", *a, **k: (str(path),
                                                                                                     selected)))


def _one_error(dialogs) -> str:
    """The text of the one critical dialog shown (then forgotten); its first line is the message."""
    assert [kind for kind, _t, _x in dialogs] == ["critical"], dialogs.texts()
    text = dialogs[0][2]
    dialogs.clear()
    assert "Traceback" not in text and "Internal error" not in text
    return text


def test_report_without_data_says_so_in_a_box(qtbot, window, open_file, dialogs, monkeypatch, tmp_path):
    open_file(window, EXAMPLE / "digits_cnn.onnx")
    window.calibration.set_data_spec(None, None)
    window._on_spec_changed()
    _answer(monkeypatch, tmp_path / "r.html")
    window.act_export_report.trigger()
    text = _one_error(dialogs)
    assert text.splitlines()[0] == "No calibration data chosen."
    assert window.status_label.text() == "No calibration data chosen."
    assert not window.runs.busy and not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("action", ["export", "export_qonnx", "export_report", "export_picture"])
def test_output_in_a_folder_that_is_a_file_is_refused_before_any_work(qtbot, window, open_file, dialogs, monkeypatch,
                                                                     tmp_path, action):
    open_file(window, EXAMPLE / "digits_cnn.onnx")
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("a file")
    target = blocker / ("out.html" if action == "export_report" else "out.png" if action == "export_picture"
                        else "out.onnx")
    _answer(monkeypatch, target)
    getattr(window, f"act_{action}").trigger()
    assert not window.runs.busy  # refused before the job: nothing to wait for
    text = _one_error(dialogs)
    first = text.splitlines()[0]
    assert first == f"{target}: {blocker} is a file, not a folder.", first
    assert window.status_label.text() == first
    assert blocker.read_text() == "a file" and sorted(p.name for p in tmp_path.iterdir()) == ["not_a_folder"]


def test_node_data_into_a_file_folder_is_one_line(qtbot, window, open_file, dialogs, monkeypatch, tmp_path):
    quantized_faster(monkeypatch)  # errors to export also where digits_cnn measures slower quantized
    open_file(window, EXAMPLE / "digits_cnn.onnx")
    with qtbot.waitSignal(window.runs.finished, timeout=540_000):
        window.start_calibration()
    assert window.doc.errors
    blocker = tmp_path / "file"
    blocker.write_text("x")
    _answer(monkeypatch, blocker / "nodes.json")
    window.act_export_node_data.trigger()
    first = _one_error(dialogs).splitlines()[0]
    assert first.startswith(f"{blocker}/nodes.") and first.endswith(f"{blocker} is a file, not a folder."), first
    assert blocker.read_text() == "x"
