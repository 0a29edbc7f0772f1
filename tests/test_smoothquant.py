"""SmoothQuant scale migration (Xiao et al. 2023, eq. 4): the rewrite keeps the float function, moves
outlier channels into the weights, and makes a per-tensor 8-bit activation grid fit (higher SQNR)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.errors import RecipeError, WorkbenchError
from workbench.core.formats.numerics import sqnr_db
from workbench.core.model.load import prepare_proto
from workbench.core.recipe.spec import SmoothQuantSpec
from workbench.core.runtime.session import add_outputs, make_session
from workbench.core.transforms import smoothquant as sq


def _matmul_model(w: np.ndarray) -> onnx.ModelProto:
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "w"], ["y"], name="mm")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, w.shape[0]])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _conv_model(w: np.ndarray, group: int) -> onnx.ModelProto:
    cin = w.shape[1] * group
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w", "b"], ["y"], name="conv", group=group, pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, cin, 5, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w"),
                               numpy_helper.from_array(np.linspace(-1, 1, w.shape[0]).astype(np.float32), "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(proto, x):
    return make_session(proto, optimize=False).run(["y"], {"x": x})[0].astype(np.float64)


def _outlier_input(rng, shape, axis, scale=40.0):
    x = rng.normal(size=shape).astype(np.float32)
    idx = [slice(None)] * len(shape)
    idx[axis] = slice(0, 2)
    x[tuple(idx)] *= scale  # two outlier channels, as in transformer activations
    return x


def test_factors_follow_the_formula_and_guard_zero_channels():
    x_absmax = np.array([4.0, 1.0, 0.0, 9.0])
    w = np.array([[1.0, -2.0], [0.5, 0.25], [3.0, 1.0], [0.0, 0.0]], np.float32)  # MatMul [K, N]
    s = sq.smoothing_factors(x_absmax, w, axis=0, alpha=0.5)
    np.testing.assert_allclose(s, [np.sqrt(4.0) / np.sqrt(2.0), 1.0 / np.sqrt(0.5), 1.0, 1.0])
    np.testing.assert_allclose(sq.smoothing_factors(x_absmax[:2], w[:2], 0, 1.0), [4.0, 1.0])
    with pytest.raises(RecipeError, match="alpha"):
        sq.smoothing_factors(x_absmax, w, 0, 1.5)


@pytest.mark.parametrize("kind", ["matmul", "conv", "depthwise"])
def test_rewrite_keeps_the_float_function_and_equalizes_channels(kind):
    rng = np.random.default_rng(1)
    if kind == "matmul":
        proto, axis = _matmul_model(rng.normal(size=(8, 5)).astype(np.float32)), 1
        x = _outlier_input(rng, (16, 8), 1)
    else:
        group = 1 if kind == "conv" else 6
        w = rng.normal(size=(6, 6 // group, 3, 3)).astype(np.float32)
        proto, axis = _conv_model(w, group), 1
        x = _outlier_input(rng, (4, 6, 5, 6), 1)
    nodes = sq.smoothable(proto)
    assert list(nodes) == (["mm"] if kind == "matmul" else ["conv"])
    absmax = sq.activation_absmax(proto, nodes, [{"x": x[:8]}, {"x": x[8:]}] if kind == "matmul" else [{"x": x}])
    r = np.maximum(x, 0)
    np.testing.assert_allclose(absmax[next(iter(nodes))],
                               r.max(axis=tuple(i for i in range(r.ndim) if i != axis)), rtol=1e-6)
    smoothed = sq.smooth_proto(proto, absmax, alpha=1.0)
    assert [n.op_type for n in smoothed.graph.node] == ["Relu", "Mul", "MatMul" if kind == "matmul" else "Conv"]
    assert [n.op_type for n in proto.graph.node] == ["Relu", "MatMul" if kind == "matmul" else "Conv"]  # untouched
    np.testing.assert_allclose(_run(smoothed, x), _run(proto, x), rtol=1e-4, atol=1e-4)
    # alpha = 1: every input channel of the smoothed tensor reaches the same max (1.0)
    name = smoothed.graph.node[1].output[0]
    xs = make_session(add_outputs(smoothed, [name]), optimize=False).run([name], {"x": x})[0]
    ch = np.abs(xs).max(axis=tuple(i for i in range(xs.ndim) if i != axis))
    np.testing.assert_allclose(ch, 1.0, rtol=1e-5)


def test_smoothquant_recipe_raises_sqnr_of_an_outlier_matmul(tmp_path):
    rng = np.random.default_rng(2)
    w = rng.normal(size=(16, 8)).astype(np.float32)
    w[:2] /= 100.0  # outlier input channels meet small weights: every channel matters for the output
    proto = _matmul_model(w)
    model = prepare_proto(proto)
    calib = tmp_path / "calib.npz"
    np.savez(calib, x=_outlier_input(rng, (64, 16), 1, scale=100.0))
    x_eval = _outlier_input(rng, (64, 16), 1, scale=100.0)
    ref = _run(proto, x_eval)

    def sqnr(recipe):
        res = api.quantize(model, recipe, data=str(calib), samples=64)
        out = make_session(res.proto).run(None, {"x": x_eval})[0]
        return res, float(sqnr_db(ref, out))

    plain = api.make_recipe("cpu-u8s8", op_types=["MatMul"])
    smooth = plain.model_copy(update={"smoothquant": SmoothQuantSpec(alpha=0.5)})
    _, db_plain = sqnr(plain)
    res, db_smooth = sqnr(smooth)
    assert db_smooth > db_plain + 6.0, (db_plain, db_smooth)
    # the Mul(X, 1/s) stays float: no DequantizeLinear feeds it, the MatMul input is quantized after it
    mul = next(n for n in res.proto.graph.node if n.name == "mm" + sq.SUFFIX)
    producers = {o: n.op_type for n in res.proto.graph.node for o in n.output}
    assert producers.get(mul.input[0]) == "Relu"
    assert res.recipe.smoothquant is not None and res.recipe.exclude == []
    assert res.float_model is not None and len(res.float_model.proto.graph.node) == 3
    rows = api.analyze(model, res, str(calib), samples=16)  # errors measured against the smoothed float model
    assert {r.node for r in rows} >= {"mm"}


def test_smoothquant_without_data_says_what_to_do():
    proto = _matmul_model(np.ones((4, 3), np.float32))
    recipe = api.make_recipe("cpu-u8s8", op_types=["MatMul"], smoothquant=SmoothQuantSpec())
    with pytest.raises(WorkbenchError, match="smoothquant"):
        api.quantize(prepare_proto(proto), recipe)



def test_calibration_cache_of_another_alpha_is_not_reused(tmp_path):
    rng = np.random.default_rng(3)
    model = prepare_proto(_matmul_model(rng.normal(size=(8, 4)).astype(np.float32)))
    calib = tmp_path / "calib.npz"
    np.savez(calib, x=_outlier_input(rng, (32, 8), 1))
    recipe = api.make_recipe("cpu-u8s8", op_types=["MatMul"], smoothquant=SmoothQuantSpec(alpha=0.5))
    first = api.quantize(model, recipe, data=str(calib))
    other = recipe.model_copy(update={"smoothquant": SmoothQuantSpec(alpha=1.0)})
    reused = api.quantize(model, other, data=str(calib), calibration=first.calibration)
    fresh = api.quantize(model, other, data=str(calib))
    assert set(reused.qparams) == set(fresh.qparams) != set(first.qparams)
    for t, qp in fresh.qparams.items():
        np.testing.assert_allclose(reused.qparams[t].scale, qp.scale)
