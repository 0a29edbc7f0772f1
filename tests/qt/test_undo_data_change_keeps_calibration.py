"""Undoing a change of the calibration rows gives back the calibration cache measured on them.

digits_cnn calibrated on 16 rows and saved: setting 20 samples dropped the cache (ranges of other rows), and
Ctrl+Z put the 16 back without it. The window then read unmodified (no "*", no prompt on quitting) while its
cache was gone: Ctrl+S wrote the project without its calibration, and F5 calibrated again. The document now
keeps the cache of the rows it leaves and gives it back when they return (undo, redo, the saved rows), unless
the data file was written again since.
"""

from __future__ import annotations

import os

import pytest
from cli_projects import MODEL, digits_folder, read_json, run_ok

pytestmark = pytest.mark.usefixtures("latency_pays")


def _samples(window, n: int) -> None:
    window.calibration.samples.setValue(n)
    window._on_spec_changed()


def _calibrated(qtbot, window, open_file, corpus, tmp_path):
    folder = digits_folder(corpus, tmp_path)
    open_file(window, folder / MODEL)
    _samples(window, 16)
    run_ok(qtbot, window, window.start_calibration)
    assert window.doc.calibration is not None and window.doc.rows[1] == 16
    return folder


def test_undo_after_a_saved_calibration_is_the_saved_project(qtbot, window, open_file, corpus, tmp_path):
    folder = _calibrated(qtbot, window, open_file, corpus, tmp_path)
    project = window.save_project_to(folder / "p.wbproj")
    saved = read_json(project)
    cache = window.doc.calibration
    assert saved["calibration"] is not None and saved["samples"] == 16

    _samples(window, 20)
    assert window.doc.calibration is None and window.doc.modified  # ranges of 16 rows are not of 20
    window.doc.undo_stack.undo()
    assert window.doc.rows[1] == 16 and window.calibration.samples.value() == 16
    assert window.doc.calibration is cache  # failed before: None
    assert not window.doc.modified and "*" not in window.windowTitle()
    window.save_project()
    assert read_json(project) == saved  # the same bytes' content: the calibration cache too

    window.doc.undo_stack.redo()  # 20 rows again: never calibrated
    assert window.doc.rows[1] == 20 and window.doc.calibration is None
    window.doc.undo_stack.undo()
    assert window.doc.calibration is cache and not window.doc.modified


def test_undo_of_other_data_gives_back_an_unsaved_calibration(qtbot, window, open_file, corpus, tmp_path):
    folder = _calibrated(qtbot, window, open_file, corpus, tmp_path)
    cache = window.doc.calibration
    data = window.doc.data
    window.calibration.set_data_spec({"kind": "npy", "path": str(folder / "calib.npy")}, 16)
    window._on_spec_changed()
    assert window.doc.data["path"] == str(folder / "calib.npy") and window.doc.calibration is None
    window.doc.undo_stack.undo()
    assert window.doc.data == data and window.doc.calibration is cache  # failed before: None
    assert window.doc.unsaved_text == "unsaved edits and results (calibration ranges, per-unit errors)"

    # the data file written again since: its old ranges are not given back
    window.doc.undo_stack.redo()
    calib = folder / "calib.npz"
    stat = calib.stat()
    os.utime(calib, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    window.doc.undo_stack.undo()
    assert window.doc.data == data and window.doc.calibration is None


def test_a_new_project_gets_no_cache_of_the_work_before(qtbot, window, open_file, corpus, tmp_path):
    folder = _calibrated(qtbot, window, open_file, corpus, tmp_path)
    window.save_project_to(folder / "p.wbproj")
    window.start_new_project()
    assert window.doc.calibration is None and window.doc.project_path is None
    _samples(window, 16)  # the saved project's rows: still no cache in a new project
    assert window.doc.rows[1] == 16 and window.doc.calibration is None
