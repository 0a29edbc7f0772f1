"""Bias correction with a per-block weight: the recipe choice corrects every variant it scores, and a Conv
whose weight was per_block (an override) crashed it with 'cannot reshape array of size 144 into shape
(1,1,1,1)': the quantized weight was dequantized without its DequantizeLinear's block_size."""

from __future__ import annotations

import numpy as np
import onnx
from bundled_example import EXAMPLE_MODEL
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from workbench.cli import main
from workbench.core.transforms.bias_correction import quantized_weights


def _per_block_dq_model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    q = rng.integers(-128, 128, size=(4, 8, 3, 3), dtype=np.int8)
    scale = rng.uniform(0.01, 0.1, size=(4, 2, 3, 3)).astype(np.float32)  # blocks of 4 along axis 1
    zp = np.zeros((4, 2, 3, 3), dtype=np.int8)
    inits = [numpy_helper.from_array(q, "w_q"), numpy_helper.from_array(scale, "w_s"),
             numpy_helper.from_array(zp, "w_zp"),
             numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")]
    nodes = [helper.make_node("DequantizeLinear", ["w_q", "w_s", "w_zp"], ["w"], axis=1, block_size=4),
             helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 8, 5, 5])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def test_a_per_block_weight_dequantizes_as_dequantizelinear_does():
    model = _per_block_dq_model()
    expected = ReferenceEvaluator(model).run(["w"], {"x": np.zeros((1, 8, 5, 5), np.float32)})[0]
    got = quantized_weights(model)["conv"].value()
    assert got.shape == (4, 8, 3, 3)
    np.testing.assert_array_equal(got, expected.astype(np.float64))


def test_quantize_with_a_per_block_conv_weight_and_the_recipe_choice(tmp_path, capsys):
    recipe = tmp_path / "r.json"
    recipe.write_text('{"overrides": {"/f/f.0/Conv": {"weight": {"granularity": "per_block", "block_size": 4}}}}')
    data = tmp_path / "calib.npz"
    np.savez(data, input=np.random.default_rng(1).uniform(0, 1, (16, 1, 8, 8)).astype(np.float32))
    out = tmp_path / "out.onnx"
    code = main(["quantize", str(EXAMPLE_MODEL), "--recipe", str(recipe), "--data", str(data), "-o", str(out),
                 "--no-latency-check"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "Traceback" not in err and "recipe choice:" in err
    written = onnx.load(out)
    blocked = [n for n in written.graph.node if n.op_type == "DequantizeLinear"
               and any(a.name == "block_size" and a.i == 4 for a in n.attribute)]
    assert len(blocked) == 1
