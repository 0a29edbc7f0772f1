"""The Problems dock after an undo past a calibration: the run's issues no longer match the recipe, so they are
marked out of date and left out of the count (it listed the undone int16 edit's conflict "From: quantize", and
the status bar counted it, while the Errors dock said "Out of date")."""

from __future__ import annotations

import re
import shutil
from collections import Counter

from bundled_example import EXAMPLE
from latency_fakes import quantized_faster
from test_app_flow import run_job

from workbench.qt.problems_panel import STALE_SOURCE

CONFLICT = "another unit reading it asked for"


def _example(qtbot, win, open_file, tmp_path) -> None:
    for name in ("digits_cnn.onnx", "digits_cnn_calib.npz"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    open_file(win, tmp_path / "digits_cnn.onnx")
    win.calibration.samples.setValue(16)
    win.calibration.analysis_samples.setValue(8)


def test_an_undo_after_f5_marks_the_runs_conflict_out_of_date_and_uncounts_it(qtbot, window, open_file, tmp_path,
                                                                              monkeypatch):
    quantized_faster(monkeypatch)  # measured, the example's first Conv and AveragePool are kept float (a latency edit)
    win, panel = window, window.problems
    _example(qtbot, win, open_file, tmp_path)
    win.calibration.choose_first.setChecked(False)  # the recipe as it is (the choice would run around the edit)
    win.focus_node("/f/f.3/Conv")
    win.inspector.roles["activation"].dtype.setCurrentText("int16")  # the user's edit
    state, res = run_job(qtbot, win, win.act_calibrate.trigger, timeout=300_000)
    assert state == "succeeded", res
    row = panel.row_of(CONFLICT)
    assert row >= 0 and {s for s, _i in panel.problems} == {"plan"}  # the run's copies are the plan's: listed once
    n = len(panel.problems)
    assert n == len(win.doc.plan.issues) == 2  # the conflict, and the MaxPool reading int16 on a grid of its own
    assert win.problems_link.text().endswith(">2 notes</a>")  # no errors or warnings

    win.act_undo.trigger()  # back to the preset: the figures are out of date
    assert not win.doc.results_current and not win.doc.plan.issues
    assert [s for s, _i in panel.problems] == [STALE_SOURCE] * n and panel.row_of(CONFLICT) >= 0
    assert len(panel.items) == n and panel.item_of(0).text(3) == STALE_SOURCE
    assert "Calibrate (F5)" in panel.item_of(0).toolTip(2)
    assert panel.summary.text() == ("No problems with the current recipe. 2 rows from the last calibration are out "
                                    "of date (made with another recipe or other data): F5 calibrates again.")
    assert win.problems_link.text() == ""  # the status bar counts the current recipe's problems: none

    win.act_redo.trigger()  # the recipe the run was made with: current again
    assert [s for s, _i in panel.problems] == ["plan"] * n
    assert win.problems_link.text().endswith(">2 notes</a>")  # no errors or warnings


def test_other_calibration_rows_mark_the_runs_data_warnings_out_of_date(qtbot, window, open_file, cases, monkeypatch):
    """Case 05's NaN/Inf warnings are of the rows calibrated: another sample count leaves them out of date."""
    quantized_faster(monkeypatch)  # digits_cnn quantized whatever this machine measures (latency_fakes)
    win, panel = window, window.problems
    open_file(win, cases / "05_nan_inf_calibration.onnx")
    win.calibration.set_data_spec({"kind": "npz", "path": str(cases / "05_nan_inf_calibration.npz")}, None)
    state, res = run_job(qtbot, win, win.act_calibrate.trigger, timeout=120_000)
    assert state == "succeeded", res
    plan_keys = {(i.node, i.message) for i in win.doc.plan.issues}
    warnings = [i for i in win.doc.result_issues if (i.node, i.message) not in plan_keys]
    # sample 2 and 4 hold NaN/Inf: the data's line and the line of the 2 tensors they reach
    assert len(warnings) == 2 and panel.out_of_date == 0
    counted = len(panel.problems)
    assert _shown(win) == _kinds(panel.problems) and "2 warnings" in _shown(win)  # each warning a problem

    win.calibration.samples.setValue(3)  # other rows: the warnings were of the rows calibrated before
    assert not win.doc.results_current
    assert len(panel.problems) == counted and panel.out_of_date == 2
    assert [s for s, _i in panel.problems[-2:]] == [STALE_SOURCE] * 2
    assert {i.message for _s, i in panel.problems[-2:]} == {i.message for i in warnings}
    assert _shown(win) == _kinds(panel.problems[:-2]) and "warning" not in _shown(win)  # the current rows have none


def _shown(win) -> str:
    """The status bar link's words ("" when it is hidden)."""
    return re.sub("<[^>]*>", "", win.problems_link.text())


def _kinds(problems) -> str:
    """"3 warnings, 2 notes": the kinds of ``problems`` ((source, PlanIssue)) there are, errors first."""
    n = Counter(str(i.severity) for _s, i in problems)
    words = (("error", n["error"]), ("warning", n["warning"]), ("note", n["info"]))
    return ", ".join(f"{k} {w}{'' if k == 1 else 's'}" for w, k in words if k)
