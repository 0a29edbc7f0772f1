"""The canvas shows an already-quantized model as the file holds it: a banner with how it is
quantized, Calibrate off with the reason, every edge coloured by the dtype it carries, the scale
and zero point of a clicked edge in the inspector; the float-vs-quantized diff tab lists the Q/DQ
pairs the export added."""

from __future__ import annotations

import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from bundled_example import EXAMPLE
from latency_fakes import quantized_faster
from onnx import numpy_helper
from PySide6.QtCore import Qt

from workbench.core import api
from workbench.qt.canvas import colors
from workbench.qt.canvas.edge_colors import edge_midpoint
from workbench.qt.canvas.items import EDGE_COLOR
from workbench.qt.problems_panel import collect_problems


@pytest.fixture(scope="module")
def cnn_export(tmp_path_factory):
    """Our QDQ export (cpu-u8s8) of digits_cnn (the bundled example), its float model and calibration data."""
    float_path, calib = EXAMPLE / "digits_cnn.onnx", EXAMPLE / "digits_cnn_calib.npz"
    out = tmp_path_factory.mktemp("qview") / "digits_cnn.qdq.onnx"
    model = api.open_model(float_path)
    api.export(api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(calib), samples=32), out)
    return float_path, out, calib


def _file_edge_dtypes(path, structure) -> list[str]:
    """The dtype each drawn edge carries, read with onnx alone: a folded Q -> DQ pair carries the
    Q's zero-point type, any other edge the type onnx shape inference gives its tensor."""
    proto = onnx.shape_inference.infer_shapes(onnx.load(str(path)))
    types = {vi.name: vi.type.tensor_type.elem_type for vi in
             list(proto.graph.value_info) + list(proto.graph.input) + list(proto.graph.output)}
    inits = {i.name: i for i in proto.graph.initializer}
    producer = {o: n for n in proto.graph.node for o in n.output}
    out = []
    for t in structure.edge_tensors:
        p = producer.get(t)
        q = producer.get(p.input[0]) if p is not None and p.op_type == "DequantizeLinear" else None
        if q is not None and q.op_type == "QuantizeLinear":
            out.append(onnx.TensorProto.DataType.Name(inits[q.input[2]].data_type).lower())
        else:
            name = onnx.TensorProto.DataType.Name(types[t]).lower()
            out.append("float" if name == "float" else name)
    return out


def _click_edge(qtbot, canvas, e: int) -> None:
    """A real click on the middle of edge ``e``'s curve."""
    x, y = edge_midpoint(canvas._state.data, e)
    canvas.resetTransform()
    canvas.centerOn(float(x), float(y))
    pos = canvas.mapFromScene(float(x), float(y))
    qtbot.mouseClick(canvas.viewport(), Qt.MouseButton.LeftButton, pos=pos)


def test_qdq_export_opens_as_it_is(qtbot, window, open_file, cnn_export):
    _float, export, _calib = cnn_export
    win = window
    open_file(win, export)
    assert not win.banner.isHidden()
    assert "already quantized" in win.banner.text() and "QDQ: 3 Conv uint8/int8, 1 Gemm uint8/int8" in win.banner.text()
    assert not win.act_calibrate.isEnabled() and not win.calibration.start.isEnabled()
    assert "already quantized" in win.act_calibrate.toolTip()
    assert "Already quantized: Calibrate, Analyze and Export are off." in win.status_label.text()
    # Problems: the file's preparation notes and one line saying recipe advice is left out; the
    # plan's advice for a float model was listed ("kept in float: it reaches no quantized Conv...",
    # 83 rows on a nudenet export)
    problems = [(src, i.severity, i.message) for src, i in collect_problems(win.doc)]
    assert [src for src, _sev, _m in problems] == ["preparation"] * len(win.doc.model.notes) + ["model"]
    assert {sev for _s, sev, _m in problems} == {"info"}
    assert problems[-1][2] == (f"{export.name} is already quantized ({win.doc.quant_summary.text()}); open the "
                               "float model to calibrate, analyse or export. Recipe advice is not listed: it "
                               "applies to float models.")
    assert win.doc.issue_badges() == {}  # no "?" on the canvas for that advice either
    assert win.doc.node_issues([n.name for n in win.doc.model.graph.node]) == []
    assert win.color_mode.currentText() == "dtype"
    canvas = win.canvas
    structure = canvas._state.data.structure
    assert structure.hidden  # Q/DQ folded into edge badges by default
    expected = _file_edge_dtypes(export, structure)
    assert [canvas.edge_dtype(e) for e in range(canvas.edge_count())] == expected
    quantized = [e for e, dt in enumerate(expected) if dt != "float"]
    assert len(quantized) == 6  # Relu->Conv, Relu->MaxPool, MaxPool->Conv, Relu->AvgPool, AvgPool->Flatten, Flatten->Gemm
    for e in range(canvas.edge_count()):
        want = colors.dtype_color(expected[e]) if e in quantized else EDGE_COLOR
        assert canvas.edge_color(e).name() == want.name(), structure.edge_tensors[e]
    assert "uint8" in canvas.legend_overlay.text() and "dtype in the file" in canvas.legend_overlay.text()
    # the scale and zero point the file holds for the edge /f/f.2/Relu -> /f/f.3/Conv
    proto = onnx.load(str(export))
    inits = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    q = next(n for n in proto.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == "/f/f.2/Relu_output_0")
    scale, zp = float(inits[q.input[1]]), int(inits[q.input[2]])
    e = canvas.edge_index("/f/f.2/Relu", "/f/f.3/Conv")
    with qtbot.waitSignal(canvas.edgeSelected, timeout=300_000) as sig:
        _click_edge(qtbot, canvas, e)
    assert sig.args == [q.output[0]] and canvas.selected_edge() == e
    text = win.inspector.quant_params.label.text()
    assert f"scale {scale:.6g}; zero_point {zp}" in text and "uint8 per_tensor" in text
    body = win.inspector.quant_params.parentWidget().layout()  # above the recipe controls
    assert body.indexOf(win.inspector.quant_params) < body.indexOf(win.inspector.roles["weight"])
    assert win.inspector.roles["weight"].isHidden()
    assert f"scale {scale:.6g}" in canvas.edge_tooltip(e)
    # selecting the Conv that reads it shows its unit's parameters: that activation (its input) and its int8 weight
    with qtbot.waitSignal(canvas.selectionChangedNames, timeout=300_000):
        canvas.select_nodes(["/f/f.3/Conv"])
    text = win.inspector.quant_params.label.text()
    conv = next(n for n in proto.graph.node if n.name == "/f/f.3/Conv")
    wdq = next(n for n in proto.graph.node if n.output[0] == conv.input[1])
    wscale = inits[wdq.input[1]]
    assert f"input {q.output[0]}: uint8 per_tensor; scale {scale:.6g}" in text
    assert (f"weight {wdq.input[0]}: int8 per_channel, axis 0; scale [...] (shape [{wscale.size}], "
            f"{wscale.min():.4g}..{wscale.max():.4g})") in text
    assert canvas.selected_edge() is None
    # integer kernels marked: the three Conv and the Gemm units fuse into QLinearConv / QGemm, the
    # AveragePool between Q/DQ pairs into QLinearAveragePool (tests/test_quant_summary.py checks them
    # against onnxruntime's optimized graph)
    kernels = {structure.names[i]: k for i, k in canvas._state.kernels.items()}
    assert kernels == {"/f/f.0/Conv": "QDQ -> QLinearConv", "/f/f.3/Conv": "QDQ -> QLinearConv",
                       "/f/f.7/Conv": "QDQ -> QLinearConv", "/f/f.9/AveragePool": "QDQ -> QLinearAveragePool",
                       "/head/head.2/Gemm": "QDQ -> QGemm"}
    # the toggle draws Q/DQ as nodes: one node per Q and DQ of the file
    with qtbot.waitSignal(canvas.layoutReady, timeout=300_000):
        win.act_show_qdq.trigger()
    assert len(canvas.node_names()) == len(proto.graph.node)


@pytest.mark.slow
def test_ddddocr_opens_with_the_quantized_banner(qtbot, window, open_file, corpus):
    path = corpus / "ddddocr_common_old_int8" / "model.onnx"
    if not path.is_file():
        pytest.skip(f"corpus model not found at {path}")
    win = window
    open_file(win, path)
    proto = onnx.load(str(path))
    n_conv = sum(n.op_type == "ConvInteger" for n in proto.graph.node)
    n_mm = sum(n.op_type == "MatMulInteger" for n in proto.graph.node)
    assert (n_conv, n_mm) == (21, 1)
    assert f"dynamic: {n_conv} Conv uint8/uint8" in win.banner.text() and not win.banner.isHidden()
    for act in (win.act_calibrate, win.act_analyze, win.act_sensitivity, win.act_export):
        assert not act.isEnabled()
    assert not win.calibration.start.isEnabled()
    assert "is already quantized" in win.calibration.start.toolTip()
    kernels = win.canvas._state.kernels.values()
    # the com.microsoft DynamicQuantizeLSTM (an integer kernel onnxruntime runs as it is) has its INT mark too
    assert sorted(set(kernels)) == ["ConvInteger", "DynamicQuantizeLSTM", "MatMulInteger"]
    assert len(kernels) == n_conv + n_mm + 1
    assert "integer kernel: DynamicQuantizeLSTM" in win.canvas.tooltip_text("LSTM_202_quant")
    # hovering a ConvInteger shows its weight's scale and zero point as the file holds them
    inits = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    tip = win.canvas.tooltip_text("Conv_3_quant")
    assert "integer kernel: ConvInteger" in tip
    assert f"scale {float(inits['394_scale']):.6g}; zero_point {int(inits['394_zero_point'])}" in tip
    win.calibration.samples.setValue(4)  # no project to save for a file that cannot be calibrated
    assert not win.doc.modified and "*" not in win.windowTitle()
    # a float model opened next: banner gone, Calibrate back
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    assert win.banner.isHidden() and win.act_calibrate.isEnabled()


def test_diff_lists_the_qdq_pairs_of_the_export(qtbot, window, compare_in_app, cnn_export):
    float_path, export, calib = cnn_export
    win = window
    tab = compare_in_app(win, float_path, calib, export, 32)
    with qtbot.waitSignal(tab.canvas.layoutReady, timeout=300_000):
        pass
    proto = onnx.load(str(export))
    qs = sorted(n.name for n in proto.graph.node if n.op_type == "QuantizeLinear")
    dqs = sorted(n.name for n in proto.graph.node if n.op_type == "DequantizeLinear")
    pairs = tab.rows("Q/DQ pairs")
    assert sorted(r["Quantized node"] for r in pairs) == qs and len(qs) == 7  # the Gemm's logits stay float
    assert {r["Float node"] for r in pairs} == {n.input[0] for n in proto.graph.node if n.op_type == "QuantizeLinear"}
    lone = [r["Quantized node"] for r in tab.rows("DQ without Q")]
    paired_dq = [dq for p in tab.diff.qdq if p.quantize for dq in p.dequantize]
    assert sorted(lone + paired_dq) == dqs and len(dqs) == 15
    assert tab.rows("folded or fused") == [] and tab.rows("removed") == []
    matched = {r["Float node"]: r for r in tab.rows("matched")}
    assert set(matched) == {n.name for n in onnx.load(str(float_path)).graph.node}
    conv = float(matched["/f/f.3/Conv"]["SQNR (dB)"])
    assert 20.0 < conv < 80.0
    exact = tab.diff.node_sqnr()["/f/f.3/Conv"]
    assert round(exact, 2) == pytest.approx(conv)
    # the canvas colours by 0.25 dB steps of the colour map
    assert tab.canvas.node_color("/f/f.3/Conv").name() == colors.error_color(round(exact * 4) / 4).name()
    assert math.isfinite(float(matched["/head/head.2/Gemm"]["SQNR (dB)"]))
    # edges take the SQNR of the tensor they carry (the Relu's Q/DQ output into the next Conv)
    c = tab.canvas
    e = c.edge_index("/f/f.2/Relu", "/f/f.3/Conv")
    relu = tab.diff.sqnr["/f/f.2/Relu_output_0"]
    assert c.edge_error(e) == pytest.approx(relu)
    assert c.edge_color(e).name() == colors.error_color(round(relu * 4) / 4).name()
    assert f"SQNR {relu:.2f} dB vs float /f/f.2/Relu_output_0" in c.edge_tooltip(e)
    assert "edges: SQNR of the tensor they carry" in c.legend_overlay.text()
    # the SQNR of the logits equals one computed here from both models' outputs
    x = np.load(calib)["input"][:32]
    f = ort.InferenceSession(str(float_path)).run(None, {"input": x})[0].astype(np.float64)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # the operators as written
    q = ort.InferenceSession(str(export), so).run(None, {"input": x})[0].astype(np.float64)
    want = 10 * np.log10(np.sum(f * f) / np.sum((f - q) ** 2))
    assert float(matched["/head/head.2/Gemm"]["SQNR (dB)"]) == pytest.approx(want, abs=0.01)


def test_export_then_open_exported_model(qtbot, window, open_file, tmp_path, monkeypatch):
    quantized_faster(monkeypatch)  # the export quantizes whatever this machine measures (latency_fakes)
    win = window
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    assert win.banner.isHidden()
    win.calibration.set_data_spec({"kind": "npz", "path": str(EXAMPLE / "digits_cnn_calib.npz")}, 32)
    win._on_spec_changed()
    out = tmp_path / "digits.qdq.onnx"
    with qtbot.waitSignal(win.runs.finished, timeout=540_000):
        win.export_to(out)
    assert out.is_file()
    tab = win.open_exported()
    with qtbot.waitSignal(tab.canvas.layoutReady, timeout=300_000):
        pass
    assert win.tabs.currentWidget() is tab and win.tabs.tabText(win.tabs.currentIndex()) == f"Exported: {out.name}"
    proto = onnx.load(str(out))
    assert tab.banner.text().count("already quantized") == 1
    assert summary_text(proto) in tab.banner.text()
    c = tab.canvas
    assert c.color_mode() == "dtype"
    expected = _file_edge_dtypes(out, c._state.data.structure)
    assert [c.edge_dtype(e) for e in range(c.edge_count())] == expected
    assert [c.edge_color(e).name() for e in range(c.edge_count())] == [
        (EDGE_COLOR if dt == "float" else colors.dtype_color(dt)).name() for dt in expected]
    e = c.edge_index("/f/f.5/Relu", "/f/f.6/MaxPool")
    c.select_edge(e)
    inits = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    q = next(n for n in proto.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == "/f/f.5/Relu_output_0")
    assert f"scale {float(inits[q.input[1]]):.6g}; zero_point {int(inits[q.input[2]])}" in tab.details.text()
    win.tabs.close_tab(win.tabs.indexOf(tab))


def summary_text(proto) -> str:
    return api.summarize_quantization(proto).text()


def test_legend_follows_the_colour_mode(qtbot, window, open_file):
    win = window
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    legend = win.canvas.legend_overlay
    ops = [n.op_type for n in onnx.load(str(EXAMPLE / "digits_cnn.onnx")).graph.node]
    lines = legend.text().splitlines()
    assert lines[0] == "op type"
    assert sorted(lines[1:]) == sorted(f"{op} ({ops.count(op)})" for op in set(ops))
    win.color_mode.setCurrentText("error")
    assert legend.text().splitlines()[:7] == ["SQNR (dB)", "<= 5 dB", "15 dB", "25 dB", "35 dB", ">= 45 dB",
                                             "no value"]
    win.canvas.set_node_values(errors={"/f/f.0/Conv": 12.0}, error_label="Sensitivity: Only quantized (dB)")
    assert legend.text().splitlines()[0] == "Sensitivity: Only quantized (dB)"
    win.color_mode.setCurrentText("dtype")  # a float model: the recipe's planned dtypes
    lines = legend.text().splitlines()
    # cpu-u8s8 quantizes every unit of digits_cnn, and the nodes between its quantized tensors (Flatten) run on
    # them as the written file will: every node is uint8, so no "not assigned" entry
    assert lines == ["dtype (recipe)", "uint8"]
    assert not legend.isHidden()
    win.act_legend.trigger()
    assert legend.isHidden()
