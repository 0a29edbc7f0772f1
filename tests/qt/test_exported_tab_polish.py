"""View > Open Exported Model: the tab opens readable, follows the window's colour choice, shows its
selection read-only in the Inspector, draws Constant nodes as weights, and takes the theme."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from bundled_example import EXAMPLE
from diff_app import open_exported_tab
from onnx import TensorProto, helper, numpy_helper
from PySide6.QtCore import QRectF
from PySide6.QtWidgets import QApplication

from workbench.core import api
from workbench.qt.canvas import colors
from workbench.qt.canvas.items import TEXT_SCALE
from workbench.qt.canvas.scene_data import NODE_W
from workbench.qt.quant_tab import MAX_DETAIL_LINES, NO_SQNR_HINT, READABLE_SCALE, QuantModelTab
from workbench.qt.theme import DARK, apply_theme


def _open_exported(qtbot, win, path: Path) -> QuantModelTab:
    """View > Open Exported Model on ``path`` (as if just exported), once its graph is shown."""
    return open_exported_tab(qtbot, win, path, settled=False)


def _visible(canvas) -> QRectF:
    return canvas.mapToScene(canvas.viewport().rect()).boundingRect()


def _first_drawn(d) -> QRectF:
    """The top-most collapsed group box or shown node of scene data ``d``."""
    rects = [d.rect(i) for i in range(len(d)) if d.shown(i)]
    rects += [d.group_rect(g) for g in d.group_ids if g in d.placement.collapsed]
    return min(rects, key=lambda r: (r.top(), r.left()))


@pytest.mark.slow
def test_exported_tab_opens_where_names_are_readable(qtbot, window, nudenet_qdq):
    win = window
    win.resize(1400, 900)
    tab = _open_exported(qtbot, win, nudenet_qdq)
    c = tab.canvas
    d = c._state.data
    # opened where node names, output shapes and Q/DQ badges are drawn (the canvas draws them from TEXT_SCALE)
    assert not c.overview_visible() and c.detailed_item_count() > 0
    assert c.transform().m11() == pytest.approx(READABLE_SCALE) and READABLE_SCALE >= TEXT_SCALE
    # the start of the graph (its top: the input and the first group) is in view, clear of the legend
    visible = _visible(c)
    box = _first_drawn(d)
    assert visible.contains(box)
    assert visible.top() <= d.bounds.top()
    legend = c.legend_overlay.geometry().translated(-c.viewport().pos())
    assert not c.mapToScene(legend).boundingRect().intersects(box)
    # the rest is a scroll away: the scroll range spans the whole graph
    assert c.sceneRect().contains(d.bounds)
    # Fit graph shows all of it, so small that nothing could be read: the tab did not open there
    tab.fit_button.click()
    assert _visible(c).contains(d.bounds)
    assert c.transform().m11() < 0.5 * READABLE_SCALE and c.overview_visible()


def _constant_chain(path: Path, links: int = 24) -> int:
    """x -> Conv (weight from a Constant) -> then ``links`` Add / Mul, each by a Constant; saved to
    ``path``. Returns the number of Constant nodes."""
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node(
            "Constant",
            [],
            ["w"],
            value=numpy_helper.from_array(rng.standard_normal((4, 4, 3, 3)).astype(np.float32), "w"),
        )
    ]
    nodes.append(helper.make_node("Conv", ["x", "w"], ["t0"], name="conv", pads=[1, 1, 1, 1]))
    for k in range(links):
        c = f"c{k}"
        nodes.append(
            helper.make_node(
                "Constant",
                [],
                [c],
                value=numpy_helper.from_array(rng.uniform(0.5, 1.5, (1, 4, 1, 1)).astype(np.float32), c),
            )
        )
        nodes.append(helper.make_node("Add" if k % 2 else "Mul", [f"t{k}", c], [f"t{k + 1}"], name=f"op{k}"))
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info(f"t{links}", TensorProto.FLOAT, [1, 4, 8, 8])],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return links + 1


def test_constant_nodes_are_drawn_as_weights(qtbot, tmp_path):
    """onnxruntime's quantize_static keeps a model's Constant nodes (and puts Q/DQ after them): the
    tab lifts them to initializers, as the main graph does, instead of a row of Constant boxes."""
    quantization = pytest.importorskip("onnxruntime.quantization")
    float_path, out = tmp_path / "chain.onnx", tmp_path / "chain.ort_qdq.onnx"
    _constant_chain(float_path)
    rows = np.random.default_rng(1).standard_normal((4, 1, 4, 8, 8)).astype(np.float32)

    class Reader(quantization.CalibrationDataReader):
        def __init__(self):
            self.rows = iter([{"x": r} for r in rows])

        def get_next(self):
            return next(self.rows, None)

    quantization.quantize_static(
        str(float_path), str(out), Reader(), quant_format=quantization.QuantFormat.QDQ
    )
    written = onnx.load(str(out))
    constants = sum(n.op_type == "Constant" for n in written.graph.node)
    assert constants >= 20  # onnxruntime kept them
    tab = QuantModelTab(out)
    qtbot.addWidget(tab)
    tab.resize(900, 700)
    tab.show()
    try:
        with qtbot.waitSignal(tab.canvas.layoutReady, timeout=300_000):
            pass
        drawn = tab.canvas._state.data.structure.op_types
        assert tab.canvas._state.data.bounds.width() < 4 * NODE_W  # one column, not a row of 25 boxes
        assert "Constant" not in drawn and drawn.count("Mul") == 12 and drawn.count("Add") == 12
        assert tab.lifted_constants == constants
        # the lifted values are the file's: the Constant before the last Add, as an initializer
        const = next(n for n in written.graph.node if n.op_type == "Constant" and n.output[0] == "c23")
        lifted = next(i for i in tab.proto.graph.initializer if i.name == "c23")
        assert np.array_equal(numpy_helper.to_array(lifted), numpy_helper.to_array(const.attribute[0].t))
        # and their Q/DQ pairs are read as the file holds them
        q = next(n for n in written.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == "c23")
        inits = {i.name: numpy_helper.to_array(i) for i in written.graph.initializer}
        assert (
            f"scale {float(inits[q.input[1]]):.6g}; zero_point {int(inits[q.input[2]])}"
            in api.format_param(tab.params[q.output[0]])
        )
    finally:
        tab.shutdown()


def test_exported_tab_follows_the_window_colour_choice(qtbot, window, open_file, example_qdq_file):
    win = window
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    assert win.color_mode.currentText() == "op"
    tab = _open_exported(qtbot, win, example_qdq_file)
    c = tab.canvas
    dtypes = api.summarize_quantization(onnx.load(str(example_qdq_file))).node_dtypes
    # opened in dtype colours, and the window's combo says so (the main graph shows its recipe's dtypes)
    assert c.color_mode() == "dtype" == win.color_mode.currentText() == win.canvas.color_mode()
    assert (
        c.node_color("/f/f.0/Conv").name()
        == colors.dtype_color(colors.normalize_dtype(dtypes["/f/f.0/Conv"])).name()
    )
    assert c.legend_overlay.text().splitlines()[0] == "dtype in the file"
    # the user switches the colouring while looking at the tab: the tab follows
    win.color_mode.setCurrentText("op")
    assert c.node_color("/f/f.0/Conv").name() == colors.op_color("Conv").name()
    assert tab.color_mode() == c.color_mode() == "op" == win.canvas.color_mode()
    assert c.node_color("/f/f.2/Relu").name() == colors.op_color("Relu").name()
    assert c.legend_overlay.text().splitlines()[0] == "op type"
    # SQNR: none in a file alone; the parameter line says where to measure it
    win.color_mode.setCurrentText("error")
    assert tab.color_mode() == "error"
    assert c.node_color("/f/f.0/Conv").name() == colors.NO_VALUE.name()
    assert tab.details.text() == NO_SQNR_HINT
    win.color_mode.setCurrentText("dtype")
    assert tab.details.text() != NO_SQNR_HINT
    # the combo shows the colouring of whichever graph is shown: both follow it
    win.tabs.setCurrentIndex(0)
    assert win.color_mode.currentText() == win.canvas.color_mode() == "dtype"
    win.tabs.setCurrentWidget(tab)
    assert win.color_mode.currentText() == tab.color_mode()
    # a closed tab no longer follows
    win.tabs.close_tab(win.tabs.indexOf(tab))
    win.color_mode.setCurrentText("op")
    assert win.canvas.color_mode() == "op"


def test_exported_tab_takes_the_dark_theme(qtbot, window, open_file, example_qdq_file):
    app = QApplication.instance()
    win = window
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    try:
        win.set_theme("dark")
        tab = _open_exported(qtbot, win, example_qdq_file)
        assert tab.canvas.backgroundBrush().color().name() == DARK.canvas_background
        assert win.canvas.backgroundBrush().color().name() == DARK.canvas_background
        win.tabs.close_tab(win.tabs.indexOf(tab))
    finally:
        win.set_theme("light")
        apply_theme(app, "system")


def test_inspector_shows_the_exported_selection_read_only(qtbot, window, open_file, example_qdq_file):
    win = window
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    ins = win.inspector
    win.canvas.select_nodes(["/f/f.3/Conv"])  # an editable selection in the main graph first
    assert ins.nodes == ["/f/f.3/Conv"] and not ins.roles["weight"].isHidden()
    recipe = win.doc.recipe.model_dump()
    tab = _open_exported(qtbot, win, example_qdq_file)
    name = example_qdq_file.name
    # shown with nothing selected in it: the inspector is about the file now, read-only
    assert f"No node selected in {name}" in ins.header.text()
    tab.canvas.select_nodes(["/f/f.0/Conv"])
    assert ins.header.text().startswith("<b>/f/f.0/Conv</b> (1 Conv)") and name in ins.header.text()
    assert ins.file is not None
    for w in (ins.exclude, ins.reset, *ins.roles.values()):
        assert w.isHidden() and not w.isEnabled()
    note = ins.recipe_note.text()
    assert not ins.recipe_note.isHidden()
    assert note.startswith(f"Read-only: {name} is a quantized file as written on disk, not the recipe.")
    assert "edit it there and export again" in note
    # the parameters the file holds for that Conv: its input's Q/DQ and its weight's, from the proto
    proto = onnx.load(str(example_qdq_file))
    inits = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    conv = next(n for n in proto.graph.node if n.name == "/f/f.0/Conv")
    dq_x = next(n for n in proto.graph.node if n.output[0] == conv.input[0])
    text = ins.quant_params.label.text()
    assert not ins.quant_params.isHidden()
    assert f"scale {float(inits[dq_x.input[1]]):.6g}; zero_point {int(inits[dq_x.input[2]])}" in text
    dq_w = next(n for n in proto.graph.node if n.output[0] == conv.input[1])
    w_scale = inits[dq_w.input[1]]
    assert (
        f"per_channel, axis 0; scale [...] (shape [{len(w_scale)}], {w_scale.min():.4g}..{w_scale.max():.4g})"
        in text
    )
    # an edge of the file: its tensor's parameters
    e = tab.canvas.edge_index("/f/f.5/Relu", "/f/f.6/MaxPool")
    tab.canvas.select_edge(e)
    q = next(
        n for n in proto.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == "/f/f.5/Relu_output_0"
    )
    assert ins.header.text().startswith("<b>Edge</b> carrying") and name in ins.header.text()
    assert (
        f"scale {float(inits[q.input[1]]):.6g}; zero_point {int(inits[q.input[2]])}"
        in ins.quant_params.label.text()
    )
    # nothing the user can do there changes the recipe
    ins.exclude.click()
    assert win.doc.recipe.model_dump() == recipe and not win.doc.undo_stack.canUndo()
    # back on the Graph tab: the main selection, editable again
    win.tabs.setCurrentIndex(0)
    assert ins.file is None and ins.nodes == ["/f/f.3/Conv"]
    assert ins.header.text().startswith("<b>/f/f.3/Conv</b>")
    assert not ins.roles["weight"].isHidden() and ins.roles["weight"].isEnabled()
    assert ins.recipe_note.isHidden()
    # shown again: the tab's selection again; closed: the recipe
    win.tabs.setCurrentWidget(tab)
    assert ins.file is not None and ins.file.owner is tab
    win.tabs.close_tab(win.tabs.indexOf(tab))
    assert ins.file is None and not ins.roles["weight"].isHidden()


def test_parameter_line_stays_short(qtbot, window, open_file, example_qdq_file):
    win = window
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    tab = _open_exported(qtbot, win, example_qdq_file)
    names = ["/f/f.0/Conv", "/f/f.3/Conv", "/f/f.7/Conv", "/head/head.2/Gemm"]
    tab.canvas.select_nodes(names)
    lines = tab.details.text().splitlines()
    assert len(lines) == MAX_DETAIL_LINES
    full = tab.details.toolTip().splitlines()
    assert len(full) > MAX_DETAIL_LINES and full[: MAX_DETAIL_LINES - 1] == lines[:-1]
    assert lines[-1].startswith(f"... {len(full) - MAX_DETAIL_LINES + 1} more")
    assert {line.split(":")[0] for line in full} == set(names)
    # the banner says what this tab is: the file as written, to change by exporting again
    text = tab.banner.text()
    assert text.count("already quantized") == 1 and "export again" in text and "are off" not in text
    assert str(example_qdq_file) in tab.banner.toolTip()
    win.tabs.close_tab(win.tabs.indexOf(tab))
