"""Float vs quantized side by side: the diff tab's two aligned panes.

digits_cnn against our own QDQ export (made here with the api, measured on its calibration data
through View > Compare), and a Conv -> BatchNormalization -> Relu model whose BatchNormalization
our export folds into the Conv. Counts are read from the files with onnx alone.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from bundled_example import EXAMPLE
from onnx import TensorProto, helper, numpy_helper
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from workbench.core import api
from workbench.qt.diff_view import DiffTab

QDQ = ("QuantizeLinear", "DequantizeLinear")


@pytest.fixture(scope="module")
def cnn_export(tmp_path_factory):
    """Our QDQ export (cpu-u8s8) of digits_cnn, its float model and calibration data."""
    float_path, calib = EXAMPLE / "digits_cnn.onnx", EXAMPLE / "digits_cnn_calib.npz"
    out = tmp_path_factory.mktemp("panes") / "digits_cnn.qdq.onnx"
    model = api.open_model(float_path)
    api.export(api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(calib), samples=16), out)
    return float_path, out, calib


def _drawn(canvas) -> list[str]:
    return list(canvas._state.data.names)


def _visible(canvas, name: str) -> bool:
    return canvas.mapToScene(canvas.viewport().rect()).boundingRect().contains(canvas.node_scene_rect(name).center())


def test_panes_of_digits_cnn_vs_our_export(qtbot, window, compare_in_app, cnn_export):
    float_path, export, calib = cnn_export
    win = window
    tab = compare_in_app(win, float_path, calib, export, 16)
    with qtbot.waitSignal(tab.panesReady, timeout=540_000):
        pass
    fproto, qproto = onnx.load(str(float_path)), onnx.load(str(export))
    fc, qc = tab.float_canvas, tab.canvas
    # the left pane draws every float node, the right one every node of the export but its Q/DQ
    assert sorted(_drawn(fc)) == sorted(n.name for n in fproto.graph.node) and len(_drawn(fc)) == 10
    not_qdq = [n.name for n in qproto.graph.node if n.op_type not in QDQ]
    assert sorted(_drawn(qc)) == sorted(not_qdq) and len(not_qdq) == 10
    # aligned: every matched node sits exactly where its partner does
    for m in tab.diff.matches:
        assert fc.node_scene_rect(m.float_node) == qc.node_scene_rect(m.quant_node)
    # the Q/DQ marked in the right pane are exactly the file's Q/DQ nodes, each on something drawn
    qdq = Counter(n.op_type for n in qproto.graph.node if n.op_type in QDQ)
    assert qdq == {"QuantizeLinear": 7, "DequantizeLinear": 15}  # 7 activation pairs (float logits), 8 weight/bias DQs
    marks = tab.panes.layout_.qdq_marks
    assert set(marks) == {n.name for n in qproto.graph.node if n.op_type in QDQ}
    st = qc._state.data.structure
    badged_edges = {(st.names[a], st.names[b]) for e, (a, b) in enumerate(st.edges) if e in st.edge_badges}
    tagged = {st.names[i] for i in st.node_tags}
    for node, where in marks.items():
        assert where, node
        for kind, a, b in where:
            if kind == "edge":
                assert (a, b) in badged_edges, (node, a, b)
            elif kind == "tag":
                assert a in tagged, (node, a)
            else:
                assert kind == "output" and "out:u8" in st.node_tags[st.names.index(a)].split(), (node, a)
    # 7 pairs: 6 drawn as edge badges between nodes, one on the graph input (a tag); the logits stay float
    pairs = [n for n in qproto.graph.node if n.op_type == "QuantizeLinear"]
    kinds = Counter(marks[q.name][0][0] for q in pairs)
    assert kinds == {"edge": 6, "tag": 1} and len(badged_edges) == 6
    # the right pane is coloured by the measured SQNR (the legend gives the thresholds)
    assert qc.color_mode() == "error" and "SQNR" in qc.error_label()
    assert fc.color_mode() == "op"
    # selecting the float Conv selects and centres the quantized Conv computing it
    conv = "/f/f.3/Conv"
    qconv = next(n for n in qproto.graph.node if n.name == conv)
    producers = {o: n.op_type for n in qproto.graph.node for o in n.output}
    assert qconv.op_type == "Conv" and {producers[t] for t in qconv.input} == {"DequantizeLinear"}
    fc.select_nodes([conv], center=True)
    assert qc.selected_nodes() == [conv] and _visible(qc, conv)
    # and back: the quantized MaxPool selects the float one
    qc.select_nodes(["/f/f.6/MaxPool"])
    assert fc.selected_nodes() == ["/f/f.6/MaxPool"]
    # a row of the list selects the pair in both panes, both showing it
    row = next(tab.groups["matched"].child(i) for i in range(tab.groups["matched"].childCount())
               if tab.groups["matched"].child(i).text(0) == "/head/head.2/Gemm")
    tab.tree.itemClicked.emit(row, 0)
    assert fc.selected_nodes() == qc.selected_nodes() == ["/head/head.2/Gemm"]
    assert _visible(fc, "/head/head.2/Gemm") and _visible(qc, "/head/head.2/Gemm")
    # a Q/DQ row selects the two nodes its edge badge sits between, and their float partners
    pair = next(tab.groups["Q/DQ pairs"].child(i) for i in range(tab.groups["Q/DQ pairs"].childCount())
                if tab.groups["Q/DQ pairs"].child(i).text(2) == "/f/f.6/MaxPool_output_0_QuantizeLinear")
    tab.tree.itemClicked.emit(pair, 0)
    assert qc.selected_nodes() == fc.selected_nodes() == ["/f/f.6/MaxPool", "/f/f.7/Conv"]
    # zoom and scroll stay in step: both views show the same scene point at the same scale
    qc.zoom_in()
    assert fc.transform().m11() == pytest.approx(qc.transform().m11())
    qc.horizontalScrollBar().setValue(qc.horizontalScrollBar().value() + 30)
    centre = qc.mapToScene(qc.viewport().rect().center())
    other = fc.mapToScene(fc.viewport().rect().center())
    assert abs(centre.x() - other.x()) <= 2 and abs(centre.y() - other.y()) <= 2
    # Home fits the graph in the pane with the focus; the other follows
    qtbot.keyClick(fc, Qt.Key.Key_Home)
    assert qc.transform().m11() == pytest.approx(fc.transform().m11()) and fc.transform().m11() <= 1.0
    for name in _drawn(qc):
        assert _visible(qc, name)


def _bn_model(path: Path) -> None:
    """x -> Conv "conv" -> BatchNormalization "bn" -> Relu "relu" -> Conv "conv2" -> y."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.normal(size=(6, 3, 3, 3)).astype(np.float32), "W"),
             numpy_helper.from_array(rng.normal(size=6).astype(np.float32), "B"),
             numpy_helper.from_array(rng.uniform(0.5, 2, 6).astype(np.float32), "gamma"),
             numpy_helper.from_array(rng.normal(size=6).astype(np.float32), "beta"),
             numpy_helper.from_array(rng.normal(size=6).astype(np.float32), "mean"),
             numpy_helper.from_array(rng.uniform(0.5, 2, 6).astype(np.float32), "var"),
             numpy_helper.from_array(rng.normal(size=(4, 6, 3, 3)).astype(np.float32), "W2")]
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["n"], name="bn"),
             helper.make_node("Relu", ["n"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "W2"], ["y"], name="conv2", pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_folded_batchnorm_is_struck_in_the_float_pane(qtbot, tmp_path):
    float_path, calib, out = tmp_path / "bn.onnx", tmp_path / "calib.npz", tmp_path / "bn.qdq.onnx"
    _bn_model(float_path)
    np.savez(calib, x=np.random.default_rng(4).normal(size=(8, 3, 8, 8)).astype(np.float32))
    model = api.open_model(float_path)
    recipe = api.make_recipe("cpu-u8s8", exclude=["conv2"])  # the last Conv stays float
    api.export(api.quantize(model, recipe, data=str(calib), samples=8), out)
    qproto = onnx.load(str(out))
    assert "BatchNormalization" not in {n.op_type for n in qproto.graph.node}  # folded by our export
    producers = {o: n.op_type for n in qproto.graph.node for o in n.output}
    conv2 = next(n for n in qproto.graph.node if n.name == "conv2")
    inits = {i.name: i.data_type for i in qproto.graph.initializer}
    # it reads the quantized Relu output but its weight is the float initializer: a Conv left float
    assert producers[conv2.input[0]] == "DequantizeLinear" and inits[conv2.input[1]] == TensorProto.FLOAT
    diff = api.compare_models(model, qproto)
    tab = DiffTab(diff, qproto, out, float_path.name)
    qtbot.addWidget(tab)
    tab.resize(1400, 800)
    tab.show()
    assert not tab.panes.status.isHidden()
    with qtbot.waitSignal(tab.panesReady, timeout=540_000):
        pass
    fc, qc = tab.float_canvas, tab.canvas
    assert tab.panes.status.isHidden()  # "Laying out both panes..." gone once they are drawn
    assert diff.folded == [("bn", "BatchNormalization")] and diff.folded_into == {"bn": "conv"}
    assert "BatchNormalization bn (into conv)" in api.format_diff(diff)  # the CLI's text too
    # struck through, with a note naming the Conv it went into; the "folded or fused" row says so too
    assert tab.panes.marks["float"] == [(fc.node_scene_rect("bn"), "folded", "into conv")]
    assert fc._state.badges[fc._state.data.index["bn"]] == "folded"
    assert "folded or fused into conv" in fc.tooltip_text("bn")
    assert tab.rows("folded or fused") == [{"Float node": "bn", "SQNR (dB)": "", "Quantized node": "conv",
                                            "Op": "BatchNormalization", "How": "folded into"}]
    # it has a row of its own between the Conv and the Relu: a gap at that place in the right pane
    y = {n: fc.node_scene_rect(n).center().y() for n in ("conv", "bn", "relu")}
    assert y["conv"] < y["bn"] < y["relu"]
    assert all(qc.node_scene_rect(n).center().y() != y["bn"] for n in _drawn(qc))
    # the Conv left float is framed orange with a "float" badge
    assert tab.panes.marks["quant"] == [(qc.node_scene_rect("conv2"), "float", "left float")]
    assert qc._state.badges[qc._state.data.index["conv2"]] == "float"
    assert [r["Float node"] for r in tab.rows("left float")] == ["conv2"]
    # selecting it selects the Conv it went into; that Conv selects both back
    fc.select_nodes(["bn"])
    assert qc.selected_nodes() == ["conv"]
    tab.panes.select_pair("", "conv")
    assert sorted(fc.selected_nodes()) == ["bn", "conv"]
    tab.shutdown()


def test_panes_draw_the_names_the_diff_lists_and_a_project_is_refused(qtbot, window, compare_in_app, tmp_path):
    """onnxruntime's quantize_dynamic leaves nodes unnamed: the diff names them as the canvas does
    (Reshape_0) and the quantized pane must draw those same names (it drew the raw file: every
    matched name also drawn). A project picked as the quantized file is one line naming the model it records."""
    from onnxruntime.quantization import quantize_dynamic

    float_path, calib = EXAMPLE / "digits_cnn.onnx", EXAMPLE / "digits_cnn_calib.npz"
    dyn = tmp_path / "dyn.onnx"
    quantize_dynamic(str(float_path), str(dyn))
    assert any(not n.name for n in onnx.load(str(dyn)).graph.node)  # the case: unnamed nodes in the file
    win = window
    tab = compare_in_app(win, float_path, calib, dyn, 8)
    with qtbot.waitSignal(tab.panesReady, timeout=540_000):
        pass
    drawn = set(_drawn(tab.canvas))
    listed = {m.quant_node for m in tab.diff.matches} | set(getattr(tab.diff, "added", []) or [])
    assert {m.quant_node for m in tab.diff.matches} <= drawn
    assert "Reshape_0" in drawn and not any("#" in n for n in drawn), sorted(drawn)
    assert listed
    proj = tmp_path / "job.wbproj"
    proj.write_text('{"schema_version": 1, "model": {"path": "digits_cnn.onnx"}}')
    from workbench.core.errors import WorkbenchError
    with pytest.raises(WorkbenchError, match=r"job.wbproj is a Workbench project, not a model"):
        win.compare_with(proj)



def test_panes_fit_again_when_they_grow_and_the_legend_fits_a_small_pane(qtbot, window, open_file, cnn_export):
    float_path, export, calib = cnn_export
    win = window
    win.resize(1600, 1000)
    open_file(win, float_path)
    win.calibration.set_data_spec({"kind": "npz", "path": str(calib)}, 16)
    win._on_spec_changed()
    with qtbot.waitSignal(win.diffReady, timeout=540_000) as sig:
        win.compare_with(export)
    tab = sig.args[0]
    with qtbot.waitSignal(tab.panesReady, timeout=540_000):
        pass
    for _ in range(20):  # the panes' scroll bars settle (layout requests posted by the first fits)
        QApplication.processEvents()
    fc, qc = tab.float_canvas, tab.canvas
    for canvas in (fc, qc):  # small panes beside the docks: the 300 px legend was clipped
        assert canvas.legend_overlay.geometry().right() < canvas.viewport().width(), canvas.viewport().width()
    small, width = qc.transform().m11(), qc.viewport().width()
    assert fc.transform().m11() == small
    for dock in win.docks.values():
        dock.hide()
    qtbot.waitUntil(lambda: qc.viewport().width() > width, timeout=10_000)
    qtbot.waitUntil(lambda: qc.transform().m11() > small, timeout=10_000)  # stayed at the small fit
    grown = qc.transform().m11()
    qc.fit()  # what a fit at the grown size gives
    assert qc.transform().m11() == grown and fc.transform().m11() == grown
