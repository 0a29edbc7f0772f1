"""Bias correction (Nagel et al. 2019, section 4.2) on tiny Conv models: the analytic shift equals the
measured mean output change of rounded weights, and folding it into the bias removes the shift."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.model.load import prepare_proto
from workbench.core.recipe.spec import PartialSpec, Rule
from workbench.core.runtime.session import make_session
from workbench.core.transforms.bias_correction import (
    bias_shifts,
    conv_output_shift,
    conv_output_shifts,
    corrected_proto,
    dequantized_weights,
)


def _conv_model(w: np.ndarray, b: np.ndarray, group: int = 1, pads=(1, 1, 1, 1)) -> onnx.ModelProto:
    cin = w.shape[1] * group
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", group=group, pads=list(pads))
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, cin, 5, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(proto, x):
    return make_session(proto, optimize=False).run(["y"], {"x": x})[0].astype(np.float64)


def _data(rng, n, cin):
    # inputs with a large positive mean: the regime where the weight-rounding shift is visible
    return (rng.random((n, cin, 5, 6)) * 2.0 + 1.0).astype(np.float32)


def test_conv_output_shift_matches_measured_mean_with_padding_and_groups():
    rng = np.random.default_rng(0)
    w = rng.normal(size=(6, 2, 3, 3)).astype(np.float32)
    dw = (rng.normal(size=w.shape) * 0.01).astype(np.float32)
    x = _data(rng, 16, 4)
    b = np.zeros(6, np.float32)
    measured = (_run(_conv_model(w + dw, b, group=2), x) - _run(_conv_model(w, b, group=2), x)).mean(axis=(0, 2, 3))
    node = _conv_model(w, b, group=2).graph.node[0]
    shift = conv_output_shift(node, dw.astype(np.float64), x.astype(np.float64).mean(axis=0, keepdims=True))
    np.testing.assert_allclose(shift, measured, rtol=1e-4, atol=1e-6)


def _shift_alone(node, dw, mean_x) -> np.ndarray:
    """The shift from a session of this one Conv (how each term was computed before they shared a session)."""
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name="shift")
    conv.attribute.extend(node.attribute)
    graph = helper.make_graph([conv], "alone", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(dw.astype(np.float32), "w")])
    y = make_session(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])).run(
        ["y"], {"x": mean_x.astype(np.float32)})[0].astype(np.float64)
    return y.reshape(y.shape[0], y.shape[1], -1).mean(axis=(0, 2))


def test_shifts_computed_side_by_side_are_the_bits_of_each_conv_alone():
    rng = np.random.default_rng(3)
    terms = []
    for cout, cin, k, group, extra in [(32, 16, 3, 1, {"pads": [1, 1, 1, 1]}), (24, 24, 3, 24, {"strides": [2, 2]}),
                                       (64, 32, 1, 1, {}), (16, 8, 5, 2, {"pads": [2, 2, 2, 2], "dilations": [1, 1]})]:
        node = helper.make_node("Conv", ["x", "w"], ["y"], group=group, **extra)
        terms.append((node, rng.normal(size=(cout, cin // group, k, k)) * 1e-3,
                      rng.normal(size=(1, cin, 19, 23)) * 3))
    together = conv_output_shifts(terms)
    assert len(together) == len(terms)
    for (node, dw, mean_x), got in zip(terms, together, strict=True):
        alone = _shift_alone(node, dw, mean_x)
        assert got.shape == alone.shape and got.tobytes() == alone.tobytes()
    assert conv_output_shifts([]) == []


def test_bias_correction_removes_the_mean_output_shift(tmp_path):
    rng = np.random.default_rng(1)
    w = (rng.normal(size=(8, 4, 3, 3)) * 0.2).astype(np.float32)
    b = (rng.normal(size=8) * 0.1).astype(np.float32)
    proto = _conv_model(w, b)
    x = _data(rng, 24, 4)
    np.savez(tmp_path / "calib.npz", x=x)
    model = prepare_proto(proto)
    before = onnx.ModelProto()
    before.CopyFrom(model.proto)
    recipe = api.make_recipe("cpu-u8s8", reduce_range=True)
    plain = api.quantize(model, recipe, data=str(tmp_path / "calib.npz"))
    fixed = api.quantize(model, recipe, data=str(tmp_path / "calib.npz"), bias_correction=True)
    ref = _run(proto, x)
    shift_plain = np.abs((_run(plain.proto, x) - ref).mean(axis=(0, 2, 3)))
    shift_fixed = np.abs((_run(fixed.proto, x) - ref).mean(axis=(0, 2, 3)))
    assert shift_plain.max() > 5e-3, shift_plain  # 7-bit weights shift the mean measurably
    assert shift_fixed.max() < 0.25 * shift_plain.max(), (shift_plain, shift_fixed)
    # the corrected int32 bias is b - shift at the accumulator scale; the user's model is unchanged
    shifts = bias_shifts(model, plain.plan, plain.proto, [{"x": x}])
    assert set(shifts) == {"b"}
    new_b = numpy_helper.to_array(next(i for i in corrected_proto(model.proto, shifts).graph.initializer
                                       if i.name == "b"))
    np.testing.assert_allclose(new_b, b - shifts["b"], rtol=1e-6, atol=1e-7)
    assert model.proto == before


def test_bias_correction_is_noop_without_conv_bias(tmp_path):
    rng = np.random.default_rng(2)
    w = (rng.normal(size=(3, 4, 3, 3)) * 0.2).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4, 5, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [numpy_helper.from_array(w, "w")])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    np.savez(tmp_path / "calib.npz", x=_data(rng, 8, 4))
    model = prepare_proto(proto)
    recipe = api.make_recipe("cpu-u8s8")
    a = api.quantize(model, recipe, data=str(tmp_path / "calib.npz"))
    b = api.quantize(model, recipe, data=str(tmp_path / "calib.npz"), bias_correction=True)
    assert a.proto.SerializeToString() == b.proto.SerializeToString()


def _conv_output(qproto: onnx.ModelProto) -> onnx.ModelProto:
    """``qproto`` without the Q/DQ pair on its output ``y``: the Conv's own output (the output's rounding is
    the next layer's input rounding, not this Conv's to correct)."""
    out = onnx.ModelProto()
    out.CopyFrom(qproto)
    q = next(n for n in out.graph.node if n.op_type == "QuantizeLinear" and n.input[0] != "x")
    dq = next(n for n in out.graph.node if n.op_type == "DequantizeLinear" and n.input[0] == q.output[0])
    next(n for n in out.graph.node if n.op_type == "Conv").output[0] = "y"
    out.graph.node.remove(q)
    out.graph.node.remove(dq)
    return out


def test_the_shift_of_the_inputs_rounding_is_corrected_too(tmp_path):
    """Percentile ranges clip the input's long tail, which lowers its mean on the grid: the Conv's
    output shifts by ``W_q . (E[fq(x)] - E[x])`` besides the weights' ``dW . E[x]``. Both are folded in:
    the mean shift onnxruntime measures drops to a few percent; with the weights' term alone it stays."""
    rng = np.random.default_rng(5)
    w = (rng.normal(size=(8, 4, 3, 3)) * 0.2).astype(np.float32)
    b = (rng.normal(size=8) * 0.1).astype(np.float32)
    proto = _conv_model(w, b)
    x = rng.exponential(1.0, (24, 4, 5, 6)).astype(np.float32)  # long tail: 1 % of values above 4.6
    np.savez(tmp_path / "calib.npz", x=x)
    model = prepare_proto(proto)
    recipe = api.make_recipe("cpu-u8s8").model_copy(update={"rules": [
        Rule(name="*", activation=PartialSpec(observer="percentile", observer_args={"percentile": 99.0}))]})
    plain = api.quantize(model, recipe, data=str(tmp_path / "calib.npz"))
    fixed = api.quantize(model, recipe, data=str(tmp_path / "calib.npz"), bias_correction=True)
    ref = _run(proto, x)
    shift_plain = np.abs((_run(_conv_output(plain.proto), x) - ref).mean(axis=(0, 2, 3)))
    shift_fixed = np.abs((_run(_conv_output(fixed.proto), x) - ref).mean(axis=(0, 2, 3)))
    assert shift_plain.max() > 0.01, shift_plain
    assert shift_fixed.max() < 0.1 * shift_plain.max(), (shift_plain, shift_fixed)
    # the weights' term alone (the input taken as float) leaves most of the shift
    weight_only = {"b": conv_output_shift(model.node("conv"), dequantized_weights(plain.proto)["conv"]
                                          - w.astype(np.float64), x.astype(np.float64).mean(axis=0, keepdims=True))}
    shifts = bias_shifts(model, plain.plan, plain.proto, [{"x": x}])
    assert np.abs(shifts["b"] - weight_only["b"]).max() > 0.5 * shift_plain.max()
