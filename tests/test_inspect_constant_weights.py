"""Weights held in Constant nodes of an already-quantized file are weights: onnxruntime's
``quantize_static`` leaves a weight it finds in a Constant node float and puts a QuantizeLinear ->
DequantizeLinear pair after it (quantized at run time, with the activation dtype). ``inspect`` listed
those as activations and the canvas tagged the consumer "in:u8" as if it read a quantized graph input."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main
from workbench.core import api
from workbench.core.graph.layout import graph_structure
from workbench.core.inspection.quant_reader import read_quant_params


def _const(name: str, value: np.ndarray) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(value, name), name=f"c_{name}")


def _pair(x: str, dtype, zp: int, scale: float) -> list[onnx.NodeProto]:
    """Scale and zero point Constants, then x -> QuantizeLinear -> DequantizeLinear -> x_dq."""
    return [_const(f"{x}_s", np.array(scale, np.float32)), _const(f"{x}_z", np.array(zp, dtype)),
            helper.make_node("QuantizeLinear", [x, f"{x}_s", f"{x}_z"], [f"{x}_q"], name=f"q_{x}"),
            helper.make_node("DequantizeLinear", [f"{x}_q", f"{x}_s", f"{x}_z"], [f"{x}_dq"], name=f"dq_{x}")]


def _runtime_quantized(path) -> None:
    """onnxruntime's layout for Constant weights: Conv and MatMul whose float weights (Constant nodes)
    pass a uint8 Q -> DQ pair like the input x; and an int8 weight in a Constant node feeding a
    DequantizeLinear (the other way a Constant weight arrives)."""
    rng = np.random.default_rng(0)
    nodes = [_const("w", rng.normal(size=(4, 3, 3, 3)).astype(np.float32)),
             _const("m", rng.normal(size=(4, 5)).astype(np.float32)),
             _const("k", rng.integers(-100, 100, (5, 2)).astype(np.int8)), _const("k_s", np.array(0.01, np.float32)),
             *_pair("x", np.uint8, 128, 0.02), *_pair("w", np.uint8, 130, 0.02), *_pair("m", np.uint8, 120, 0.015),
             helper.make_node("DequantizeLinear", ["k", "k_s"], ["k_dq"], name="dq_k"),
             helper.make_node("Conv", ["x_dq", "w_dq"], ["y"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("MatMul", ["y", "m_dq"], ["z"], name="mm"),
             helper.make_node("MatMul", ["z", "k_dq"], ["out"], name="mm2")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 5, 4])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4, 5, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="onnxruntime.quantization")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))


def test_constant_weights_read_as_weights(tmp_path):
    path = tmp_path / "ort_constants.onnx"
    _runtime_quantized(path)
    ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])  # a file onnxruntime runs
    raw = onnx.load(str(path))
    for proto in (raw, api.open_model(path).proto):  # as the file holds it, and with the Constants lifted
        roles = {p.tensor: (p.role, p.dtype) for p in read_quant_params(proto)}
        assert roles == {"x_q": ("activation", "uint8"), "w_q": ("weight", "uint8"), "m_q": ("weight", "uint8"),
                         "k": ("weight", "int8")}
    s = graph_structure(api.open_model(path).proto, collapse_qdq=True)
    assert {s.names[i]: tag for i, tag in s.node_tags.items()} == {"conv": "in:u8 w:u8", "mm": "w:u8", "mm2": "w:i8"}


def test_inspect_lists_constant_weights_as_weights(tmp_path, capsys):
    path = tmp_path / "ort_constants.onnx"
    _runtime_quantized(path)
    assert main(["inspect", str(path)]) == 0
    lines = [ln.strip() for ln in capsys.readouterr().out.splitlines()]
    assert "q_w: weight w_q: uint8 per_tensor; scale 0.02; zero_point 130" in lines
    assert "q_m: weight m_q: uint8 per_tensor; scale 0.015; zero_point 120" in lines
    assert "q_x: activation x_q: uint8 per_tensor; scale 0.02; zero_point 128" in lines
