"""The banner's quantized op families of int8 / uint8 QDQ files equal the ops onnxruntime's optimized graph runs
on integers: its QDQ propagation, x86 int8 -> uint8 pairs and DropQDQ / Split rules
(:mod:`workbench.core.inspection.qdq_drop`), on a small YOLO-like model built here and on nudenet_320n."""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
from qdq_helpers import ort_rows_reader

from workbench.core.inspection.quant_summary import summarize_quantization

_INTEGER = {TensorProto.INT8, TensorProto.UINT8, TensorProto.INT16, TensorProto.UINT16}


def ort_integer_nodes(path: Path) -> tuple[list[tuple[str, int]], set[str]]:
    """(op families, names of the file's data-movement nodes) onnxruntime runs on integers, read from its
    optimized graph (ORT_ENABLE_EXTENDED: every QDQ rule, no hardware layout Transposes): a QLinear<op> counts
    as <op>, another node counts when its input 0 is an integer tensor (an integer initializer, a
    QuantizeLinear or QLinear output, or the output of a node so counted). GatherSliceToSplitFusion is off so
    each Slice keeps its name."""
    with tempfile.TemporaryDirectory() as d:
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        so.optimized_model_filepath = os.path.join(d, "opt.onnx")
        ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"],
                             disabled_optimizers=["GatherSliceToSplitFusion"])
        m = onnx.load(so.optimized_model_filepath)
    integer = {i.name for i in m.graph.initializer if i.data_type in _INTEGER}
    families, names = Counter(), set()
    for n in m.graph.node:
        if n.op_type in ("QuantizeLinear", "DequantizeLinear"):
            integer.update(n.output if n.op_type == "QuantizeLinear" else ())
        elif n.op_type.startswith("QLinear"):
            families[n.op_type[len("QLinear"):]] += 1
            integer.add(n.output[0])
        elif n.input and n.input[0] in integer and n.op_type not in ("Shape", "Size"):
            families[n.op_type] += 1
            names.add(n.name)
            integer.update(n.output)
    return sorted(families.items(), key=lambda r: (-r[1], r[0])), names


def _ours(proto: onnx.ModelProto) -> set[str]:
    """Names of the nodes the summary counts as data-movement ops on quantized data."""
    from workbench.core.inspection import quant_summary as qs

    g = qs._Graph(proto, qs.read_quant_params(proto))
    return {n.name for n in proto.graph.node if n.op_type != "Shape" and qs._on_quantized_data(g, n)}


def _c2f_sppf() -> onnx.ModelProto:
    """A YOLOv8-like float model: Conv -> SiLU -> Split (one half to a Concat, the other through a Conv to it
    too), Conv, three chained MaxPool (SPPF: each read by the next and by a Concat), Conv, Reshape whose shape
    is read from its own input's Shape, Transpose, Slice, Mul."""
    rng = np.random.default_rng(0)

    def w(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)  # noqa: E731
    inits = [w("w0", 8, 4, 3, 3), w("w1", 4, 4, 3, 3), w("w2", 8, 12, 1, 1), w("w3", 8, 32, 1, 1),
             i64("split", [4, 4]), i64("i0", 0), i64("ax0", [0]), i64("c8", [8]), i64("minus1", [-1]),
             i64("s0", [0]), i64("s4", [4]), i64("ax1", [1]), numpy_helper.from_array(np.float32(0.5), "half")]
    h = helper.make_node
    nodes = [h("Conv", ["x", "w0"], ["c0"], name="conv0", pads=[1, 1, 1, 1]),
             h("Sigmoid", ["c0"], ["s0o"], name="sig0"), h("Mul", ["c0", "s0o"], ["a0"], name="silu0"),
             h("Split", ["a0", "split"], ["p0", "p1"], name="split", axis=1),
             h("Conv", ["p1", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             h("Concat", ["p0", "p1", "c1"], ["cat0"], name="cat0", axis=1),
             h("Conv", ["cat0", "w2"], ["c2"], name="conv2"),
             h("MaxPool", ["c2"], ["m0"], name="pool0", kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
             h("MaxPool", ["m0"], ["m1"], name="pool1", kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
             h("MaxPool", ["m1"], ["m2"], name="pool2", kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
             h("Concat", ["c2", "m0", "m1", "m2"], ["cat1"], name="cat1", axis=1),
             h("Conv", ["cat1", "w3"], ["c3"], name="conv3"),
             h("Shape", ["c3"], ["shp"], name="shape"), h("Gather", ["shp", "i0"], ["b"], name="gather"),
             h("Unsqueeze", ["b", "ax0"], ["b1"], name="unsq"),
             h("Concat", ["b1", "c8", "minus1"], ["newshape"], name="cat_shape", axis=0),
             h("Reshape", ["c3", "newshape"], ["r"], name="reshape"),
             h("Transpose", ["r"], ["t"], name="transpose", perm=[0, 2, 1]),
             h("Slice", ["t", "s0", "s4", "ax1"], ["sl"], name="slice"),
             h("Mul", ["sl", "half"], ["y"], name="mul")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _quantized_as_ort_runs_it(src: Path, out: Path, input_name: str, rows: np.ndarray,
                              activation: QuantType) -> tuple[onnx.ModelProto, list[tuple[str, int]], set[str]]:
    """``src`` quantized by onnxruntime's quantize_static (QDQ, ``activation`` activations, int8 weights, one
    calibration row of ``rows`` a feed) to ``out``; checks that the summary's data-movement nodes and op families
    are those onnxruntime runs on integers (:func:`ort_integer_nodes`), and returns (the file, its families,
    those nodes' names)."""
    quantize_static(str(src), str(out), ort_rows_reader(input_name, rows), quant_format=QuantFormat.QDQ,
                    activation_type=activation, weight_type=QuantType.QInt8)
    proto = onnx.load(out)
    families, names = ort_integer_nodes(out)
    assert _ours(proto) == names
    assert summarize_quantization(proto).families == families
    return proto, families, names


@pytest.mark.parametrize("activation", [QuantType.QInt8, QuantType.QUInt8])
def test_families_of_a_built_qdq_model_are_the_ops_onnxruntime_runs_on_integers(tmp_path, activation):
    """int8 activations: the Split's input pair becomes uint8 (one reader) while its output pairs, each read by
    two nodes, stay int8, so onnxruntime runs it in float; the SPPF MaxPools between shared int8 pairs run on
    int8. The summary listed the Split and left the int8 MaxPools out. uint8: all of them on uint8."""
    src, out = tmp_path / "f.onnx", tmp_path / f"q_{activation.name}.onnx"
    onnx.save(_c2f_sppf(), src)
    rows = np.random.default_rng(1).standard_normal((4, 4, 16, 16)).astype(np.float32)
    proto, families, names = _quantized_as_ort_runs_it(src, out, "x", rows, activation)
    summary = summarize_quantization(proto)
    assert summary.as_kernels == {("Conv", f"{activation.name[1:].lower()}/int8"): dict(families)["Conv"]}
    if activation == QuantType.QInt8:
        assert "split" not in names and {"pool0", "pool1"} <= names
    else:
        assert {"split", "pool0", "pool1", "pool2", "reshape", "transpose", "slice"} <= names


@pytest.mark.slow
@pytest.mark.parametrize("activation", [QuantType.QInt8, QuantType.QUInt8])
def test_nudenet_qdq_families_are_the_ops_onnxruntime_runs_on_integers(corpus, tmp_path, activation):
    """onnxruntime's quantize_static of nudenet_320n (QDQ, 2 calibration rows): the banner listed 9 Split,
    7 Unsqueeze, 3 Transpose and no MaxPool for int8 activations where onnxruntime runs 1 Split, 6 Unsqueeze,
    6 Expand and 2 MaxPool on integers; now every node and family is onnxruntime's. Its summary read
    'QDQ: 64 Conv int8/int8' with 57 of them run as DequantizeLinear + float Conv; it now says so."""
    model = corpus / "nudenet_320n" / "model.onnx"
    out = tmp_path / "q.onnx"
    rows = np.load(corpus / "nudenet_320n" / "calib.npz")
    rows = rows[list(rows.keys())[0]][:2]
    proto, families, names = _quantized_as_ort_runs_it(model, out, "images", rows, activation)
    summary = summarize_quantization(proto)
    convs = dict(families)["Conv"]  # QLinearConv nodes onnxruntime made: 7 of 64 for int8 activations
    note = "" if convs == 64 else f" ({convs} integer kernels, {64 - convs} in float)"
    assert summary.text() == f"QDQ: 64 Conv {activation.name[1:].lower()}/int8{note}"
    assert (convs < 64) == (activation == QuantType.QInt8)
