"""The actions on results are off until there is a result to act on, and say what turns them on.

Export Model Explorer Data, Colour by SQNR, Colour by Sensitivity and Open Exported Model were enabled
on a model just opened: used, each explained itself in a message ("No SQNR yet: calibrate first (F5)").
Now each is off until its result is shown (a calibration, a sweep, an export), its status tip and
tooltip say what to do, and opening another model turns them off again; their shortcuts do nothing
while they are off (offscreen).
"""

from __future__ import annotations

from latency_fakes import quantized_faster
from PySide6.QtCore import Qt
from test_app_flow import run_job

from workbench.qt.app_window import QuantModelTab

NEEDS = {"export_node_data": "F5", "color_sqnr": "F5", "color_sensitivity": "F7", "open_export": "Ctrl+E"}


def _acts(win) -> dict:
    return {name: getattr(win, f"act_{name}") for name in NEEDS}


def _assert_all_off(win) -> None:
    for name, act in _acts(win).items():
        assert not act.isEnabled(), name
        assert act.toolTip().endswith(".") and act.statusTip().endswith(act.toolTip()), name


def test_result_actions_follow_the_results(qtbot, window, open_file, corpus, tmp_path, monkeypatch):
    quantized_faster(monkeypatch)  # digits_cnn quantized whatever this machine measures (latency_fakes)
    win = window
    _assert_all_off(win)  # no model yet
    assert win.act_color_sqnr.toolTip() == "Open a model first (File > Open, Ctrl+O)."
    open_file(win, corpus / "digits_cnn/model_opset17.onnx")
    win.activateWindow()
    _assert_all_off(win)
    assert all(NEEDS[name] in act.toolTip() for name, act in _acts(win).items())
    assert win.act_color_sqnr.toolTip() == "Calibrate first (Run > Calibrate, F5): the per-unit SQNR is measured there."
    assert win.act_open_export.statusTip() == ("Show the last exported model as it is (dtypes, Q/DQ badges, scales) "
                                               "in a tab. Export the model first (File > Export, Ctrl+E).")
    status = win.status_label.text()
    for key in ("Ctrl+Shift+E", "Ctrl+Shift+V", "Ctrl+Shift+X"):  # off: no "No SQNR yet" message path
        qtbot.keyClick(win, key[-1], Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert win.status_label.text() == status and win.tabs.count() == 1

    win.calibration.samples.setValue(8)
    win.calibration.analysis_samples.setValue(8)
    state, res = run_job(qtbot, win, win.act_calibrate.trigger, timeout=300_000)
    assert state == "succeeded", res
    acts = _acts(win)
    assert acts["color_sqnr"].isEnabled() and acts["export_node_data"].isEnabled()
    assert acts["color_sqnr"].toolTip() == "Colour by SQNR"  # the default: the action's text
    assert acts["color_sqnr"].statusTip() == "Colour the model's graph by the per-unit SQNR (the Graph tab)"
    assert not acts["color_sensitivity"].isEnabled() and not acts["open_export"].isEnabled()
    assert "F7" in acts["color_sensitivity"].toolTip()

    state, res = run_job(qtbot, win, win.act_sensitivity.trigger, timeout=300_000)
    assert state == "succeeded", res
    assert acts["color_sensitivity"].isEnabled() and not acts["open_export"].isEnabled()

    state, res = run_job(qtbot, win, lambda: win.export_to(tmp_path / "digits.qdq.onnx"), timeout=300_000)
    assert state == "succeeded", res
    qtbot.waitUntil(lambda: not win.runs.busy, timeout=300_000)  # a re-measure after the export may follow
    assert acts["open_export"].isEnabled() and acts["color_sqnr"].isEnabled()
    qtbot.keyClick(win, "X", Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert isinstance(win.tabs.currentWidget(), QuantModelTab)  # the shortcut works once on
    for name in ("color_sqnr", "color_sensitivity"):  # the figures are of the model's graph
        act = acts[name]
        assert not act.isEnabled() and act.toolTip() == "Show the Graph tab first: the figures are of the model's graph."
    win.tabs.setCurrentIndex(0)
    assert acts["color_sqnr"].isEnabled() and acts["color_sensitivity"].isEnabled()

    with qtbot.waitSignal(win.canvas.layoutReady, timeout=300_000):
        win.start_new_project()  # File > New Project drops the results
    _assert_all_off(win)
    state, res = run_job(qtbot, win, win.act_calibrate.trigger, timeout=300_000)
    assert state == "succeeded", res
    assert acts["color_sqnr"].isEnabled()

    open_file(win, corpus / "digits_mlp/model_opset17.onnx")  # another model: its results are none yet
    _assert_all_off(win)
    assert win.act_open_export.toolTip() == "Export the model first (File > Export, Ctrl+E)."


def test_an_already_quantized_file_says_what_works_instead(window, open_file, example_qdq_file):
    win = window
    open_file(win, example_qdq_file)
    for name in ("export_node_data", "color_sqnr", "color_sensitivity"):
        act = getattr(win, f"act_{name}")
        assert not act.isEnabled() and "Ctrl+Shift+D" in act.toolTip() and "F5" not in act.toolTip(), name
    assert not win.act_open_export.isEnabled()
