"""Activation settings the plan never applies as written are refused when a recipe file is read
(``api.load_recipe``: the CLI's --recipe), in one line naming the file, the rule, the role and the field. The plan leaves per_block activations float and quantizes per_channel
ones per tensor, each with a warning after the file was accepted ('per_block activations are not supported by QDQ
runtimes; activations left in float'): a recipe with MX activations wrote digits_cnn with 2 of 5 units quantized.
Recipes built in memory (the app's inspector), and sent as JSON between its jobs, still get the plan's warning."""

from __future__ import annotations

import json

import pytest

from workbench.core import api
from workbench.core.errors import RecipeError
from workbench.core.issues import IssueCode
from workbench.core.recipe.recipe import Recipe

_HINT_END = " (see README, 'Recipes')."


@pytest.mark.parametrize(("activation", "message", "hint"), [
    ({"granularity": "per_block", "block_size": 32},
     "rules.0.activation.granularity (rule op_type=Conv): per_block activations are not supported by QDQ runtimes: "
     "the plan would leave them float.", 'Use "granularity": "per_tensor" without "block_size"'),
    ({"granularity": "per_channel", "axis": 1},
     "rules.0.activation.granularity (rule op_type=Conv): per_channel activations do not fuse into integer kernels: "
     "the plan would quantize them per_tensor.", 'Use "granularity": "per_tensor"'),
    ({"dtype": "mxint8", "granularity": "per_block", "block_size": 32},
     "rules.0.activation.dtype (rule op_type=Conv): mxint8 is an MX block format, and per_block activations are not "
     "supported by QDQ runtimes (the plan would leave them float).",
     'Use an integer or float8 dtype for activations (e.g. "uint8"), per_tensor; MX formats are for weights'),
    # an MX activation was told to add per_block (spec_conflict), which the plan then left float
    ({"dtype": "mxfp8e4m3"},
     "rules.0.activation.dtype (rule op_type=Conv): mxfp8e4m3 is an MX block format, and per_block activations are "
     "not supported by QDQ runtimes (the plan would leave them float).",
     'Use an integer or float8 dtype for activations (e.g. "uint8"), per_tensor; MX formats are for weights'),
])
def test_activation_grids_the_plan_does_not_apply_are_refused_at_load(tmp_path, activation, message, hint):
    path = tmp_path / "my.json"
    path.write_text(json.dumps({"rules": [{"op_type": "Conv", "activation": activation}]}))
    with pytest.raises(RecipeError) as info:
        api.load_recipe(path)
    assert info.value.message == f"{path}: invalid recipe at {message}"
    assert info.value.hint == hint + _HINT_END
    if activation.get("granularity"):  # consistent on their own: the app's JSON round trip reads them (plan warns)
        assert isinstance(Recipe.from_json(path.read_text()), Recipe)


def test_the_same_rule_built_in_memory_gets_the_plan_s_warning():
    from qdq_helpers import tiny_model

    from workbench.core.model.load import prepare_proto
    from workbench.core.planning.plan import build_plan
    from workbench.core.recipe.spec import PartialSpec, Rule

    proto, _ = tiny_model("conv", opset=17)
    for granularity, kept in (("per_block", False), ("per_channel", True)):
        rule = Rule(op_type="Conv", activation=PartialSpec(granularity=granularity,
                                                           block_size=32 if granularity == "per_block" else None))
        plan = build_plan(prepare_proto(proto), Recipe(rules=[rule]))
        assert [i.code for i in plan.issues if i.code == IssueCode.ACTIVATION_GRANULARITY]
        conv = next(u for u in plan.units.values() if u.op_type == "Conv")
        assert (conv.config.activation is not None and bool(conv.inputs)) == kept


@pytest.mark.parametrize("doc", [
    {"rules": [{"op_type": "Conv", "activation": {"granularity": "per_tensor", "dtype": "int8"}}]},
    {"rules": [{"op_type": "MatMul", "weight": {"dtype": "mxint8", "granularity": "per_block", "block_size": 32}}]},
    {"rules": [{"op_type": "Conv", "activation": {"enabled": False, "granularity": "per_block"}}]},
])
def test_activation_settings_the_plan_applies_are_read(tmp_path, doc):
    (tmp_path / "r.json").write_text(json.dumps(doc))
    assert isinstance(api.load_recipe(tmp_path / "r.json"), Recipe)
