"""How a quantized file is quantized, read from the file alone (summary line, node and edge dtypes,
integer kernels), and the float-vs-quantized diff (Q/DQ inserted, folded ops, per-tensor SQNR),
on our QDQ / QONNX exports of digits_cnn, onnxruntime's quantize_static (QDQ, QOperator) and
quantize_dynamic output, ddddocr (dynamic), and small MatMulNBits / int4 / fp8 models."""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from bundled_example import EXAMPLE
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import (
    CalibrationDataReader,
    QuantFormat,
    QuantType,
    quantize_dynamic,
    quantize_static,
)
from PIL import Image
from qdq_helpers import matmul_nbits_model, optimized_op_counts, ran_as

from workbench.cli import main
from workbench.core import api
from workbench.core.graph.layout import graph_structure
from workbench.core.inspection.diff_error import compare_models
from workbench.core.inspection.model_diff import diff_models
from workbench.core.inspection.quant_summary import (
    edge_quantization,
    params_around_nodes,
    summarize_quantization,
)
from workbench.core.inspection.report import format_report, inspect_model
from workbench.core.inspection.tensor_dtypes import tensor_dtypes
from workbench.qt.canvas.colors import error_color

FLOAT, CALIB = EXAMPLE / "digits_cnn.onnx", EXAMPLE / "digits_cnn_calib.npz"


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """digits_cnn quantized by us (QDQ, QONNX) and by onnxruntime (QDQ, QOperator, dynamic)."""
    out = tmp_path_factory.mktemp("qv")
    model = api.open_model(FLOAT)
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(CALIB), samples=32)
    paths = {"ours": api.export(result, out / "ours.qdq.onnx"),
             "qonnx": api.export(result, out / "ours.qonnx.onnx", format="qonnx", model=model)}
    x = np.load(CALIB)["input"]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"input": x[i:i + 1]} for i in range(16)])

        def get_next(self):
            return next(self.it, None)

    for fmt in (QuantFormat.QDQ, QuantFormat.QOperator):
        paths[f"ort_{fmt.name}"] = out / f"ort_{fmt.name}.onnx"
        quantize_static(str(FLOAT), str(paths[f"ort_{fmt.name}"]), Reader(), quant_format=fmt)
    paths["ort_dynamic"] = out / "ort_dynamic.onnx"
    quantize_dynamic(str(FLOAT), str(paths["ort_dynamic"]))
    return paths


def _ops(proto) -> Counter:
    return Counter(n.op_type for n in proto.graph.node)


def _zp_type(proto, q: onnx.NodeProto) -> str:
    init = {i.name: i for i in proto.graph.initializer}[q.input[2]]
    return TensorProto.DataType.Name(init.data_type).lower()


def test_summary_of_our_qdq_export(exports):
    proto = onnx.load(str(exports["ours"]))
    ops = _ops(proto)
    s = summarize_quantization(proto)
    # 7 activation pairs (the Gemm's logits stay float: QGemm writes float) + 4 weight and 4 bias DQs
    assert s.kinds == {"QDQ": ops["QuantizeLinear"] + ops["DequantizeLinear"]} == {"QDQ": 22}
    assert s.text() == f"QDQ: {ops['Conv']} Conv uint8/int8, {ops['Gemm']} Gemm uint8/int8"
    assert s.kernels == {"/f/f.0/Conv": "QDQ -> QLinearConv", "/f/f.3/Conv": "QDQ -> QLinearConv",
                         "/f/f.7/Conv": "QDQ -> QLinearConv", "/f/f.9/AveragePool": "QDQ -> QLinearAveragePool",
                         "/head/head.2/Gemm": "QDQ -> QGemm"}
    for n in proto.graph.node:  # Q nodes compute in their zero point's type, DQ in their input's
        if n.op_type == "QuantizeLinear":
            assert s.node_dtypes[n.name] == _zp_type(proto, n) == "uint8"
        elif n.op_type == "Conv":
            assert s.node_dtypes[n.name] == "uint8"
    assert s.node_dtypes["/f/f.2/Relu"] == "float"  # reads the Conv's float output
    # a float Conv of the QDQ file gets the parameters of the DQ nodes feeding it (activation, weight, bias)
    around = params_around_nodes(proto)["/f/f.3/Conv"]
    conv = next(n for n in proto.graph.node if n.name == "/f/f.3/Conv")
    producer = {o: n for n in proto.graph.node for o in n.output}
    assert [(p.tensor, p.role) for p in around] == [
        (producer[conv.input[0]].input[0], "input"), (producer[conv.input[1]].input[0], "weight"),
        (producer[conv.input[2]].input[0], "bias")]
    relu = params_around_nodes(proto)["/f/f.2/Relu"]  # its output's QuantizeLinear
    assert [(p.tensor, p.role) for p in relu] == [("/f/f.2/Relu_output_0_quantized", "output")]
    report = inspect_model(api.open_model(exports["ours"]))
    assert report["quantization_summary"] == s.text()
    assert f"summary:     {s.text()}" in format_report(report)


@pytest.mark.parametrize("collapse", [True, False])
def test_edge_dtypes_equal_the_file(exports, collapse):
    proto = onnx.load(str(exports["ours"]))
    st = graph_structure(proto, collapse_qdq=collapse)
    eq = edge_quantization(proto, st)
    inferred = onnx.shape_inference.infer_shapes(proto)
    types = {vi.name: vi.type.tensor_type.elem_type for vi in list(inferred.graph.value_info)
             + list(inferred.graph.input) + list(inferred.graph.output)}
    types.update({i.name: i.data_type for i in proto.graph.initializer})
    producer = {o: n for n in proto.graph.node for o in n.output}
    for e, t in enumerate(st.edge_tensors):
        p = producer[t]
        if collapse and p.op_type == "DequantizeLinear" and producer.get(p.input[0]) is not None:
            want, tensor = _zp_type(proto, producer[p.input[0]]), p.input[0]
        else:
            want = TensorProto.DataType.Name(types[t]).lower()
            tensor = p.input[0] if p.op_type == "DequantizeLinear" else (t if want != "float" else "")
        assert eq.dtypes[e] == want, t
        assert eq.tensors[e] == tensor, t
    n_q = _ops(proto)["QuantizeLinear"]
    if collapse:  # every Q/DQ pair but the graph input's (a tag) is one edge; the float logits have none
        assert sum(d == "uint8" for d in eq.dtypes) == n_q - 1 == 6
    else:  # Q -> DQ edges carry uint8, the rest float
        assert sum(d == "uint8" for d in eq.dtypes) == n_q
        assert set(eq.dtypes) == {"uint8", "float"}



def test_roles_of_qoperator_tensors_are_seen_from_the_selected_node(exports):
    """A QLinearConv's quantized input is its producer's "output": for the node reading it, it is
    an input (the inspector said "output /f/f.0/Conv_output_0_quantized" for /f/f.3/Conv_quant)."""
    qop = onnx.load(str(exports["ort_QOperator"]))
    around = params_around_nodes(qop)
    nodes = {n.name: n for n in qop.graph.node}
    checked = 0
    for name, params in around.items():
        for p in params:
            if p.tensor in nodes[name].output:
                assert p.role != "input", (name, p.tensor, p.role)
            elif p.tensor in nodes[name].input:
                assert p.role != "output", (name, p.tensor, p.role)
                checked += 1
    assert checked >= 5
    pool = next(n for n in qop.graph.node if n.op_type == "QLinearAveragePool")
    assert [(p.tensor, p.role) for p in around[pool.name]] == [(pool.input[0], "input"), (pool.output[0], "output")]
    conv = next(n for n in qop.graph.node if n.op_type == "QLinearConv" and n.input[0] in
                {o for m in qop.graph.node if m.op_type == "QLinearConv" for o in m.output})
    assert [p.role for p in around[conv.name]][:1] == ["input"]

def test_summaries_of_onnxruntime_and_qonnx_files(exports):
    qdq = onnx.load(str(exports["ort_QDQ"]))
    assert summarize_quantization(qdq).text() == "QDQ: 3 Conv int8/int8, 1 Gemm int8/int8"
    qop = onnx.load(str(exports["ort_QOperator"]))
    s = summarize_quantization(qop)
    ops = _ops(qop)
    # the input's QuantizeLinear and the output's DequantizeLinear are QOperator's edges, not QDQ
    assert s.kinds == {"QOperator": ops["QLinearConv"] + 4}  # + QLinearAveragePool, QGemm, Q, DQ
    assert s.text() == f"QOperator: {ops['QLinearConv']} Conv int8/int8, 1 Gemm int8/int8"
    assert Counter(s.kernels.values()) == {"QLinearConv": 3, "QGemm": 1, "QLinearAveragePool": 1}
    dyn = onnx.load(str(exports["ort_dynamic"]))
    s = summarize_quantization(dyn)
    assert s.kinds == {"dynamic": _ops(dyn)["ConvInteger"] + _ops(dyn)["MatMulInteger"]
                       + _ops(dyn)["DynamicQuantizeLinear"]}
    assert s.text() == "dynamic: 3 Conv uint8/int8, 1 MatMul uint8/int8"
    qonnx = onnx.load(str(exports["qonnx"]))
    s = summarize_quantization(qonnx)
    assert list(s.kinds) == ["QONNX"] and s.text().startswith("QONNX: 3 Conv ")
    # the edges leaving a Quant node carry its integer grid: (u)int<bit width> from the node's inputs
    inits = {i.name: numpy_helper.to_array(i) for i in qonnx.graph.initializer}
    st = graph_structure(qonnx)
    eq = edge_quantization(qonnx, st)
    nodes = {n.name: n for n in qonnx.graph.node}
    seen = 0
    for e, (a, _b) in enumerate(st.edges):
        n = nodes[st.names[a]]
        if n.op_type != "Quant":
            assert eq.dtypes[e] in ("float", "int64"), st.edge_tensors[e]
            continue
        signed = next(at.i for at in n.attribute if at.name == "signed")
        assert eq.dtypes[e] == f"{'int' if signed else 'uint'}{int(inits[n.input[3]])}"
        assert eq.tensors[e] == n.input[0]
        seen += 1
    outputs = {o.name for o in qonnx.graph.output}
    # every Quant node has an edge but the one writing the graph output
    assert seen == sum(n.op_type == "Quant" and n.output[0] not in outputs for n in qonnx.graph.node) == 15
    assert summarize_quantization(onnx.load(str(FLOAT))).text() == "float model"


def test_weight_only_int4_and_fp8():
    k, n, block = 16, 4, 8
    rng = np.random.default_rng(0)
    packed = rng.integers(0, 255, size=(n, k // block, block // 2), dtype=np.uint8)
    nbits = helper.make_node("MatMulNBits", ["x", "w", "s"], ["y"], name="mm4", domain="com.microsoft",
                             K=k, N=n, bits=4, block_size=block)
    g = helper.make_graph([nbits], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])],
                          [numpy_helper.from_array(packed, "w"),
                           numpy_helper.from_array(np.ones(n * k // block, np.float32), "s")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])
    s = summarize_quantization(m)
    # accuracy_level unset (0): onnxruntime computes in float32 on the dequantized weight, no integer kernel
    assert s.text() == "weight-only: 1 MatMul float/uint4" and s.kernels == {}
    # int4 blocked DequantizeLinear weight on a MatMul, an fp8 Q/DQ pair on its output (opset 21); blocks
    # of 16 (onnxruntime fuses MatMulNBits from 16 up, powers of two; blocks of 8 stay DQ + MatMul)
    block = 16
    w4 = helper.make_tensor("w4", TensorProto.INT4, [k, n], rng.integers(-8, 8, size=k * n).tolist())
    nodes = [helper.make_node("DequantizeLinear", ["w4", "ws"], ["wf"], name="dq4", axis=0, block_size=block),
             helper.make_node("MatMul", ["x", "wf"], ["y0"], name="mm"),
             helper.make_node("QuantizeLinear", ["y0", "ys", "yz"], ["yq"], name="q8"),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["yd"], name="dq8"),
             helper.make_node("Relu", ["yd"], ["y"], name="relu")]
    inits = [w4, numpy_helper.from_array(np.ones((k // block, n), np.float32), "ws"),
             numpy_helper.from_array(np.array(0.1, np.float32), "ys"),
             helper.make_tensor("yz", TensorProto.FLOAT8E4M3FN, [], [0.0])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    onnx.checker.check_model(m)
    s = summarize_quantization(m)
    # the fp8 pair on its output keeps onnxruntime from fusing MatMulNBits (an int8 pair too; uint16 not)
    assert s.text() == "QDQ: 1 MatMul float/int4" and s.kernels == {}
    assert optimized_op_counts(m)["MatMulNBits"] == 0
    bare = onnx.ModelProto()  # the same MatMul writing the graph output: fused
    bare.CopyFrom(m)
    del bare.graph.node[2:]
    bare.graph.node[1].output[0] = "y"
    assert summarize_quantization(bare).kernels == {"mm": "QDQ -> MatMulNBits"}
    assert optimized_op_counts(bare)["MatMulNBits"] == 1
    eight = onnx.ModelProto()  # blocks of 8: not fused
    eight.CopyFrom(bare)
    eight.graph.node[0].attribute[1].i = 8
    eight.graph.initializer[1].CopyFrom(numpy_helper.from_array(np.ones((k // 8, n), np.float32), "ws"))
    assert summarize_quantization(eight).kernels == {} and optimized_op_counts(eight)["MatMulNBits"] == 0
    # relu reads a DequantizeLinear but writes the graph output, no QuantizeLinear: onnxruntime runs it in float
    assert s.node_dtypes == {"dq4": "int4", "mm": "int4", "q8": "float8e4m3fn", "dq8": "float8e4m3fn",
                             "relu": "float"}
    assert tensor_dtypes(m)["yq"] == "float8e4m3fn" and tensor_dtypes(m)["wf"] == "float"
    st = graph_structure(m, collapse_qdq=True)
    assert st.names == ["mm", "relu"] and edge_quantization(m, st).dtypes == ["float8e4m3fn"]


def test_diff_of_our_export_lists_exactly_its_qdq(exports):
    fp, qp = onnx.load(str(FLOAT)), onnx.load(str(exports["ours"]))
    d = diff_models(fp, qp)
    qs = {n.name: n for n in qp.graph.node if n.op_type == "QuantizeLinear"}
    dqs = {n.name for n in qp.graph.node if n.op_type == "DequantizeLinear"}
    pairs = [p for p in d.qdq if p.quantize]
    assert sorted(p.quantize for p in pairs) == sorted(qs) and len(pairs) == 7  # no pair on the float logits
    assert sorted(dq for p in d.qdq for dq in p.dequantize) == sorted(dqs) and len(dqs) == 15
    for p in pairs:
        assert p.tensor == qs[p.quantize].input[0] and p.dtype == _zp_type(qp, qs[p.quantize])
    lone = Counter(p.role for p in d.qdq if not p.quantize)
    assert lone == {"weight": 4, "bias": 4}  # 3 Conv + 1 Gemm, each a weight and an int32 bias
    assert [(m.float_node, m.how) for m in d.matches] == [(n.name, "name") for n in fp.graph.node]
    assert d.folded == [] and d.removed == [] and d.added == []
    assert {m.float_node for m in d.matches if m.status == "quantized"} >= {"/f/f.0/Conv", "/head/head.2/Gemm"}


def test_diff_of_onnxruntime_files(exports):
    fp = onnx.load(str(FLOAT))
    relus = [(n.name, "Relu") for n in fp.graph.node if n.op_type == "Relu"]
    for key in ("ort_QDQ", "ort_QOperator"):
        qp = onnx.load(str(exports[key]))
        d = diff_models(fp, qp)
        assert d.folded == relus and d.removed == []  # onnxruntime fuses each Relu into its Q
        assert sorted(p.quantize for p in d.qdq if p.quantize) == sorted(
            n.name for n in qp.graph.node if n.op_type == "QuantizeLinear")
        assert len(d.matches) == len(fp.graph.node) - len(relus)
    d = diff_models(fp, onnx.load(str(exports["ort_QOperator"])))
    assert {m.float_node: m.quant_op for m in d.matches if m.float_op == "Conv"} == {
        "/f/f.0/Conv": "QLinearConv", "/f/f.3/Conv": "QLinearConv", "/f/f.7/Conv": "QLinearConv"}
    d = diff_models(fp, onnx.load(str(exports["ort_dynamic"])))
    conv = {m.float_node: m.quant_op for m in d.matches if m.float_op in ("Conv", "Gemm")}
    assert conv == {"/f/f.0/Conv": "ConvInteger", "/f/f.3/Conv": "ConvInteger", "/f/f.7/Conv": "ConvInteger",
                    "/head/head.2/Gemm": "MatMulInteger"}


def _sqnr(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(10 * np.log10(np.sum(a * a) / np.sum((a - b) ** 2)))


def test_per_tensor_sqnr_equals_an_independent_run(exports):
    model = api.open_model(FLOAT)
    x = np.load(CALIB)["input"][:24]
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    for key in ("ours", "ort_QOperator"):
        qp = onnx.load(str(exports[key]))
        by_name = {n.name: n for n in qp.graph.node}
        # ours: the DQ of the Relu's Q/DQ pair; onnxruntime's QOperator: the QLinearConv (Relu fused) output
        tap = (by_name["/f/f.5/Relu_output_0_DequantizeLinear"] if key == "ours" else by_name["/f/f.3/Conv_quant"]).output[0]
        d = compare_models(model, qp, str(CALIB), samples=24)
        assert d.tensors["/f/f.5/Relu_output_0"] == tap
        f = ort.InferenceSession(api.add_outputs(model.proto, ["/f/f.5/Relu_output_0"]).SerializeToString())
        q = ort.InferenceSession(api.add_outputs(qp, [tap]).SerializeToString(), so)
        fv = f.run(["/f/f.5/Relu_output_0"], {"input": x})[0]
        qv = q.run([tap], {"input": x})[0]
        if qv.dtype != np.float32:  # QLinearConv output: dequantize with the file's scale and zero point
            inits = {i.name: numpy_helper.to_array(i) for i in qp.graph.initializer}
            node = next(n for n in qp.graph.node if n.output[0] == tap)
            qv = (qv.astype(np.float64) - inits[node.input[7]]) * inits[node.input[6]]
        assert d.sqnr["/f/f.5/Relu_output_0"] == pytest.approx(_sqnr(fv, qv), abs=1e-6)
        assert 25.0 < d.sqnr["/f/f.5/Relu_output_0"] < 60.0


@pytest.mark.slow
def test_ddddocr_summary(corpus):
    path = corpus / "ddddocr_common_old_int8" / "model.onnx"
    if not path.is_file():
        pytest.skip(f"corpus model not found at {path}")
    proto = onnx.load(str(path))
    ops = _ops(proto)
    s = summarize_quantization(proto)
    assert s.text() == (f"dynamic: {ops['ConvInteger']} Conv uint8/uint8, 1 LSTM uint8/int8, "
                        f"{ops['MatMulInteger']} MatMul uint8/uint8")
    # the INT marks are the nodes onnxruntime runs as integer kernels, by name: its optimized graph keeps the
    # ConvIntegers and the com.microsoft DynamicQuantizeLSTM (unmarked before) and fuses the MatMulInteger
    # with its DynamicQuantizeLinear into a DynamicQuantizeMatMul of the same name
    ran = ran_as(path, lambda op: op in ("ConvInteger", "MatMulInteger", "DynamicQuantizeMatMul", "DynamicQuantizeLSTM"))
    assert set(s.kernels) == set(ran)
    assert Counter(ran.values()) == {"ConvInteger": 21, "DynamicQuantizeLSTM": 1, "DynamicQuantizeMatMul": 1}
    assert Counter(s.kernels.values()) == {"ConvInteger": 21, "DynamicQuantizeLSTM": 1, "MatMulInteger": 1}


def test_unnamed_nodes_match_by_structure(tmp_path):
    """Nodes without names (common in exported files) match by op type and topology, one to one."""
    rng = np.random.default_rng(1)
    w1, w2 = rng.normal(size=(4, 2, 3, 3)).astype(np.float32), rng.normal(size=(4, 4, 1, 1)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]), helper.make_node("Sigmoid", ["a"], ["b"]),
             helper.make_node("Conv", ["b", "w2"], ["c"]), helper.make_node("Add", ["a", "c"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])],
                          [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    fp = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    src, out = tmp_path / "f.onnx", tmp_path / "q.onnx"
    onnx.save(fp, str(src))
    feeds = [{"x": rng.normal(size=(1, 2, 6, 6)).astype(np.float32)} for _ in range(4)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(feeds)

        def get_next(self):
            return next(self.it, None)

    quantize_static(str(src), str(out), Reader(), quant_format=QuantFormat.QDQ)
    qp = onnx.load(str(out))
    d = diff_models(fp, qp)
    # keys as the canvas names unnamed nodes: "<op_type>#<index in the file>"
    assert [m.float_node for m in d.matches] == ["Conv#0", "Sigmoid#1", "Conv#2", "Add#3"]
    by_key = {f"{n.op_type}#{i}" if not n.name else n.name: n for i, n in enumerate(qp.graph.node)}
    for m in d.matches:
        assert by_key[m.quant_node].op_type == m.float_op and m.how == "structure"
    assert d.removed == [] and d.folded == [] and d.added == []
    # the two Conv are told apart by what feeds them: the second reads the Sigmoid's output
    second = by_key[d.matches[2].quant_node]
    producer = {o: n for n in qp.graph.node for o in n.output}
    dq = producer[second.input[0]]
    assert producer[producer[dq.input[0]].input[0]].op_type == "Sigmoid"


def test_cli_compare_prints_and_writes_the_diff(exports, tmp_path, capsys):
    out = tmp_path / "diff.json"
    assert main(["compare", str(FLOAT), str(exports["ort_QOperator"]), "--data", str(CALIB), "--samples", "16",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    qp = onnx.load(str(exports["ort_QOperator"]))
    assert _ops(qp)["QuantizeLinear"] == 1  # onnxruntime's QOperator file quantizes the input once
    assert "; 1 Q/DQ pair inserted, 1 DequantizeLinear without a Q (0 weight/bias);" in text  # was "1 Q/DQ pairs"
    assert "folded or fused: 3\n  Relu /f/f.2/Relu (into /f/f.0/Conv_quant)\n" in text  # and the node it went into
    doc = json.loads(out.read_text())
    assert doc["counts"]["qdq_pairs"] == 1 and doc["counts"]["folded"] == 3
    gemm = next(m for m in doc["matches"] if m["float_node"] == "/head/head.2/Gemm")
    assert gemm["quant_op"] == "QGemm" and 25.0 < gemm["sqnr_db"] < 60.0
    # two quantized files (no float reference) are refused in one line
    assert main(["compare", str(exports["ours"]), str(exports["ort_QDQ"])]) == 2
    assert capsys.readouterr().err == (
        f"error: {exports['ours']} and {exports['ort_QDQ']} are both quantized; compare needs the float model first "
        "and its quantized file second. workbench-cli compare FLOAT.onnx QUANTIZED.onnx\n")


def test_sqnr_of_a_file_with_batch_fixed_to_one(exports, tmp_path):
    """A quantized file taking one row at a time runs row by row: the same SQNR as with a free batch."""
    model = api.open_model(FLOAT)
    qp = onnx.load(str(exports["ours"]))
    free = compare_models(model, qp, str(CALIB), samples=32).sqnr
    qp.graph.input[0].type.tensor_type.shape.dim[0].ClearField("dim_param")
    qp.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 1
    fixed = compare_models(model, qp, str(CALIB), samples=32).sqnr
    assert fixed.keys() == free.keys() and len(free) == 10
    for t, db in free.items():  # the float logits (QGemm's float output) move in the last bits with the batch
        assert fixed[t] == pytest.approx(db, abs=1e-4), t


@pytest.mark.slow
def test_render_draws_the_file_dtypes_and_the_diff(exports, tmp_path):
    """``render --colour dtype`` of a quantized file fills its nodes with the dtype colour of the file
    (uint8 here); ``render MODEL --compare QUANTIZED`` draws the quantized file in SQNR colours."""
    uint8_fill = (0xFF, 0xD5, 0x4F)  # colors.dtype_color("uint8")
    pictures = {}
    for name, args in (("file", [str(exports["ours"]), "--colour", "dtype"]),
                       ("float", [str(FLOAT), "--colour", "op"]),
                       ("diff", [str(FLOAT), "--compare", str(exports["ours"]), "--data", str(CALIB), "--samples", "16"])):
        out = tmp_path / f"{name}.png"
        assert main(["render", *args, "-o", str(out), "--expand", "9"]) == 0
        pictures[name] = np.asarray(Image.open(out).convert("RGB")).reshape(-1, 3)
    count = {k: int(np.all(v == uint8_fill, axis=1).sum()) for k, v in pictures.items()}
    assert count["file"] > 1000 and count["float"] == 0
    assert count["diff"] < count["file"] / 10  # only the u8 badges of the folded Q/DQ pairs
    # the diff picture fills the Conv with the SQNR colour of its output, measured on the same samples
    db = compare_models(api.open_model(FLOAT), onnx.load(str(exports["ours"])), str(CALIB), samples=16).node_sqnr()
    c = error_color(round(db["/f/f.3/Conv"] * 4) / 4)
    assert int(np.all(pictures["diff"] == (c.red(), c.green(), c.blue()), axis=1).sum()) > 1000


def _silu_qdq(sigmoid_output_quantized: bool) -> onnx.ModelProto:
    """DQ(x) -> Conv (DQ weight) -> Q/DQ -> y; SiLU z = y * Sigmoid(y) -> Q/DQ. With
    ``sigmoid_output_quantized`` the Sigmoid's output gets its own Q/DQ pair before the Mul."""
    u8 = TensorProto.UINT8
    inits = [numpy_helper.from_array(np.ones((2, 2, 1, 1), np.int8), "wq"),
             numpy_helper.from_array(np.array(0.1, np.float32), "s"),
             helper.make_tensor("z8", u8, [], [128]), helper.make_tensor("zw", TensorProto.INT8, [], [0])]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z8"], ["xq"], name="qx"),
             helper.make_node("DequantizeLinear", ["xq", "s", "z8"], ["xd"], name="dqx"),
             helper.make_node("DequantizeLinear", ["wq", "s", "zw"], ["w"], name="dqw"),
             helper.make_node("Conv", ["xd", "w"], ["c"], name="conv"),
             helper.make_node("QuantizeLinear", ["c", "s", "z8"], ["cq"], name="qc"),
             helper.make_node("DequantizeLinear", ["cq", "s", "z8"], ["y"], name="dqc")]
    if sigmoid_output_quantized:
        nodes += [helper.make_node("Sigmoid", ["y"], ["g"], name="sigmoid"),
                  helper.make_node("QuantizeLinear", ["g", "s", "z8"], ["gq"], name="qg"),
                  helper.make_node("DequantizeLinear", ["gq", "s", "z8"], ["gd"], name="dqg"),
                  helper.make_node("Mul", ["y", "gd"], ["m"], name="mul")]
    else:
        nodes += [helper.make_node("Sigmoid", ["y"], ["gd"], name="sigmoid"),
                  helper.make_node("Mul", ["y", "gd"], ["m"], name="mul")]
    nodes += [helper.make_node("QuantizeLinear", ["m", "s", "z8"], ["mq"], name="qm"),
              helper.make_node("DequantizeLinear", ["mq", "s", "z8"], ["out"], name="dqm")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 2, 4, 4])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    return m


def test_a_silu_fed_by_dequantize_linear_is_float_unless_its_sigmoid_is_quantized_too():
    """nudenet_320n quantized Conv-only keeps every SiLU's Sigmoid and Mul float (the Sigmoid's output
    has no Q/DQ pair, so onnxruntime fuses neither), yet the canvas painted all 57 pairs uint8 because
    each reads a DequantizeLinear. A node is integer only when every float input comes from a
    DequantizeLinear and every reader of its output is a QuantizeLinear."""
    plain = summarize_quantization(_silu_qdq(False)).node_dtypes
    assert (plain["conv"], plain["sigmoid"], plain["mul"]) == ("uint8", "float", "float")
    fused = summarize_quantization(_silu_qdq(True)).node_dtypes
    assert (fused["conv"], fused["sigmoid"], fused["mul"]) == ("uint8", "uint8", "uint8")
    with tempfile.TemporaryDirectory() as d:  # onnxruntime agrees: QLinearSigmoid / QLinearMul only in the second
        ops = []
        for model in (_silu_qdq(False), _silu_qdq(True)):
            so = ort.SessionOptions()
            so.optimized_model_filepath = os.path.join(d, "opt.onnx")
            ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
            ops.append({n.op_type for n in onnx.load(os.path.join(d, "opt.onnx")).graph.node})
    assert not {"QLinearSigmoid", "QLinearMul"} & ops[0] and {"QLinearSigmoid", "QLinearMul"} <= ops[1]


def _integer_kernel(op_type: str) -> bool:
    """An op of onnxruntime's optimized graph that computes on integers (QLinearConv, QLinearSigmoid, ...)."""
    return op_type.startswith("QLinear") or op_type in ("MatMulIntegerToFloat", "QGemm", "MatMulNBits")


@pytest.mark.parametrize("preset", ["cpu-u8s8", "s8s8", "a16w8", "fp8-e4m3", "w4-block"])
@pytest.mark.parametrize("name", ["digits_cnn", "digits_mlp", "digits_transformer", "nudenet_320n"])
def test_integer_kernel_marks_are_the_kernels_onnxruntime_runs(corpus, preset, name):
    """The summary's "QDQ -> kernel" marks (the canvas' INT tags) count exactly the fused kernels of
    onnxruntime's optimized graph, element-wise ones (QLinearSigmoid, QLinearAdd, ...) included: none for
    float8 and 16-bit units (DequantizeLinear + float op), MatMulNBits for integer MatMul weights beside
    float or 16-bit activations."""
    folder = corpus / name
    model = api.open_model(folder / ("model.onnx" if name == "nudenet_320n" else "model_opset17.onnx"))
    data = None if preset == "w4-block" else str(folder / "calib.npz")
    # s8s8 on x86: onnxruntime turns an int8 pair uint8 only when one node reads it (nudenet: 7 of 64
    # Convs fused, digits_transformer: 8 of 14); the marks follow
    proto = api.quantize(model, api.make_recipe(preset), data=data, samples=4 if name == "nudenet_320n" else 16,
                         latency_check=False).proto
    marks = Counter(v.removeprefix("QDQ -> ") for v in summarize_quantization(proto).kernels.values())
    with tempfile.TemporaryDirectory() as d:
        so = ort.SessionOptions()
        so.optimized_model_filepath = os.path.join(d, "opt.onnx")
        so.log_severity_level = 3
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED  # fusions, no NCHWc
        ort.InferenceSession(proto.SerializeToString(), so, providers=["CPUExecutionProvider"])
        ran = Counter(n.op_type for n in onnx.load(so.optimized_model_filepath).graph.node if _integer_kernel(n.op_type))
    assert marks == ran, (preset, name)
    if preset in ("fp8-e4m3",) or (preset == "a16w8" and name == "digits_cnn"):
        assert not marks


def test_qonnx_biases_are_read_as_biases_like_their_qdq_source(tmp_path):
    """The int32 bias Quants of a QONNX conversion were listed as weights (inspect said "weight
    onnx::Conv_33: int32"); the QDQ file they came from lists them as biases. Both now agree, tensor by tensor."""
    from workbench.core.inspection.quant_reader import read_quant_params

    model = api.open_model(EXAMPLE / "digits_cnn.onnx")
    qdq = tmp_path / "q.onnx"
    api.export(api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(EXAMPLE / "digits_cnn_calib.npz"),
                            samples=16), qdq)
    qonnx = tmp_path / "q.qonnx.onnx"
    assert main(["convert", str(qdq), str(qonnx), "--to", "qonnx"]) == 0
    roles = {}
    for path in (qdq, qonnx):
        roles[path] = sorted((p.role, p.dtype) for p in read_quant_params(onnx.load(str(path))) if p.role != "activation")
    assert roles[qdq] == roles[qonnx] and roles[qdq].count(("bias", "int32")) == 4


@pytest.mark.parametrize("name", ["digits_cnn", "digits_transformer"])
def test_marks_of_onnxruntime_int8_activation_exports(corpus, tmp_path, name):
    """onnxruntime's own quantize_static with QInt8 activations (per-channel QInt8 weights): its CPU
    provider fuses only the units whose int8 pairs it can turn uint8; the marks count those exactly."""
    from onnxruntime.quantization import QuantType

    folder = corpus / name
    src = folder / "model_opset17.onnx"
    x = np.load(folder / "calib.npz")["input"]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"input": x[i:i + 1]} for i in range(16)])

        def get_next(self):
            return next(self.it, None)

    out = tmp_path / "q.onnx"
    quantize_static(str(src), str(out), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    proto = onnx.load(str(out))
    marks = Counter(v.removeprefix("QDQ -> ") for v in summarize_quantization(proto).kernels.values())
    ran = optimized_op_counts(proto)
    assert marks == Counter({k: n for k, n in ran.items() if _integer_kernel(k)}), (marks, ran)
    assert sum(marks.values()) > 0


def test_per_node_fields_are_keyed_as_the_canvas_keys_nodes():
    """node_dtypes, kernels and compute use node_keys: a repeated or empty name is "<op_type>#<index>" (keyed by
    name, the two MatMulIntegers named "mm" were one entry and the unnamed one was "")."""
    from workbench.core.graph.layout import node_keys

    h = helper.make_node
    nodes = [h("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="dq"),
             h("MatMulInteger", ["xq", "w", "xz", "wz"], ["a"], name="mm"),
             h("MatMulInteger", ["xq", "w", "xz", "wz"], ["b"], name="mm"),
             h("MatMulInteger", ["xq", "w", "xz", "wz"], ["c"], name="")]
    inits = [numpy_helper.from_array(np.ones((4, 2), np.uint8), "w"), numpy_helper.from_array(np.array(3, np.uint8), "wz")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info(t, TensorProto.INT32, None) for t in "abc"], inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    s = summarize_quantization(proto)
    keys = node_keys(proto.graph.node)
    assert keys == ["dq", "mm", "MatMulInteger#2", "MatMulInteger#3"]
    assert s.kernels == {k: "MatMulInteger" for k in keys[1:]}
    assert s.compute == {k: "uint8/uint8" for k in keys[1:]}
    assert set(s.node_dtypes) == set(keys)


def test_shape_and_size_of_a_quantized_tensor_are_no_quantized_op_family():
    """The banner of onnxruntime's QOperator nudenet_320n listed '10 Shape' among its quantized ops: a Shape
    (or Size) reading a DequantizeLinear output reads its shape only. The Relu between the pairs (zero point
    128: no ReluQuantFusion) runs in float too, so nothing is listed, as onnxruntime's optimized graph says."""
    from onnx import TensorProto, helper, numpy_helper

    from workbench.core.inspection.quant_summary import summarize_quantization

    inits = [numpy_helper.from_array(np.float32(0.1), "s"), numpy_helper.from_array(np.uint8(128), "z")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="q"),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"], name="dq"),
             helper.make_node("Relu", ["d"], ["r"], name="relu"),
             helper.make_node("QuantizeLinear", ["r", "s", "z"], ["rq"], name="q2"),
             helper.make_node("DequantizeLinear", ["rq", "s", "z"], ["y"], name="dq2"),
             helper.make_node("Shape", ["d"], ["shape"], name="shape"),
             helper.make_node("Size", ["d"], ["size"], name="size")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
                               helper.make_tensor_value_info("shape", TensorProto.INT64, [2]),
                               helper.make_tensor_value_info("size", TensorProto.INT64, [])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    summary = summarize_quantization(model)
    assert summary.families == [] == _ort_families(model.SerializeToString())
    assert summary.families_text() == ""


@pytest.mark.parametrize("level, integer", [(None, False), (0, False), (1, False), (4, True)])
def test_matmul_nbits_is_an_integer_kernel_only_at_accuracy_level_4(level, integer):
    """The canvas marked every MatMulNBits "INT"; onnxruntime's CPU kernel computes in int8 only at
    accuracy_level 4 (matmul_nbits.cc GetComputeType), in float32 on the dequantized weight otherwise.
    Checked against onnxruntime: at levels 0 / 1 its output is the float32 product x @ W to float rounding,
    at level 4 it carries the error of x quantized to int8 per block."""
    m, x, w = matmul_nbits_model(level)
    s = summarize_quantization(m)
    assert s.kernels == ({"mm": "MatMulNBits"} if integer else {})
    assert s.compute == {"mm": "float/uint4"} and s.node_dtypes == {"mm": "uint4"}
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    y = sess.run(None, {"x": x})[0]
    err = float(np.abs(y - x @ w).max() / np.abs(x @ w).max())
    assert (err > 1e-4) if integer else (err < 1e-5), err


def test_dq_int4_matmul_fuses_to_matmul_nbits_at_accuracy_level_4(tmp_path):
    """A DequantizeLinear(int4, blocks of 32) -> MatMul that onnxruntime fuses at load: the fused MatMulNBits
    has accuracy_level 4 (the session option's default) and computes in int8, so the unit is marked INT;
    the same unit with the option set to 0 keeps float32 math."""
    k, n, block = 64, 8, 32
    rng = np.random.default_rng(1)
    q = rng.integers(-8, 8, size=(k, n))
    scales = rng.uniform(0.01, 0.05, size=(k // block, n)).astype(np.float32)
    nodes = [helper.make_node("DequantizeLinear", ["w4", "ws"], ["wf"], name="dq4", axis=0, block_size=block),
             helper.make_node("MatMul", ["x", "wf"], ["y"], name="mm")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, n])],
                          [helper.make_tensor("w4", TensorProto.INT4, [k, n], q.reshape(-1).tolist()),
                           numpy_helper.from_array(scales, "ws")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    assert summarize_quantization(m).kernels == {"mm": "QDQ -> MatMulNBits"}
    path, x = tmp_path / "m.onnx", rng.standard_normal((4, k)).astype(np.float32)
    onnx.save(m, path)
    ref = x @ (q.astype(np.float32) * np.repeat(scales, block, axis=0))
    for level, integer in (("4", True), (None, True), ("0", False)):
        so = ort.SessionOptions()
        so.optimized_model_filepath = str(tmp_path / f"opt{level}.onnx")
        if level is not None:
            so.add_session_config_entry("session.qdq_matmulnbits_accuracy_level", level)
        y = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        fused = [nd for nd in onnx.load(so.optimized_model_filepath).graph.node if nd.op_type == "MatMulNBits"]
        assert len(fused) == 1
        got = {a.name: a.i for a in fused[0].attribute}.get("accuracy_level", 0)
        assert got == (int(level) if level is not None else 4)
        err = float(np.abs(y - ref).max() / np.abs(ref).max())
        assert (err > 1e-4) if integer else (err < 1e-5), (level, err)


def _families_model() -> onnx.ModelProto:
    """Conv -> Relu -> MaxPool -> Reshape -> Transpose -> MatMul -> LayerNormalization -> Div -> Erf -> Mul (float)."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 4, 3, 3)).astype(np.float32) * 0.3, "cw"),
             numpy_helper.from_array(np.array([1, 8, 16], np.int64), "shape"),
             numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32) * 0.3, "mw"),
             numpy_helper.from_array(np.ones(8, np.float32), "g"), numpy_helper.from_array(np.zeros(8, np.float32), "b"),
             numpy_helper.from_array(np.float32(1.41), "two"), numpy_helper.from_array(np.float32(0.5), "half")]
    nodes = [helper.make_node("Conv", ["x", "cw"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Reshape", ["p", "shape"], ["rs"], name="reshape"),
             helper.make_node("Transpose", ["rs"], ["t"], name="transpose", perm=[0, 2, 1]),
             helper.make_node("MatMul", ["t", "mw"], ["mm"], name="matmul"),
             helper.make_node("LayerNormalization", ["mm", "g", "b"], ["ln"], name="ln", axis=-1),
             helper.make_node("Div", ["ln", "two"], ["dv"], name="div"),
             helper.make_node("Erf", ["dv"], ["er"], name="erf"),
             helper.make_node("Mul", ["er", "half"], ["y"], name="mul")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 8])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


_INTEGER_TYPES = {TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16, TensorProto.UINT16}


def _ort_families(path: Path | str | bytes) -> list[tuple[str, int]]:
    """Op families onnxruntime runs on integer data, read from its optimized graph: its integer kernels
    (QLinear<op> -> op) and the other nodes whose data input is an integer tensor (a QuantizeLinear or
    integer kernel output, followed through those nodes)."""
    with tempfile.TemporaryDirectory() as d:
        so = ort.SessionOptions()
        so.optimized_model_filepath = os.path.join(d, "opt.onnx")
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        ort.InferenceSession(path if isinstance(path, bytes) else str(path), so, providers=["CPUExecutionProvider"])
        m = onnx.load(so.optimized_model_filepath)
    integer = {i.name for i in m.graph.initializer if i.data_type in _INTEGER_TYPES}
    found: Counter = Counter()
    for n in m.graph.node:
        if n.op_type in ("QuantizeLinear", "DequantizeLinear"):
            integer.add(n.output[0]) if n.op_type == "QuantizeLinear" else None
            continue
        if n.op_type.startswith("QLinear"):
            found[n.op_type[len("QLinear"):]] += 1
            integer.add(n.output[0])
        elif n.input and n.input[0] in integer:
            found[n.op_type] += 1
            integer.update(n.output)
    return sorted(found.items(), key=lambda r: (-r[1], r[0]))


@pytest.mark.parametrize("fmt", [QuantFormat.QDQ, QuantFormat.QOperator])
def test_quantized_op_families_are_the_ops_onnxruntime_runs_on_integers(tmp_path, fmt):
    """The banner's "quantized ops" listed every op reading a DequantizeLinear output or writing a
    QuantizeLinear input, so the float LayerNormalization, Div and Erf between onnxruntime's Q/DQ pairs
    (minilm) counted. Now: integer kernels and pass-through ops on integer tensors only. Expected by hand
    (uint8 activations): QLinearConv (Relu folded), MaxPool / Reshape / Transpose on uint8 (their Q/DQ
    pairs dropped, or QOperator's uint8 tensors), QLinearMatMul, QLinearMul; and the same from onnxruntime's
    optimized graph."""
    src, out = tmp_path / "f.onnx", tmp_path / f"q_{fmt.name}.onnx"
    onnx.save(_families_model(), src)
    rng = np.random.default_rng(1)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter([{"x": rng.standard_normal((1, 4, 8, 8)).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.feeds, None)

    quantize_static(str(src), str(out), Reader(), quant_format=fmt, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8)
    m = onnx.load(out)
    assert {"LayerNormalization", "Div", "Erf"} <= {n.op_type for n in m.graph.node}
    expected = [("Conv", 1), ("MatMul", 1), ("MaxPool", 1), ("Mul", 1), ("Reshape", 1), ("Transpose", 1)]
    assert summarize_quantization(m).families == expected == _ort_families(out)
