"""Two op-type rules of one op type reach the same nodes, so settings that do not fit once both are applied are
refused when the recipe file is read, naming the later rule's index, role and field and where the inherited value
comes from. They were left to the plan (an earlier rule may change the node first), which said only 'rule
op_type=Gemm: invalid weight settings: block_size is only valid with granularity per_block', with neither file nor
index. A name-glob rule or an override after an op-type rule is still left to the plan (which nodes both reach
depends on the model)."""

from __future__ import annotations

import json

import pytest

from workbench.core.errors import RecipeError
from workbench.core.recipe.recipe import Recipe, resolve_node
from workbench.core.recipe.spec import Rule

_HINT_END = " (see README, 'Recipes')."


@pytest.mark.parametrize(("rules", "message", "hint", "at_plan"), [
    ([{"op_type": "Gemm", "weight": {"granularity": "per_block", "block_size": 32}},
      {"op_type": "Gemm", "weight": {"granularity": "per_tensor"}}],
     "my.json: invalid recipe at rules.1.weight.granularity (rule op_type=Gemm): block_size is only valid with "
     "granularity per_block (block_size 32 comes from rules.0, rule op_type=Gemm).",
     'Add "block_size": null next to it, or use "granularity": "per_block"',
     "rule op_type=Gemm: invalid weight settings: block_size is only valid with granularity per_block."),
    ([{"op_type": "Conv", "weight": {"dtype": "int4"}}, {"op_type": "Conv", "weight": {"reduce_range": True}}],
     "my.json: invalid recipe at rules.1.weight.reduce_range (rule op_type=Conv): reduce_range applies to 8-bit "
     "dtypes only, not int4.",
     "Remove it, or use an 8-bit dtype (int8, uint8)",
     "rule op_type=Conv: invalid weight settings: reduce_range applies to 8-bit dtypes only, not int4."),
    ([{"op_type": "Conv", "activation": {"observer": "entropy"}},
      {"op_type": "Conv", "activation": {"observer_args": {"percentile": 99.9}}}],
     "my.json: invalid recipe at rules.1.activation.observer_args (rule op_type=Conv): 'percentile' is not read by "
     "the inherited entropy observer, which reads only bins (from rules.0, rule op_type=Conv).",
     'Set "observer" there to one that reads it (percentile), or remove it',
     "rule op_type=Conv (node n): activation.observer_args 'percentile' is not read by the inherited entropy "
     "observer"),
    # a dtype inherited from the earlier rule: the fix names it as inherited, not as the preset's
    ([{"op_type": "MatMul", "weight": {"dtype": "mxint8", "granularity": "per_block", "block_size": 32}},
      {"op_type": "MatMul", "weight": {"granularity": "per_channel", "block_size": None}}],
     "my.json: invalid recipe at rules.1.weight.granularity (rule op_type=MatMul): mxint8 is an MX block format: "
     "use granularity per_block, block_size 32 (dtype mxint8 comes from rules.0, rule op_type=MatMul).",
     'Use "granularity": "per_block" with "block_size": 32 for the inherited mxint8',
     "rule op_type=MatMul: invalid weight settings: mxint8 is an MX block format"),
])
def test_rules_of_one_op_type_are_checked_together_at_load(rules, message, hint, at_plan):
    with pytest.raises(RecipeError) as info:
        Recipe.from_json(json.dumps({"rules": rules}), source="my.json")
    assert info.value.message == message
    assert info.value.hint == hint + _HINT_END
    in_memory = Recipe(rules=[Rule(**rule) for rule in rules])  # built in memory (the app): the plan refuses it
    with pytest.raises(RecipeError) as plan:
        resolve_node(in_memory, "n", rules[0]["op_type"])
    assert plan.value.message.startswith(at_plan)


@pytest.mark.parametrize("rules", [
    # the later rule completes the earlier one: they fit together
    [{"op_type": "Gemm", "weight": {"granularity": "per_block", "block_size": 32}},
     {"op_type": "Gemm", "weight": {"granularity": "per_tensor", "block_size": None}}],
    [{"op_type": "Conv", "weight": {"dtype": "int4"}}, {"op_type": "Conv", "weight": {"dtype": "int8",
                                                                                      "reduce_range": True}}],
    # the earlier rule keeps the role float and the later one does not turn it on
    [{"op_type": "Gemm", "weight": {"enabled": False}}, {"op_type": "Gemm", "weight": {"block_size": 32}}],
    # rules of other op types never meet
    [{"op_type": "Gemm", "weight": {"granularity": "per_block", "block_size": 32}},
     {"op_type": "MatMul", "weight": {"granularity": "per_tensor"}}],
    # a name glob after an op-type rule: left to the plan
    [{"op_type": "Gemm", "weight": {"granularity": "per_block", "block_size": 32}},
     {"name": "fc*", "weight": {"granularity": "per_tensor"}}],
])
def test_rules_that_fit_or_may_not_meet_are_read(rules):
    assert isinstance(Recipe.from_json(json.dumps({"rules": rules})), Recipe)
