"""A tiny float model with biases (Conv with bias -> Relu -> Flatten -> Gemm with bias -> MatMul) and its
onnxruntime ``quantize_static`` files, QDQ or QOperator, for the tests of how int32 biases are tagged and listed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static


def float_model(path: Path) -> Path:
    """Write the float model to ``path``: input x [1, 3, 4, 4] float32, output y [1, 6]; nodes conv, relu, flat,
    gemm, mm."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "cw"),
             numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "cb"),
             numpy_helper.from_array(rng.standard_normal((5, 64)).astype(np.float32), "gw"),
             numpy_helper.from_array(rng.standard_normal(5).astype(np.float32), "gb"),
             numpy_helper.from_array(rng.standard_normal((5, 6)).astype(np.float32), "mw")]
    nodes = [helper.make_node("Conv", ["x", "cw", "cb"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Flatten", ["r"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "gw", "gb"], ["g"], name="gemm", transB=1),
             helper.make_node("MatMul", ["g", "mw"], ["y"], name="mm")]
    graph = helper.make_graph(nodes, "biases", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


class _Rows(CalibrationDataReader):
    def __init__(self):
        rng = np.random.default_rng(1)
        self.it = iter([{"x": rng.standard_normal((1, 3, 4, 4)).astype(np.float32)} for _ in range(4)])

    def get_next(self):
        return next(self.it, None)


def quantized_model(folder: Path, fmt: str, per_channel: bool = False) -> Path:
    """onnxruntime's ``quantize_static`` of :func:`float_model` in ``folder``: ``fmt`` "QDQ" or "QOperator"
    (QLinearConv with input B, QGemm with input C: int32 biases), 4 random calibration rows."""
    src = float_model(folder / "float.onnx")
    out = folder / f"{fmt}{'_pc' if per_channel else ''}.onnx"
    quantize_static(str(src), str(out), _Rows(), quant_format=getattr(QuantFormat, fmt), per_channel=per_channel)
    return out
