"""The note for a weight scale raised so an int32 bias fits says which weight and bias, on which channels, from
what scale to what, and why, instead of a ratio: ppocrv4_rec printed 'their weight scale was raised x4.11e+26'
for near-zero channels, a factor that tells a user nothing (now 'channel 72: 5.66e-17 -> 2.28e-08')."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.formats.qparams import QParams
from workbench.core.issues import IssueCode
from workbench.core.writers.int32_bias import quantize_bias, raised_scales


def _conv(folder, tiny: float, bias: bool):
    rng = np.random.default_rng(2)
    w = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    w[1] *= tiny
    inits = [numpy_helper.from_array(w, "w")] + ([numpy_helper.from_array(np.array([0.1, 5.0], np.float32), "b")]
                                                 if bias else [])
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"] + (["b"] if bias else []), ["y"], name="conv")],
                              "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2, 6, 6])], inits)
    path = folder / f"conv_{bias}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    np.savez(folder / "calib.npz", x=rng.standard_normal((8, 3, 8, 8)).astype(np.float32))
    return api.quantize(api.open_model(path), api.make_recipe("cpu-u8s8"), data=folder / "calib.npz")


def _weight_scale(res) -> np.ndarray:
    inits = {i.name: numpy_helper.to_array(i) for i in res.proto.graph.initializer}
    return next(v for k, v in inits.items() if k.startswith("w_scale"))


@pytest.mark.parametrize("tiny", [1e-20, 1e-7])
def test_the_note_names_the_tensors_and_both_scales(tmp_path, tiny):
    res = _conv(tmp_path, tiny, bias=True)
    before = _weight_scale(_conv(tmp_path, tiny, bias=False))[1]  # the same weight without a bias to hold
    after = _weight_scale(res)[1]
    assert after > before
    found = [(i.severity, i.message) for i in res.issues if i.code == IssueCode.BIAS_OVERFLOW]
    change = f"channel 1: {before:.3g} -> {after:.3g}"
    if tiny == 1e-20:
        assert found == [("info", "weight 'w' is near zero on output channels [1] (at most 1e-09 of the layer's "
                          "largest: those channels output their bias alone), so their weight scale was too small to "
                          "hold bias 'b' in int32 (bias scale = input scale x weight scale); it was raised to the "
                          f"smallest scale that holds the bias ({change}). The bias is kept, not clipped.")]
    else:
        assert found == [("warning", "int32 bias 'b' would overflow on output channels [1] (bias scale = input scale "
                          "x weight scale): the scale of weight 'w' was raised so the bias fits "
                          f"({change}); those channels' weights round more coarsely.")]
    assert not any(" x1" in m or "e+" in m for _, m in found)  # no ratio printed


def test_raised_scales_per_tensor_and_many_channels():
    b = np.full(5, 1.0, np.float32)
    per_tensor = QParams(np.float32(1e-12), np.int8(0), "int8", None, None)
    res = quantize_bias(b, np.float32(0.01), per_tensor, "Conv", np.empty(0, np.float32))
    new = float(res.weight_qparams.scale)
    assert raised_scales(per_tensor, res, "Conv") == f"1e-12 -> {new:.3g} (per tensor)"
    per_channel = QParams(np.full(5, 1e-12, np.float32), np.zeros(5, np.int8), "int8", 0, None)
    res = quantize_bias(b, np.float32(0.01), per_channel, "Conv", np.empty(0, np.float32))
    new = float(res.weight_qparams.scale[0])
    assert raised_scales(per_channel, res, "Conv") == (
        f"channel 0: 1e-12 -> {new:.3g}, channel 1: 1e-12 -> {new:.3g}, channel 2: 1e-12 -> {new:.3g}, ... (5 channels)")
