"""Out-of-range observer_args are refused where the recipe is read, naming the field path and the values the
observer takes (they were refused only during calibration, naming the tensor ``input``)."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main
from workbench.core import api
from workbench.core.errors import RecipeError
from workbench.core.recipe.recipe import Recipe
from workbench.core.recipe.spec import PartialSpec, QuantSpec

PCT = "use a percentile above 50 and at most 100 (default 99.999)"
BINS = "use a whole number of histogram bins from 16 to 1048576 (default 2048)"
AVG = "use a moving-average weight above 0 and at most 1 (0.01 is usual)"


def _recipe(args: dict, where: str = "rules") -> str:
    part = {"observer": "percentile", "observer_args": args}
    if where == "rules":
        return json.dumps({"rules": [{"op_type": "Conv", "activation": part}]})
    return json.dumps({"overrides": {"conv": {"weight": part}}})


@pytest.mark.parametrize(("args", "where", "message"), [
    ({"percentile": 150}, "rules", f"rules.0.activation.observer_args.percentile: 150 is out of range: {PCT}"),
    ({"percentile": -1}, "rules", f"rules.0.activation.observer_args.percentile: -1 is out of range: {PCT}"),
    ({"percentile": 50}, "rules", f"rules.0.activation.observer_args.percentile: 50 is out of range: {PCT}"),
    ({"bins": 0}, "rules", f"rules.0.activation.observer_args.bins: 0 is out of range: {BINS}"),
    ({"bins": 2048.5}, "rules", f"rules.0.activation.observer_args.bins: 2048.5 is out of range: {BINS}"),
    ({"bins": 2 ** 20 + 1}, "overrides",
     f"overrides.conv.weight.observer_args.bins: 1.04858e+06 is out of range: {BINS}"),
    ({"averaging_constant": 0}, "overrides",
     f"overrides.conv.weight.observer_args.averaging_constant: 0 is out of range: {AVG}"),
    ({"averaging_constant": 1.5}, "rules",
     f"rules.0.activation.observer_args.averaging_constant: 1.5 is out of range: {AVG}"),
])
def test_out_of_range_observer_args_are_refused_naming_the_field(args, where, message):
    with pytest.raises(RecipeError) as info:
        Recipe.from_json(_recipe(args, where), source="r.json")
    assert info.value.message == f"r.json: invalid recipe at {message}."


def test_nan_percentile_is_refused():
    with pytest.raises(RecipeError) as info:
        Recipe.from_json('{"rules": [{"op_type": "Conv", "activation": {"observer_args": {"percentile": NaN}}}]}',
                         source="r.json")
    assert info.value.message == f"r.json: invalid recipe at rules.0.activation.observer_args.percentile: nan is out of range: {PCT}."


def test_edges_of_the_ranges_are_accepted_and_round_trip():
    # no observer: args set alone go to the inherited one (with an observer, it must read each of them); on an op
    # type the preset does not quantize, so no inherited observer refuses them when the file is read
    text = json.dumps({"rules": [{"op_type": "Relu", "activation": {
        "observer_args": {"percentile": 100, "bins": 16, "averaging_constant": 1}}}]})
    recipe = Recipe.from_json(text)
    args = recipe.rules[0].activation.observer_args
    assert args == {"averaging_constant": 1.0, "bins": 16.0, "percentile": 100.0}
    assert list(args) == ["averaging_constant", "bins", "percentile"]  # as a project file (sorted keys) stores them
    assert Recipe.from_json(recipe.to_json()).to_json() == recipe.to_json()
    big = Recipe.from_json(_recipe({"bins": 2 ** 20}))
    assert big.rules[0].activation.observer_args == {"bins": 1048576.0}


def test_specs_built_in_code_are_checked_too():
    with pytest.raises(ValueError, match=r"observer_args\.percentile\n.*150 is out of range"):
        QuantSpec(observer="percentile", observer_args={"percentile": 150})
    with pytest.raises(ValueError, match=r"observer_args\.bins\n.*0 is out of range"):
        PartialSpec(observer_args={"bins": 0})


def _conv_model(folder):
    w = numpy_helper.from_array(np.random.default_rng(0).normal(size=(4, 3, 3, 3)).astype(np.float32), "W")
    node = helper.make_node("Conv", ["input", "W"], ["y"], name="conv", pads=[1, 1, 1, 1])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 8, 8])], [w])
    path = folder / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    np.savez(folder / "calib.npz", input=np.random.default_rng(1).random((4, 1, 3, 8, 8)).astype(np.float32))
    return path


def test_cli_quantize_refuses_the_recipe_before_calibrating(tmp_path, capsys, monkeypatch):
    model = _conv_model(tmp_path)
    recipe = tmp_path / "r.json"
    recipe.write_text(_recipe({"percentile": 150}))
    monkeypatch.setattr(api, "calibrate", lambda *_a, **_k: (_ for _ in ()).throw(AssertionError("calibrated")))
    code = main(["quantize", str(model), "--data", str(tmp_path / "calib.npz"), "--recipe", str(recipe),
                 "-o", str(tmp_path / "q.onnx")])
    err = capsys.readouterr().err.splitlines()
    assert code == 2
    assert err == [f"error: {recipe}: invalid recipe at rules.0.activation.observer_args.percentile: 150 is out of "
                   f"range: {PCT}. Fix that field (see README, 'Recipes')."]
    assert not (tmp_path / "q.onnx").exists()
