"""Save Project (As) never writes the project onto a file the open work reads: the calibration data, the
eval data (the Evaluate panel's default beside the model too) or the metric file; it refuses in one line
naming the file, and the file, the document and the window's project stay as they were."""

from __future__ import annotations

import shutil

import pytest
from cli_projects import MODEL, digits_folder

from workbench.core.errors import ExportError


def _refused(window, path, what):
    before = path.read_bytes() if path.is_file() else sorted(path.iterdir())
    with pytest.raises(ExportError) as err:
        window.save_project_to(path)
    message = err.value.message
    assert message.startswith(f"{path} is ") and what in message and "\n" not in message
    assert (path.read_bytes() if path.is_file() else sorted(path.iterdir())) == before
    assert window.doc.project_path is None and window.doc.modified


def test_save_project_refuses_the_calibration_and_eval_data(qtbot, window, open_file, corpus, tmp_path):
    folder = digits_folder(corpus, tmp_path)
    shutil.copy(folder / "eval.npz", folder / "holdout.npz")
    (folder / "metric.py").write_text("def metric(outputs, batch):\n    return 0.0\n")
    open_file(window, folder / MODEL)
    window.calibration.samples.setValue(8)  # an unsaved edit
    assert window.doc.data["path"] == str(folder / "calib.npz")
    _refused(window, folder / "calib.npz", "calibration data")
    _refused(window, folder / "eval.npz", "eval data")  # the panel's default: in no project field

    panel = window.evaluate_panel.settings
    panel.data.setText(str(folder / "holdout.npz"))
    panel.data.editingFinished.emit()
    panel.set_metric(str(folder / "metric.py"))
    _refused(window, folder / "holdout.npz", "eval data")
    _refused(window, folder / "metric.py", "metric file")
    window.calibration.set_data_spec({"kind": "npz", "path": str(folder / "calibdir")}, 8)
    window._on_spec_changed()
    _refused(window, folder / "calibdir", "calibration data")
    saved = window.save_project_to(folder / "p.wbproj")
    assert saved.is_file() and window.doc.project_path == saved and not window.doc.modified
