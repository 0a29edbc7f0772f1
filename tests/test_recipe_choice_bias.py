"""The recipe choice scores and writes its variants with bias correction (recipe_choice.BIAS_CORRECTION)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.runtime.session import make_session
from workbench.core.tuning import recipe_choice


def _two_convs(rng) -> onnx.ModelProto:
    w1 = (rng.normal(size=(8, 4, 3, 3)) * 0.2).astype(np.float32)
    w2 = (rng.normal(size=(8, 8, 3, 3)) * 0.1).astype(np.float32)
    b1, b2 = (rng.normal(size=8) * 0.1).astype(np.float32), (rng.normal(size=8) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["h"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w2", "b2"], ["y"], name="conv2", pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 8, 8, 8])],
                              [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_the_chosen_recipe_corrects_the_conv_biases(tmp_path):
    rng = np.random.default_rng(7)
    proto = _two_convs(rng)
    x = (rng.exponential(1.0, (32, 4, 8, 8)) + 0.5).astype(np.float32)  # long-tailed, positive mean
    np.savez(tmp_path / "calib.npz", x=x)
    path = tmp_path / "m.onnx"
    path.write_bytes(proto.SerializeToString())
    model = api.open_model(path)
    rep = api.choose_recipe(model, api.make_recipe("cpu-u8s8"), str(tmp_path / "calib.npz"))
    assert rep.skipped is None and rep.recipe.bias_correction
    data = str(tmp_path / "calib.npz")
    fixed = api.quantize(model, rep.recipe, data=data, calibration=rep.calibration)
    plain = api.quantize(model, rep.recipe.model_copy(update={"bias_correction": False}), data=data,
                         calibration=rep.calibration)
    ref = make_session(proto).run(["y"], {"x": x})[0].astype(np.float64)

    def shift(p):
        return np.abs((make_session(p).run(["y"], {"x": x})[0] - ref).mean(axis=(0, 2, 3))).max()

    # onnxruntime: the largest per-channel mean output shift, here 0.0009 against 0.0053
    assert shift(fixed.proto) < 0.5 * shift(plain.proto), (shift(fixed.proto), shift(plain.proto))


def test_a_chosen_recipe_is_not_chosen_again(tmp_path):
    """Every recipe the choice writes has bias correction on; such a recipe (a saved project's, which the CLI
    replays as written) is used as written, so the app's export of a project equals its CLI replay."""
    rng = np.random.default_rng(7)
    path = tmp_path / "m.onnx"
    path.write_bytes(_two_convs(rng).SerializeToString())
    np.savez(tmp_path / "calib.npz", x=(rng.exponential(1.0, (32, 4, 8, 8)) + 0.5).astype(np.float32))
    model, data = api.open_model(path), str(tmp_path / "calib.npz")
    chosen = api.choose_recipe(model, api.make_recipe("cpu-u8s8"), data)
    assert chosen.skipped is None and chosen.recipe.bias_correction
    again = api.choose_recipe(model, chosen.recipe, data)
    assert again.skipped == recipe_choice.CHOICE_CHOSEN and again.recipe == chosen.recipe
    assert api.why_not_choose(chosen.recipe) == recipe_choice.CHOICE_CHOSEN
