"""Node tags of quantized biases: a folded bias DequantizeLinear was tagged "w:" like the weight ("in:i8 w:i8 w:i32"
on a Conv); it is "b:" now wherever the DQ feeds the op's bias input (Conv / Gemm input 2), weights keep "w:"."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from quant_bias_models import quantized_model

from workbench.core.graph.layout import bias_position, graph_structure


def _tags(proto: onnx.ModelProto) -> dict[str, str]:
    s = graph_structure(proto, collapse_qdq=True)
    return {s.names[i]: tag for i, tag in s.node_tags.items()}


def test_bias_dequantize_linear_is_tagged_b(tmp_path):
    """onnxruntime's QDQ file (int8 activations and weights, int32 biases): the Conv and the Gemm carry their bias
    as "b:i32"; the MatMul has no bias input, its weight stays "w:i8"."""
    proto = onnx.load(str(quantized_model(tmp_path, "QDQ")))
    assert _tags(proto) == {"conv": "in:i8 w:i8 b:i32", "gemm": "w:i8 b:i32", "mm": "w:i8 out:i8"}


def test_bias_quantized_at_run_time_is_tagged_b():
    """A weight and a bias each quantized at run time (float initializer -> QuantizeLinear -> DequantizeLinear, as
    onnxruntime writes weights held in Constant nodes): "w:" for the weight, "b:" for the bias."""
    f32 = np.float32
    inits = [numpy_helper.from_array(np.ones((2, 1, 1, 1), f32), "w"), numpy_helper.from_array(np.ones(2, f32), "b"),
             numpy_helper.from_array(np.array(0.1, f32), "s"), numpy_helper.from_array(np.array(0, np.int8), "zp")]
    h = helper.make_node
    nodes = [h("QuantizeLinear", ["w", "s", "zp"], ["wq"], name="qw"), h("DequantizeLinear", ["wq", "s", "zp"], ["wd"], name="dw"),
             h("QuantizeLinear", ["b", "s", "zp"], ["bq"], name="qb"), h("DequantizeLinear", ["bq", "s", "zp"], ["bd"], name="db"),
             h("Conv", ["x", "wd", "bd"], ["y"], name="conv")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 2, 2])], inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    assert _tags(proto) == {"conv": "w:i8 b:i8"}


@pytest.mark.parametrize(("op", "position"), [("Conv", 2), ("ConvTranspose", 2), ("Gemm", 2), ("LSTM", 3),
                                              ("QLinearConv", 8), ("QGemm", 6), ("MatMul", None), ("Add", None),
                                              ("LayerNormalization", 2), ("BatchNormalization", 2)])
def test_bias_positions(op, position):
    assert bias_position(op) == position


def test_normalization_bias_is_tagged_b(tmp_path):
    """onnxruntime's QDQ file quantizes LayerNormalization's scale (int8) and bias (int32, scale input_scale *
    scale_scale), as it does BatchNormalization's and InstanceNormalization's: the LayerNormalization read
    "w:i8 w:i32", the weight tag on its bias; now "w:i8 b:i32"."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), "mw"),
             numpy_helper.from_array(rng.standard_normal(8).astype(np.float32) + 1, "ls"),
             numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "lb"),
             numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), "mw2")]
    nodes = [helper.make_node("MatMul", ["x", "mw"], ["a"], name="mm"),
             helper.make_node("LayerNormalization", ["a", "ls", "lb"], ["l"], name="ln", axis=-1),
             helper.make_node("MatMul", ["l", "mw2"], ["y"], name="mm2")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "float.onnx")

    class Rows(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"x": rng.standard_normal((1, 4, 8)).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.it, None)

    quantize_static(str(tmp_path / "float.onnx"), str(tmp_path / "qdq.onnx"), Rows(), quant_format=QuantFormat.QDQ)
    proto = onnx.load(str(tmp_path / "qdq.onnx"))
    bias_dq = next(n for n in proto.graph.node if n.op_type == "DequantizeLinear" and n.output[0] == "lb")
    assert bias_dq.input[0] in {t.name for t in proto.graph.initializer if t.data_type == TensorProto.INT32}
    assert _tags(proto)["ln"] == "w:i8 b:i32"
