"""The report leaves out an autotune curve measured on other calibration rows or from another recipe, as it leaves
out such a sensitivity sweep (the page then says it holds no curve).

Found by a bug hunt: after Autotune on digits_cnn, a new calibration sample count (other ranges, so other metrics
for every point) or a recipe edit none of the curve's points holds, File > Export Report still drew the curve as
this recipe's, nothing saying it was out of date."""

from __future__ import annotations

import pytest
from finished_runs import finished_autotune
from latency_fakes import quantized_faster
from report_sections import report_section

from workbench.qt.commands import push_edit

NO_CURVE = "No autotune curve in this report"


@pytest.fixture(autouse=True)
def _latency_scripted(monkeypatch):
    quantized_faster(monkeypatch)  # every unit quantized, whatever this machine measures


def test_a_curve_of_other_rows_or_another_recipe_is_left_out_of_the_report(qtbot, window, open_file, corpus, tmp_path):
    win, panel = window, window.autotune_panel
    finished_autotune(qtbot, win, open_file, corpus)
    assert NO_CURVE not in report_section(qtbot, win, tmp_path / "current.html", "autotune")

    win.calibration.samples.setValue(5)  # other rows: other ranges, other metrics
    assert NO_CURVE in report_section(qtbot, win, tmp_path / "other_rows.html", "autotune")
    win.calibration.samples.setValue(8)  # its rows again
    assert NO_CURVE not in report_section(qtbot, win, tmp_path / "rows_again.html", "autotune")

    edited = win.doc.recipe.model_copy(deep=True)
    edited.reduce_range = True  # a recipe none of the curve's points holds
    assert all(e["recipe"] != edited.to_json() for e in panel.points)
    assert push_edit(win.doc, edited, "Reduce range")
    assert NO_CURVE in report_section(qtbot, win, tmp_path / "other_recipe.html", "autotune")
    win.doc.undo_stack.undo()
    assert NO_CURVE not in report_section(qtbot, win, tmp_path / "undone.html", "autotune")
    index = next(i for i, e in enumerate(panel.points) if e["recipe"] != win.doc.recipe.to_json())
    assert win.evaluation.apply_point(index)  # a point of the curve: still its recipes
    assert NO_CURVE not in report_section(qtbot, win, tmp_path / "applied.html", "autotune")
