"""Cost panel in the app (pytest-qt, offscreen) on the bundled digits_cnn example.

View > Cost shows the dock and starts the float-cost job (worker thread) -> the table and totals
equal :func:`workbench.core.analysis.cost.model_cost` with the plan's bit widths (601,600 MACs) -> excluding
the first Conv through an undoable recipe edit makes its quantized BOPs the float figure
(MACs x 32 x 32) and changes the total by exactly that difference -> Edit > Undo restores it ->
a click on a row selects the node on the canvas.
"""

from __future__ import annotations

from bundled_example import EXAMPLE_MODEL
from PySide6.QtCore import Qt

from workbench.core import api
from workbench.core.analysis.cost import FLOAT_BITS, bits_from_configs, data_sample, model_cost
from workbench.qt.commands import push_edit, set_exclude


def core_report(recipe):
    """The same figures headless, as ``workbench-cli cost`` computes them."""
    model = api.open_model(EXAMPLE_MODEL)
    plan = api.plan(model, recipe)
    return model_cost(model.proto, bits_from_configs({u.node: u.config for u in plan.units.values()
                                                      if not u.excluded}))


def cell(panel, node: str, column: int) -> str:
    return panel.table.item(panel.row_of(node), column).text()


def test_cost_totals_exclude_undo_click(qtbot, window, open_file):
    open_file(window, EXAMPLE_MODEL)
    panel, dock = window.cost, window.docks["Cost"]
    assert not dock.isVisible() and panel.job is None  # nothing computed while hidden
    view_menu = window.menuBar().actions()[2].menu()
    assert dock.toggleViewAction() in view_menu.actions()
    with qtbot.waitSignal(panel.updated, timeout=540_000):
        dock.toggleViewAction().trigger()
    assert dock.isVisible()

    ref = core_report(window.doc.recipe)
    rep = panel.report
    assert rep.macs == ref.macs == 601_600
    assert (rep.bops, rep.bops_float, rep.memory_bits, rep.memory_float_bits) == \
        (ref.bops, ref.bops_float, ref.memory_bits, ref.memory_float_bits)
    assert rep.bops < rep.bops_float
    assert f"{601_600:,} MACs" in panel.summary.text()
    assert panel.table.rowCount() == len(ref.rows) == 4

    conv = next(r for r in ref.rows if r.op_type == "Conv")
    shown = next(r for r in rep.rows if r.node == conv.node)
    assert shown.macs == conv.macs and shown.bops == conv.bops
    assert cell(panel, conv.node, 2) == f"{conv.macs:,}"
    assert cell(panel, conv.node, 5) == f"{conv.bops:,}"
    assert conv.weight_bits < FLOAT_BITS and conv.activation_bits < FLOAT_BITS

    # exclude the first Conv (undoable edit): its BOPs go back to the float figure
    push_edit(window.doc, set_exclude(window.doc.recipe, [conv.node], True), "Keep in float")
    assert window.doc.plan.units[conv.node].excluded
    after = next(r for r in panel.report.rows if r.node == conv.node)
    assert after.bops == after.bops_float == conv.macs * FLOAT_BITS * FLOAT_BITS
    assert cell(panel, conv.node, 3) == "32/32"
    assert cell(panel, conv.node, 5) == f"{conv.macs * 32 * 32:,}"
    assert panel.report.bops == rep.bops - conv.bops + conv.macs * 32 * 32
    assert panel.report.bops == core_report(window.doc.recipe).bops
    assert panel.report.macs == 601_600

    # Edit > Undo restores the quantized figures
    window.act_undo.trigger()
    assert panel.report.bops == rep.bops
    assert cell(panel, conv.node, 5) == f"{conv.bops:,}"

    # a click on the Conv's row selects it on the canvas
    table = panel.table
    rect = table.visualItemRect(table.item(panel.row_of(conv.node), 0))
    with qtbot.waitSignal(window.canvas.selectionChangedNames, timeout=300_000):
        qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert window.canvas.selected_nodes() == [conv.node]


def test_cost_panel_counts_at_the_calibration_shapes_without_unknowns(qtbot, window, open_file, corpus):
    """silero_vad hides every layer in If bodies chosen by its sample-rate input: at the calibration
    data's sample (picked from the model's folder) every row has a MAC count."""
    folder = corpus / "silero_vad"
    open_file(window, folder / "silero_vad.onnx")
    assert window.doc.data["path"].endswith("calib.npz")
    panel = window.cost
    with qtbot.waitSignal(panel.updated, timeout=540_000):
        window.docks["Cost"].toggleViewAction().trigger()
    macs = [panel.table.item(i, 2).text() for i in range(panel.table.rowCount())]
    assert macs and "?" not in macs
    flat = api.open_model(folder / "silero_vad_16k_op15.onnx")  # the same network, layers in the main graph
    assert panel.report.macs == model_cost(flat.proto, input_values=data_sample(flat, folder / "calib.npz")).macs
    assert "from the data" in panel.summary.text()
