"""A recipe file with a QONNX-only dtype (int2..int7, bipolar) and no ``"target": "qonnx"`` is refused naming
each field that sets one and what to add. The message read "invalid recipe at top level: dtype int3 exists only
in QONNX: set target to 'qonnx' (--format qonnx)", but ``--format qonnx`` gave the same refusal: the recipe
file is read before the option applies, and only its ``target`` field allows those dtypes."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main
from workbench.core.errors import RecipeError
from workbench.core.recipe.recipe import Recipe

ADD = ('add "target": "qonnx" to the recipe to export it as QONNX (--format qonnx alone does not), '
       "or use int4/int8")


def test_the_fields_are_named_not_the_top_level():
    text = json.dumps({"rules": [{"op_type": "Conv", "weight": {"dtype": "int8"}},
                                 {"op_type": "Conv", "activation": {"dtype": "int3"}}],
                       "overrides": {"/f/f.0/Conv": {"weight": {"dtype": "bipolar"}}}})
    with pytest.raises(RecipeError) as info:
        Recipe.from_json(text, source="r.json")
    assert info.value.message == ("r.json: invalid recipe: rules.1.activation.dtype int3, "
                                  "overrides./f/f.0/Conv.weight.dtype bipolar: a dtype that exists only in QONNX; "
                                  f"{ADD}.")


def test_more_than_three_fields_are_counted():
    text = json.dumps({"rules": [{"op_type": op, "weight": {"dtype": "int2"}, "bias": {"dtype": "int5"}}
                                 for op in ("Conv", "MatMul")]})
    with pytest.raises(RecipeError) as info:
        Recipe.from_json(text, source="r.json")
    assert info.value.message.startswith("r.json: invalid recipe: rules.0.weight.dtype int2, rules.0.bias.dtype int5, "
                                         "rules.1.weight.dtype int2 (and 1 more field): a dtype that exists only")


def test_what_the_message_says_to_do_works(tmp_path, capsys):
    """The recipe refused as it is, also with --format qonnx; with "target": "qonnx" added, --format qonnx writes
    a QONNX file whose Conv weight has 3 bits."""
    w = numpy_helper.from_array(np.random.default_rng(0).normal(size=(4, 3, 3, 3)).astype(np.float32), "W")
    node = helper.make_node("Conv", ["input", "W"], ["y"], name="conv", pads=[1, 1, 1, 1])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [w])
    model = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(model))
    np.savez(tmp_path / "calib.npz", input=np.random.default_rng(1).random((4, 1, 3, 8, 8)).astype(np.float32))
    recipe = tmp_path / "r.json"
    spec = {"rules": [{"op_type": "Conv", "weight": {"dtype": "int3"}}]}
    recipe.write_text(json.dumps(spec))
    out = tmp_path / "q.onnx"
    args = ["quantize", str(model), "--data", str(tmp_path / "calib.npz"), "--recipe", str(recipe), "-o", str(out),
            "--format", "qonnx", "--no-latency-check", "--no-auto"]
    assert main(args) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"error: {recipe}: invalid recipe: rules.0.weight.dtype int3: a dtype that exists only in QONNX; "
                   f"{ADD}. Fix that field (see README, 'Recipes')."]
    assert not out.exists()
    recipe.write_text(json.dumps({**spec, "target": "qonnx"}))
    assert main(args) == 0
    written = onnx.load(str(out))
    inits = {i.name: numpy_helper.to_array(i) for i in written.graph.initializer}
    weight_quant = next(n for n in written.graph.node if n.op_type == "Quant" and n.input[0] == "W")
    assert float(inits[weight_quant.input[3]]) == 3.0
