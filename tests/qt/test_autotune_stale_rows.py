"""An autotune curve measured with other calibration rows is marked out of date, as the Evaluate panel's figures
are, also in the project it is saved in.

Found by a user pass: after Autotune on digits_cnn and a new calibration sample count (other ranges, so other
metrics for every recipe of the curve), the Evaluate panel said "The calibration data changed since" while the
Autotune panel showed its curve and its "tuned ... (target met)" line as current."""

from __future__ import annotations

import json

import pytest
from finished_runs import finished_autotune
from latency_fakes import quantized_faster

CHANGED = "The calibration data changed since: autotune again (Shift+F9)."


@pytest.fixture(autouse=True)
def _latency_scripted(monkeypatch):
    quantized_faster(monkeypatch)  # every unit quantized, whatever this machine measures


def test_a_curve_of_other_calibration_rows_is_out_of_date_and_stays_so_when_reopened(
    qtbot, window, open_file, corpus, tmp_path, save_prompts
):
    win, panel = window, window.autotune_panel
    res = finished_autotune(qtbot, win, open_file, corpus)
    measured = len(res["curve"])
    assert measured >= 2 and CHANGED not in panel.summary.text()

    win.calibration.samples.setValue(5)  # other rows: other ranges, other metrics
    assert panel.summary.text().endswith(CHANGED)
    win.calibration.samples.setValue(8)  # the rows it was measured on
    assert CHANGED not in panel.summary.text()

    win.calibration.samples.setValue(5)
    project = win.save_project_to(tmp_path / "tuned.wbproj")
    assert json.loads(project.read_text())["results"]["autotune"]["on_current_data"] is False
    open_file(win, corpus / "digits_cnn/model_opset13.onnx")  # another document: no curve
    assert panel.final is None
    open_file(win, project)
    assert len(panel.points) == measured and panel.summary.text().endswith(CHANGED)
    win.calibration.samples.setValue(8)  # not the rows it was measured on either: other than the saved ones
    assert panel.summary.text().endswith(CHANGED)


def test_a_curve_of_the_current_rows_is_saved_as_it_is_shown(qtbot, window, open_file, corpus, tmp_path):
    win, panel = window, window.autotune_panel
    finished_autotune(qtbot, win, open_file, corpus)
    project = win.save_project_to(tmp_path / "tuned.wbproj")
    assert json.loads(project.read_text())["results"]["autotune"] == win.doc.autotune
    assert "on_current_data" not in win.doc.autotune
    open_file(win, project)
    assert panel.final is not None and CHANGED not in panel.summary.text()


def test_a_curve_of_other_eval_settings_says_what_it_was_measured_with(
    qtbot, window, open_file, corpus, tmp_path
):
    """The panel's line above the curve names the Evaluate panel's settings the next run uses: after a new sample
    count it read "cosine on eval.npz, 8 samples" above a curve measured on 16, nothing saying so."""
    win, panel = window, window.autotune_panel
    finished_autotune(qtbot, win, open_file, corpus)
    settings = win.evaluate_panel.settings
    other = (
        " Measured with cosine on eval.npz, 16 samples; the Evaluate panel's settings changed since: autotune "
        "again (Shift+F9)."
    )
    assert other not in panel.summary.text()
    settings.samples.setValue(8)
    assert panel.uses.text().endswith("cosine on eval.npz, 8 samples.") and panel.summary.text().endswith(
        other
    )
    settings.samples.setValue(16)
    assert other not in panel.summary.text()
    settings.set_metric("top1")
    assert panel.summary.text().endswith(other)
    settings.set_metric("cosine")
    project = win.save_project_to(tmp_path / "tuned.wbproj")
    open_file(win, project)  # its own settings back: current
    assert panel.final is not None and other not in panel.summary.text()
    settings.samples.setValue(0)  # all samples
    assert panel.summary.text().endswith(other)
