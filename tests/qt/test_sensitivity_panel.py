"""Sensitivity in the app (pytest-qt, offscreen) on digits_cnn.

Run the sweep from the Run menu action (a child process) -> the table lists every unit worst
first, the same ranking and figures as the core computes headless -> a mouse click on the worst
row selects that node on the canvas and in the inspector -> the canvas is coloured by the chosen
figure -> "Apply suggestion" excludes the suggested units (one undo command) -> Edit > Undo gives
back the exact original recipe.
"""

from __future__ import annotations

import math

import pytest
from latency_fakes import quantized_faster
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence

from workbench.core import api
from workbench.core.analysis.executors import InlineExecutor
from workbench.core.analysis.sensitivity import sensitivity_sweep
from workbench.core.calibration.calibrate import CalibrationResult
from workbench.qt.canvas.colors import error_color
from workbench.qt.runs import SWEEP_SAMPLES, SWEEP_TOP
from workbench.qt.sweep_colours import colour_value

DIGITS = "digits_cnn/model_opset17.onnx"


def headless(win):
    """The same sweep in this process, from the window's recipe and calibration cache."""
    model = api.open_model(win.doc.model_path)
    calib = CalibrationResult.from_json(win.doc.calibration)
    result = api.quantize(model, win.doc.recipe, calibration=calib)
    return sensitivity_sweep(model, result, win.doc.data, samples=SWEEP_SAMPLES, top=SWEEP_TOP,
                             executor=InlineExecutor())


def test_sweep_click_colour_apply_undo(qtbot, window, open_file, corpus, tmp_path):
    open_file(window, corpus / DIGITS)
    assert window.act_sensitivity.shortcut() == QKeySequence("F7")
    assert window.act_sensitivity in window.menuBar().actions()[-2].menu().actions()  # Run menu
    assert not window.act_apply_suggestion.isEnabled()
    assert not window.docks["Sensitivity"].isVisible()  # appears with the first sweep
    original = window.doc.recipe.model_dump()
    with qtbot.waitSignal(window.runs.finished, timeout=540_000):
        window.act_sensitivity.trigger()
    assert window.doc.sensitivity is not None, window.status_label.text()
    assert window.docks["Sensitivity"].isVisible()
    assert window.docks["Errors"] in window.tabifiedDockWidgets(window.docks["Sensitivity"])

    # the table: every planned unit, worst first, same figures as the core headless
    ref = headless(window)
    panel = window.sensitivity
    table = panel.table
    units = [u for u in window.doc.plan.units.values() if not u.excluded]
    assert table.rowCount() == len(ref.rows) == len(units) == 5
    assert [panel.node_at(i) for i in range(table.rowCount())] == [r.node for r in ref.rows]
    worst = ref.rows[0]
    shown = window.doc.sensitivity.rows[0]
    assert shown.node == worst.node
    for key in ("only_quant_db", "only_float_db", "local_db", "gain_db"):
        assert getattr(shown, key) == pytest.approx(getattr(worst, key), abs=1e-6)
    assert window.doc.sensitivity.all_quant_db == pytest.approx(ref.all_quant_db, abs=1e-6)
    column = [r.only_quant_db for r in window.doc.sensitivity.rows]
    assert column == sorted(column) and all(math.isfinite(v) for v in column)

    # sorting by another column re-orders the rows by value
    table.sortItems(5, Qt.SortOrder.DescendingOrder)  # gain if float, largest first
    best_gain = max(ref.rows, key=lambda r: r.gain_db).node
    assert panel.node_at(0) == best_gain
    table.sortItems(2, Qt.SortOrder.AscendingOrder)

    # a real click on the worst row selects the node on the canvas and in the inspector
    rect = table.visualItemRect(table.item(0, 0))
    with qtbot.waitSignals([window.canvas.selectionChangedNames, window.runs.histogramReady], timeout=540_000):
        qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert window.canvas.selected_nodes() == [worst.node]
    assert window.inspector.nodes == [worst.node]

    # the canvas is coloured by the chosen figure's value (0.25 dB steps): the SQNR bands, the gain's own
    assert window.color_mode.currentText() == "sensitivity"  # the box names the sweep's colours
    for r in ref.rows:
        assert window.canvas.node_color(r.node) == error_color(round(colour_value("only_quant_db", r.only_quant_db) * 4) / 4)
    panel.figure.setCurrentIndex(panel.figure.findData("gain_db"))
    for r in ref.rows:
        assert window.canvas.node_color(r.node) == error_color(round(colour_value("gain_db", r.gain_db) * 4) / 4)

    # apply the suggestion: one undoable edit excluding exactly the suggested units
    suggestion = ref.suggestion()
    assert suggestion and window.doc.suggestion == suggestion
    assert window.act_apply_suggestion.isEnabled()
    depth = window.doc.undo_stack.count()
    window.act_apply_suggestion.trigger()
    assert window.doc.undo_stack.count() == depth + 1
    for node in suggestion:
        assert window.doc.recipe.overrides[node].exclude is True
        assert window.doc.plan.units[node].excluded
    assert set(window.doc.recipe.overrides) == set(suggestion)
    # the table marks the applied units and the action is spent until the recipe changes back
    panel = window.sensitivity
    marked = {panel.node_at(r) for r in range(panel.table.rowCount())
              if "Kept in float" in panel.table.item(r, 0).toolTip()}
    assert marked == set(suggestion) and panel.pending() == []
    assert not window.act_apply_suggestion.isEnabled() and "applied" in panel.summary.text()

    # Edit > Undo restores the recipe exactly; Redo re-applies it
    window.act_undo.trigger()
    assert window.doc.recipe.model_dump() == original
    assert not any(window.doc.plan.units[n].excluded for n in suggestion)
    assert panel.pending() == suggestion and window.act_apply_suggestion.isEnabled()
    window.act_redo.trigger()
    assert all(window.doc.recipe.overrides[n].exclude for n in suggestion)

    # the sweep is saved in the project and shown again when it is reopened (applied rows marked)
    from workbench.qt.app_window import MainWindow

    proj = window.save_project_to(tmp_path / "sweep.wbproj")
    win2 = MainWindow()
    qtbot.addWidget(win2)
    try:
        open_file(win2, proj)
        qtbot.waitUntil(lambda: win2.sensitivity.table.rowCount() == panel.table.rowCount(), timeout=300_000)
        rows = lambda p: [(p.node_at(r), p.table.item(r, 2).text()) for r in range(p.table.rowCount())]  # noqa: E731
        assert rows(win2.sensitivity) == rows(panel)
        assert win2.doc.suggestion == suggestion and win2.sensitivity.pending() == []
        assert not win2.act_apply_suggestion.isEnabled()
    finally:
        win2.close()


def test_sweep_cancel_keeps_previous_state(qtbot, window, open_file, corpus):
    """Esc during the sweep: the job stops, nothing is adopted, the app stays usable."""
    open_file(window, corpus / DIGITS)
    cancelled: list = []
    window.runs.cancelled.connect(cancelled.append)
    with qtbot.waitSignal(window.runs.finished, timeout=540_000):
        window.start_sensitivity()
        window.act_cancel.trigger()
    assert cancelled == ["sensitivity"]
    assert window.doc.sensitivity is None and window.sensitivity.table.rowCount() == 0
    assert window.act_sensitivity.isEnabled() and not window.act_apply_suggestion.isEnabled()


@pytest.mark.slow
def test_sweep_executor_setting_runs_the_sweep_on_ray(qtbot, window, open_file, corpus, monkeypatch, dialogs):
    """Run > Sweep Executor... keeps the choice; the next sweep runs its tasks on a private local Ray
    instance and shows the same table as the core inline; a bad choice is refused by name."""
    from workbench.qt import executor_dialog, settings

    monkeypatch.setattr(executor_dialog, "ask_executor", lambda *a, **k: "dask")
    assert window.choose_executor() is None and settings.executor() == "threads"
    assert [(k, title) for k, title, text in dialogs] == [("critical", "Sweep executor")]
    assert "Unknown executor 'dask'" in dialogs[0][2]
    dialogs.clear()
    monkeypatch.setattr(executor_dialog, "ask_executor", lambda *a, **k: "ray")
    assert window.act_sweep_executor in window.menuBar().actions()[-2].menu().actions()  # Run menu
    assert window.choose_executor() == "ray" and settings.executor() == "ray"
    open_file(window, corpus / DIGITS)
    with qtbot.waitSignal(window.runs.finished, timeout=540_000):
        window.act_sensitivity.trigger()
    assert window.doc.sensitivity is not None, window.status_label.text()
    ref = headless(window)
    assert [(r.node, r.only_quant_db, r.only_float_db) for r in window.doc.sensitivity.rows] == \
        [(r.node, r.only_quant_db, r.only_float_db) for r in ref.rows]


def test_sqnr_colours_after_a_sweep_get_the_sqnr_title(qtbot, window, open_file, corpus, monkeypatch):
    """After a sweep, F5 coloured the nodes by SQNR under the title "Sensitivity: Only quantized (dB)",
    and the next model kept that title while its Sensitivity dock said "No sweep yet"."""
    quantized_faster(monkeypatch)  # digits_cnn quantized whatever this machine measures (latency_fakes)
    open_file(window, corpus / DIGITS)
    with qtbot.waitSignal(window.runs.finished, timeout=540_000):
        window.act_sensitivity.trigger()
    assert window.canvas.error_label().startswith("Sensitivity: ")
    # the colours are the values on the SQNR bands, the legend those bands and that it is by value
    from workbench.qt.canvas.legend import legend_entries
    _title, rows, notes = legend_entries(window.canvas)
    assert rows[0][0] == "<= 5 dB" and rows[-2][0] == ">= 45 dB" and rows[-1][0] == "no value"
    assert any("by the value" in n for n in notes)
    worst = min(window.doc.sensitivity.rows, key=lambda r: r.only_quant_db)
    assert window.canvas.node_color(worst.node) == error_color(round(worst.only_quant_db * 4) / 4)
    with qtbot.waitSignal(window.runs.finished, timeout=540_000):
        window.act_calibrate.trigger()
    qtbot.waitUntil(lambda: window.canvas.error_label() == "SQNR (dB)", timeout=300_000)
    assert legend_entries(window.canvas)[1][0][0] == "<= 5 dB"  # SQNR colours: the dB stops again
    window.color_by_sensitivity()
    open_file(window, corpus / "digits_mlp" / "model_opset17.onnx")
    assert window.canvas.error_label() == "SQNR (dB)"


def test_a_sweep_of_an_earlier_recipe_is_marked_and_its_suggestion_withheld(qtbot, window, open_file, corpus):
    """A recipe edit (or other calibration rows) after the sweep left its figures, colours and
    "Apply suggestion" as if current; applying its own suggestion keeps it current."""
    from workbench.qt.commands import push_edit, set_exclude
    from workbench.qt.sensitivity_panel import STALE

    open_file(window, corpus / DIGITS)
    with qtbot.waitSignal(window.runs.finished, timeout=540_000):
        window.act_sensitivity.trigger()
    panel = window.sensitivity
    assert window.doc.suggestion and not panel.stale and window.act_apply_suggestion.isEnabled()
    other = next(r.node for r in window.doc.sensitivity.rows if r.node not in window.doc.suggestion)
    push_edit(window.doc, set_exclude(window.doc.recipe, [other], True), "Keep one unit in float")
    assert panel.stale and panel.summary.text().startswith(STALE)
    assert not window.act_apply_suggestion.isEnabled() and not panel.apply_button.isEnabled()
    window.act_undo.trigger()
    assert not panel.stale and window.act_apply_suggestion.isEnabled()
    window.act_apply_suggestion.trigger()  # the sweep's own suggestion: still the sweep's recipe
    assert not panel.stale and "applied" in panel.summary.text()
    window.act_undo.trigger()
    window.calibration.samples.setValue(7)  # other rows than the sweep's
    assert panel.stale and not window.act_apply_suggestion.isEnabled()


def test_theme_switch_recolours_the_rows(qtbot):
    """Filled in the light theme, the table kept near-black text when the dark theme came (rows carried a
    fixed foreground): normal rows now take the palette's text colour, greyed (float) rows are re-faded."""
    from PySide6.QtGui import QColor, QPalette

    from workbench.core.analysis.sensitivity import SweepResult, UnitSensitivity
    from workbench.qt.sensitivity_panel import SensitivityPanel

    panel = SensitivityPanel()
    qtbot.addWidget(panel)
    rows = [UnitSensitivity("a", "Conv", 30.0, 40.0, 31.0, 1.0), UnitSensitivity("b", "Conv", 35.0, 39.5, 36.0, 0.5)]
    panel.set_result(SweepResult(rows, 39.0, 8, 4))
    panel.set_float({"b"})
    dark = QPalette()
    dark.setColor(QPalette.ColorRole.WindowText, QColor("#eeeeee"))
    dark.setColor(QPalette.ColorRole.Text, QColor("#eeeeee"))
    panel.setPalette(dark)
    row = {panel.node_at(r): r for r in range(panel.table.rowCount())}
    assert panel.table.item(row["a"], 2).data(Qt.ItemDataRole.ForegroundRole) is None  # follows the theme
    faded = panel.table.item(row["b"], 2).foreground().color()
    assert (faded.red(), faded.green(), faded.blue(), faded.alpha()) == (0xee, 0xee, 0xee, 110)


def test_no_empty_table_before_a_sweep(qtbot):
    """Before a sweep the panel showed an empty table (header only) under 'No sweep yet', taking the
    dock's height; now only the line that says what to do, and the table once rows arrive."""
    from workbench.core.analysis.sensitivity import SweepResult, UnitSensitivity
    from workbench.qt.sensitivity_panel import SensitivityPanel

    panel = SensitivityPanel()
    qtbot.addWidget(panel)
    panel.resize(700, 400)
    panel.show()
    assert not panel.table.isVisible() and panel.summary.text() == "No sweep yet: Run > Sensitivity Sweep (F7)."
    panel.set_result(SweepResult([UnitSensitivity("a", "Conv", 30.0, 40.0, 31.0, 1.0)], 39.0, 8, 2))
    assert panel.table.isVisible() and panel.table.rowCount() == 1
    panel.set_result(None)
    assert not panel.table.isVisible()

