"""The INT marks of element-wise QDQ units agree with the kernels onnxruntime makes of them.

The canvas marked only Conv / MatMul / Gemm units as integer kernels; onnxruntime also fuses
DequantizeLinear -> Sigmoid / Mul / Add / Concat / Softmax ... -> QuantizeLinear into QLinear* kernels
(our nudenet_320n export runs 52 QLinearSigmoid, 52 QLinearMul, 21 QLinearConcat, 14 QLinearAdd and
1 QLinearSoftmax beside its 59 QLinearConv). Each small model below is read by
``summarize_quantization`` and loaded in onnxruntime with its optimized graph saved: the element-wise
nodes we mark are the ones onnxruntime replaced by a QLinear kernel of the same name.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench import cli
from workbench.core.inspection.quant_summary import summarize_quantization

ELEM = {"uint8": TensorProto.UINT8, "int8": TensorProto.INT8, "uint16": TensorProto.UINT16}
SHAPE = [1, 8, 4, 4]


def _qdq(name: str, src: str, dtype: str, nodes: list, inits: list) -> str:
    """Q then DQ of float tensor ``src`` with ``dtype`` zero point; returns the DQ output."""
    zp = np.zeros((), {"uint8": np.uint8, "int8": np.int8, "uint16": np.uint16}[dtype])
    inits += [numpy_helper.from_array(np.float32(0.05), f"{name}_s"), numpy_helper.from_array(zp, f"{name}_z")]
    nodes.append(helper.make_node("QuantizeLinear", [src, f"{name}_s", f"{name}_z"], [f"{name}_q"], name=f"{name}_Q"))
    nodes.append(helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"], [f"{name}_d"],
                                  name=f"{name}_DQ"))
    return f"{name}_d"


def _model(op: str, in_types: list[str], out_type: str, *, output_is_graph_output: bool = False,
           extra_reader: bool = False, **attrs) -> onnx.ModelProto:
    nodes: list = []
    inits: list = []
    inputs = [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, SHAPE) for i in range(len(in_types))]
    if op == "Where":
        inputs.insert(0, helper.make_tensor_value_info("cond", TensorProto.BOOL, SHAPE))
    ins = [_qdq(f"in{i}", f"x{i}", t, nodes, inits) for i, t in enumerate(in_types)]
    if op == "Where":
        ins = ["cond"] + ins
    nodes.append(helper.make_node(op, ins, ["y"], name=f"the_{op}", **attrs))
    outputs = []
    if output_is_graph_output:
        outputs.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, None))
    out = _qdq("out", "y", out_type, nodes, inits)
    nodes.append(helper.make_node("Relu", [out], ["z"], name="after"))
    outputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, None))
    if extra_reader:
        nodes.append(helper.make_node("Abs", ["y"], ["w"], name="second_reader"))
        outputs.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, None))
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model


def _ort_kernels(model: onnx.ModelProto, tmp_path) -> set[str]:
    """Names of the nodes onnxruntime's optimized graph runs as QLinear element-wise kernels."""
    src, dst = tmp_path / "m.onnx", tmp_path / "opt.onnx"
    onnx.save(model, src)
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(dst)
    so.log_severity_level = 3
    ort.InferenceSession(str(src), so, providers=["CPUExecutionProvider"])
    return {n.name for n in onnx.load(str(dst)).graph.node
            if n.op_type.startswith("QLinear") and n.op_type != "QLinearConv"}


CASES = [
    ("Sigmoid", ["uint8"], "uint8", {}),
    ("Sigmoid", ["int8"], "int8", {}),
    ("Sigmoid", ["uint8"], "int8", {}),  # mixed 8-bit types are fused too
    ("Sigmoid", ["uint8"], "uint16", {}),  # a 16-bit output: float Sigmoid
    ("Sigmoid", ["uint16"], "uint16", {}),  # 16-bit: float Sigmoid
    ("LeakyRelu", ["uint8"], "uint8", {"alpha": 0.1}),
    ("Softmax", ["uint8"], "uint8", {"axis": -1}),
    ("GlobalAveragePool", ["uint8"], "uint8", {}),
    ("AveragePool", ["uint8"], "uint8", {"kernel_shape": [2, 2]}),
    ("Add", ["uint8", "uint8"], "uint8", {}),
    ("Add", ["int8", "int8"], "int8", {}),
    ("Mul", ["uint8", "uint8"], "uint8", {}),
    ("Mul", ["uint8", "int8"], "uint8", {}),
    ("Mul", ["uint8", "uint16"], "uint8", {}),  # one 16-bit input: float Mul
    ("Concat", ["uint8", "uint8", "uint8"], "uint8", {"axis": 1}),
    ("Where", ["uint8", "uint8"], "uint8", {}),
]


@pytest.mark.parametrize(("op", "in_types", "out_type", "attrs"), CASES,
                         ids=[f"{c[0]}-{'-'.join(c[1])}-{c[2]}" for c in CASES])
def test_marks_are_the_kernels_onnxruntime_makes(op, in_types, out_type, attrs, tmp_path):
    model = _model(op, in_types, out_type, **attrs)
    ours = {k for k, v in summarize_quantization(model).kernels.items() if v != "QDQ -> QLinearConv"}
    assert ours == _ort_kernels(model, tmp_path)


@pytest.mark.parametrize("variant", ["output_is_graph_output", "extra_reader"])
def test_a_unit_whose_output_is_read_elsewhere_is_not_marked(variant, tmp_path):
    model = _model("Sigmoid", ["uint8"], "uint8", **{variant: True})
    assert summarize_quantization(model).kernels == {}
    assert _ort_kernels(model, tmp_path) == set()


def test_fused_sigmoid_and_add_are_marked():
    """The rule is not empty: the plain uint8 units are marked, with their kernel's name."""
    assert summarize_quantization(_model("Sigmoid", ["uint8"], "uint8")).kernels == {"the_Sigmoid": "QDQ -> QLinearSigmoid"}
    assert summarize_quantization(_model("Add", ["uint8", "uint8"], "uint8")).kernels == {"the_Add": "QDQ -> QLinearAdd"}


@pytest.mark.slow
def test_nudenet_export_marks_every_kernel_onnxruntime_runs(corpus, tmp_path):
    """Our CLI's nudenet_320n export: every integer kernel of onnxruntime's optimized graph is marked
    (element-wise ones by name; onnxruntime renames its QLinearConv nodes, so those by count)."""
    folder = corpus / "nudenet_320n"
    out = tmp_path / "n.onnx"
    assert cli.main(["quantize", str(folder / "model.onnx"), "--data", str(folder / "calib.npz"), "--samples", "8",
                     "--no-auto", "--no-latency-check", "-o", str(out)]) == 0
    model = onnx.load(str(out))
    kernels = summarize_quantization(model).kernels
    src, dst = out, tmp_path / "opt.onnx"
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(dst)
    so.log_severity_level = 3
    ort.InferenceSession(str(src), so, providers=["CPUExecutionProvider"])
    opt = [n for n in onnx.load(str(dst)).graph.node if n.op_type.startswith("QLinear")]
    elementwise = {n.name: n.op_type for n in opt if n.op_type != "QLinearConv"}
    assert {k: v.removeprefix("QDQ -> ") for k, v in kernels.items() if not v.endswith("QLinearConv")} == elementwise
    assert sum(v.endswith("QLinearConv") for v in kernels.values()) == sum(n.op_type == "QLinearConv" for n in opt)
    assert {"QLinearSigmoid", "QLinearMul", "QLinearConcat", "QLinearAdd"} <= set(elementwise.values())
