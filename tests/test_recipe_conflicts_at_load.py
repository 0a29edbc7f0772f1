"""A recipe file whose rule or override sets fields that do not fit together is refused when the file is read,
in one line naming the file, the rule (index and matcher), the role and the field, and saying what to write
(before, the plan said only 'rule op_type=MatMul: invalid weight settings: ...', with neither file nor index).
Settings another rule may complete on the same node are left to the plan."""

from __future__ import annotations

import json

import pytest

from workbench.core.errors import RecipeError
from workbench.core.recipe.recipe import Recipe, resolve_node
from workbench.core.recipe.spec import Rule

_HINT_END = " (see README, 'Recipes')."


def _refusal(doc: dict) -> RecipeError:
    with pytest.raises(RecipeError) as info:
        Recipe.from_json(json.dumps(doc), source="my.json")
    assert "\n" not in str(info.value)
    return info.value


@pytest.mark.parametrize(("doc", "message", "hint"), [
    ({"rules": [{"op_type": "MatMul", "weight": {"granularity": "per_block"}}]},
     "my.json: invalid recipe at rules.0.weight.granularity (rule op_type=MatMul): "
     "per_block needs a positive block_size (e.g. 32).",
     'Add "block_size": 32 next to it'),
    ({"rules": [{"op_type": "Conv"}, {"name": "fc*", "weight": {"granularity": "per_tensor", "block_size": 32}}]},
     "my.json: invalid recipe at rules.1.weight.block_size (rule name=fc*): "
     "block_size is only valid with granularity per_block.",
     'Remove it, or set "granularity": "per_block" (now per_tensor)'),
    ({"overrides": {"mm": {"weight": {"block_size": 64}}}},
     "my.json: invalid recipe at overrides.mm.weight.block_size (override of node mm): "
     "block_size is only valid with granularity per_block.",
     'Remove it, or set "granularity": "per_block" (now per_channel)'),
    ({"rules": [{"op_type": "Conv", "weight": {"granularity": "per_block", "block_size": 0}}]},
     "my.json: invalid recipe at rules.0.weight.block_size (rule op_type=Conv): "
     "per_block needs a positive block_size (e.g. 32).",
     'Use "block_size": 32'),
    ({"rules": [{"op_type": "Conv", "weight": {"dtype": "mxfp8e4m3"}}]},
     "my.json: invalid recipe at rules.0.weight.dtype (rule op_type=Conv): "
     "mxfp8e4m3 is an MX block format: use granularity per_block, block_size 32.",
     'Add "granularity": "per_block", "block_size": 32 next to it'),
    ({"rules": [{"op_type": "Gemm", "activation": {"dtype": "int16", "reduce_range": True}}]},
     "my.json: invalid recipe at rules.0.activation.reduce_range (rule op_type=Gemm): "
     "reduce_range applies to 8-bit dtypes only, not int16.",
     "Remove it, or use an 8-bit dtype (int8, uint8)"),
    # the conflicting value comes from the preset: the field the rule set is named, and where the other is from
    ({"preset": "w4-block", "rules": [{"op_type": "MatMul", "weight": {"granularity": "per_channel"}}]},
     "my.json: invalid recipe at rules.0.weight.granularity (rule op_type=MatMul): "
     "block_size is only valid with granularity per_block (block_size 32 comes from preset w4-block).",
     'Add "block_size": null next to it, or use "granularity": "per_block"'),
    ({"reduce_range": True, "overrides": {"mm": {"weight": {"dtype": "int4"}}}},
     "my.json: invalid recipe at overrides.mm.weight.dtype (override of node mm): "
     "reduce_range applies to 8-bit dtypes only, not int4 (reduce_range true comes from preset cpu-u8s8).",
     'Add "reduce_range": false next to it'),
    ({"rules": [{"name": "*", "activation": {"observer_args": {"bins": 512.0}}}]},
     "my.json: invalid recipe at rules.0.activation.observer_args (rule name=*): 'bins' is not read by the "
     "inherited minmax observer, which reads only averaging_constant (from preset cpu-u8s8).",
     'Set "observer" there to one that reads it (percentile, entropy or mse), or remove it'),
])
def test_inconsistent_settings_are_refused_at_load_naming_file_rule_and_field(doc, message, hint):
    error = _refusal(doc)
    assert error.message == message
    assert error.hint == hint + _HINT_END


@pytest.mark.parametrize("doc", [
    # an op-type rule's per_block comes before a name rule's block_size on MatMuls: the plan decides
    {"rules": [{"name": "m*", "weight": {"block_size": 64}},
               {"op_type": "MatMul", "weight": {"granularity": "per_block", "block_size": 32}}]},
    # a role turned off, or an op type the preset does not quantize: the settings reach no spec
    {"rules": [{"op_type": "MatMul", "weight": {"enabled": False, "granularity": "per_block"}}]},
    {"rules": [{"op_type": "Relu", "weight": {"granularity": "per_block"}}]},
    # consistent settings, on the preset's or their own
    {"rules": [{"op_type": "MatMul", "weight": {"granularity": "per_block", "block_size": 32}}]},
    {"preset": "w4-block", "rules": [{"op_type": "MatMul", "weight": {"granularity": "per_channel",
                                                                       "block_size": None}}]},
    {"rules": [{"name": "*", "activation": {"observer": "entropy", "observer_args": {"bins": 512.0}}}]},
])
def test_settings_that_may_fit_are_read(doc):
    assert isinstance(Recipe.from_json(json.dumps(doc)), Recipe)


def test_rules_that_fit_only_together_resolve_and_alone_fail_at_plan():
    recipe = Recipe.from_json(json.dumps({"rules": [{"name": "m*", "weight": {"block_size": 64}},
                                                    {"op_type": "MatMul", "weight": {"granularity": "per_block",
                                                                                     "block_size": 32}}]}))
    assert resolve_node(recipe, "mm", "MatMul").config.weight.block_size == 64
    with pytest.raises(RecipeError, match="block_size is only valid with granularity per_block"):
        resolve_node(recipe, "mx", "Conv")


def test_a_later_name_rule_does_not_rescue_an_op_type_rule_applied_first():
    doc = {"rules": [{"op_type": "MatMul", "weight": {"granularity": "per_block"}},
                     {"name": "mm", "weight": {"block_size": 32}}]}
    error = _refusal(doc)
    assert error.message.startswith("my.json: invalid recipe at rules.0.weight.granularity (rule op_type=MatMul): ")
    in_memory = Recipe(rules=[Rule(**rule) for rule in doc["rules"]])  # built in memory: the plan refuses it
    with pytest.raises(RecipeError, match="per_block needs a positive block_size"):
        resolve_node(in_memory, "mm", "MatMul")
