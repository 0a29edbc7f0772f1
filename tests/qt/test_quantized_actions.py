"""With an already-quantized file open, the commands that need a float model are off with the
reason, and the ones that have a quantized-file meaning do that instead of starting and failing."""

from __future__ import annotations

import onnx
import pytest
from bundled_example import EXAMPLE
from PySide6.QtWidgets import QFileDialog


@pytest.fixture
def qdq_file(example_qdq_file):
    """Our QDQ export (cpu-u8s8) of the bundled digits_cnn example."""
    return example_qdq_file


def test_report_is_off_and_compare_asks_for_the_float_model(window, open_file, qdq_file, monkeypatch, dialogs):
    win = window
    open_file(win, qdq_file)
    # the report quantizes the open model: it was enabled, started and failed "already quantized"
    assert not win.act_export_report.isEnabled()
    assert win.act_export_report.toolTip().startswith(f"Disabled: {qdq_file.name} is already quantized")
    assert win.act_diff.isEnabled() and "pick the float model it was made from" in win.act_diff.toolTip()
    asked = []
    monkeypatch.setattr(QFileDialog, "getOpenFileName",
                        staticmethod(lambda parent, title, *a, **k: asked.append(title) or ("", "")))
    win.act_diff.trigger()  # Ctrl+Shift+D: the Errors dock's "Compare with its float model..."
    assert asked == [f"Float model of {qdq_file.name}"]
    assert dialogs == []


def test_recipe_panel_is_off_with_the_inspector_note(window, open_file, qdq_file):
    win = window
    open_file(win, qdq_file)
    panel = win.recipe_panel
    # it stayed editable: a preset change and an exclude rule were undo entries, and its summary
    # ("4 node units quantized, 8 activation tensors to calibrate") described a float model's plan
    assert not panel.note.isHidden() and panel.note.text() == win.inspector.recipe_note.text()
    assert panel.note.text().startswith("Recipe controls are hidden: this model is already quantized")
    assert panel.controls.isHidden() and not panel.controls.isEnabled()
    panel.preset.setCurrentText("s8s8")
    panel.kind.setCurrentText("op_type")
    panel.key.setText("Conv")
    panel.rule_exclude.setChecked(True)
    panel.add.click()
    assert win.doc.undo_stack.count() == 0
    assert win.doc.recipe.preset == "cpu-u8s8" and win.doc.recipe.rules == []
    open_file(win, EXAMPLE / "digits_cnn.onnx")  # a float model: the controls come back
    assert panel.note.isHidden() and not panel.controls.isHidden() and panel.controls.isEnabled()


def test_hints_name_what_works_on_a_quantized_file(window, open_file, qdq_file, dialogs):
    win = window
    open_file(win, qdq_file)
    assert not win.act_calibrate.isEnabled()
    # both pointed to F5, which is off for this file; off too, they say what works instead
    for act in (win.act_color_sqnr, win.act_color_sensitivity, win.act_export_node_data):
        assert not act.isEnabled() and "Ctrl+Shift+D" in act.toolTip() and "F5" not in act.toolTip()
    win.color_by_sqnr()  # called all the same (the Errors dock's button is hidden for this file)
    assert win.status_label.text() == ("No SQNR for an already-quantized file: compare it with its float model "
                                       "(View > Compare Float vs Quantized, Ctrl+Shift+D) for per-edge SQNR.")
    win.color_by_sensitivity()
    assert "F7" not in win.status_label.text() and "Ctrl+Shift+D" in win.status_label.text()
    win.export_node_data_dialog()
    assert len(dialogs) == 1 and "F5" not in dialogs.texts()
    assert f"No per-unit figures: {qdq_file.name} is already quantized" in dialogs.texts()
    assert "compare it with its float model (View > Compare Float vs Quantized, Ctrl+Shift+D)" in dialogs.texts()
    dialogs.clear()


def test_search_for_folded_qdq_names_the_shortcut(qtbot, window, open_file, qdq_file):
    win = window
    open_file(win, qdq_file)
    proto = onnx.load(str(qdq_file))
    dq = sum(n.op_type == "DequantizeLinear" for n in proto.graph.node)
    assert dq == 15  # 7 activation pairs and 8 weight / bias DQs, all folded by default
    win.search.setText("DequantizeLinear")
    assert win.run_search() == []
    # it said "No node matches 'DequantizeLinear'." although the file has 15
    assert win.status_label.text() == (
        "No drawn node matches 'DequantizeLinear', but 15 Q/DQ nodes folded into the edge badges and node tags "
        "do; View > Show Q/DQ as Nodes (Ctrl+Shift+Q) draws them, then search again.")
    win.search.setText("NoSuchOp")
    win.run_search()
    assert win.status_label.text() == "No node matches 'NoSuchOp'."
    with qtbot.waitSignal(win.canvas.layoutReady, timeout=300_000):
        win.act_show_qdq.trigger()  # Ctrl+Shift+Q
    win.search.setText("DequantizeLinear")
    assert len(win.run_search()) == dq
