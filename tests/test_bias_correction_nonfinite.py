"""Bias correction with NaN / Inf in the calibration data: calibration leaves non-finite values out of its
ranges, but the Conv input means summed them, so every corrected bias downstream became NaN and quantize
refused the bundled example ("weight 'onnx::Conv_33' holds 16 NaN/Inf values; it cannot be quantized. Fix
the weight in the model"), blaming a model that holds no NaN. The means now leave out the samples whose
tensor is not finite, as the ranges do."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from bundled_example import EXAMPLE
from onnx import numpy_helper

from workbench.cli import main


def _biases(path: Path) -> dict[str, np.ndarray]:
    """The int32 Conv biases of a QDQ file, dequantized (name -> float64 array)."""
    model = onnx.load(str(path))
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    out = {}
    for node in model.graph.node:
        if node.op_type == "DequantizeLinear" and inits.get(node.input[0], np.zeros(0)).dtype == np.int32:
            out[node.output[0]] = inits[node.input[0]].astype(np.float64) * inits[node.input[1]].astype(np.float64)
    return out


def test_a_nan_sample_leaves_the_corrected_biases_of_the_other_samples(tmp_path, capsys):
    with np.load(EXAMPLE / "digits_cnn_calib.npz") as z:
        (name,) = z.files
        rows = z[name][:32].copy()
    bad = np.insert(rows, 5, np.nan, axis=0)  # a sample of NaN between the 32 finite ones
    np.savez(tmp_path / "bad.npz", **{name: bad})
    np.savez(tmp_path / "good.npz", **{name: rows})
    recipe = tmp_path / "bc.json"
    recipe.write_text(json.dumps({"preset": "cpu-u8s8", "bias_correction": True}))
    common = [str(EXAMPLE / "digits_cnn.onnx"), "--recipe", str(recipe), "--no-auto", "--no-latency-check"]
    assert main(["quantize", *common, "--data", str(tmp_path / "bad.npz"), "-o", str(tmp_path / "bad.onnx")]) == 0
    err = capsys.readouterr().err
    assert "holds 16 NaN/Inf values" not in err and "sample 5" in err  # the data's NaN said, not the model's
    assert main(["quantize", *common, "--data", str(tmp_path / "good.npz"), "-o", str(tmp_path / "good.onnx")]) == 0
    bad_b, good_b = _biases(tmp_path / "bad.onnx"), _biases(tmp_path / "good.onnx")
    assert len(good_b) == 4 and bad_b.keys() == good_b.keys()  # the 4 Conv / Gemm biases of digits_cnn
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"preset": "cpu-u8s8"}))
    assert main(["quantize", str(EXAMPLE / "digits_cnn.onnx"), "--recipe", str(plain), "--no-auto",
                 "--no-latency-check", "--data", str(tmp_path / "good.npz"), "-o", str(tmp_path / "plain.onnx")]) == 0
    assert any(not np.array_equal(good_b[k], v) for k, v in _biases(tmp_path / "plain.onnx").items())  # corrected
    for key, value in good_b.items():
        assert np.all(np.isfinite(bad_b[key]))
        np.testing.assert_allclose(bad_b[key], value, rtol=1e-6, atol=1e-9)



def test_a_conv_whose_input_the_model_makes_infinite_stays_float(tmp_path, capsys):
    """The other way a mean could be non-finite: a Log of a 0 in finite data gives -inf into a Conv. The guard
    keeps that Conv float (no integer grid holds -inf), so bias correction never sees it; quantize succeeds."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.normal(size=(4, 2, 3, 3)) * 0.3).astype(np.float32), "w")
    b = numpy_helper.from_array(np.array([0.1, -0.2, 0.3, 0.05], np.float32), "b")
    graph = helper.make_graph(
        [helper.make_node("Log", ["x"], ["l"], name="log"),
         helper.make_node("Conv", ["l", "w", "b"], ["y"], name="conv", pads=[1, 1, 1, 1])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 2, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 4, 6, 6])], [w, b])
    model = tmp_path / "log_conv.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(model))
    x = rng.uniform(0.5, 2.0, size=(16, 2, 6, 6)).astype(np.float32)
    x[3, 0, 2, 2] = 0.0  # finite data; the model computes -inf from it
    np.savez(tmp_path / "x.npz", x=x)
    recipe = tmp_path / "bc.json"
    recipe.write_text(json.dumps({"preset": "cpu-u8s8", "bias_correction": True}))
    out = tmp_path / "q.onnx"
    assert main(["quantize", str(model), "--data", str(tmp_path / "x.npz"), "--recipe", str(recipe), "--no-auto",
                 "--no-latency-check", "-o", str(out)]) == 0
    assert "conv: kept in float: tensor 'l' is NaN/Inf" in capsys.readouterr().err
    assert [n.op_type for n in onnx.load(str(out)).graph.node] == ["Log", "Conv"]
