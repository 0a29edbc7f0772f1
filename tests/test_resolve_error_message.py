"""A rule or override whose merged spec is inconsistent is refused when a node resolves, in one line that
names the rule, the role and the broken field, without pydantic's 'Value error, ' prefix."""

from __future__ import annotations

import pytest

from workbench.core.errors import RecipeError
from workbench.core.recipe.recipe import Recipe, resolve_node
from workbench.core.recipe.spec import Granularity, NodeSettings, PartialSpec, Rule


@pytest.mark.parametrize(("recipe", "message", "hint"), [
    (Recipe(rules=[Rule(op_type="Conv", weight=PartialSpec(granularity=Granularity.per_block))]),
     "rule op_type=Conv: invalid weight settings: per_block needs a positive block_size (e.g. 32).", "rule"),
    (Recipe(rules=[Rule(name="c*", weight=PartialSpec(dtype="int16", reduce_range=True))]),
     "rule name=c*: invalid weight settings: reduce_range applies to 8-bit dtypes only, not int16.", "rule"),
    # the node named ("override: ..." before): one node's settings, which an override holds
    (Recipe(overrides={"c1": NodeSettings(weight=PartialSpec(block_size=32))}),
     "override of node c1: invalid weight settings: block_size is only valid with granularity per_block.",
     "override"),
])
def test_an_inconsistent_rule_is_refused_in_one_line_naming_the_field(recipe, message, hint):
    with pytest.raises(RecipeError) as info:
        resolve_node(recipe, "c1", "Conv")
    assert info.value.message == message
    assert info.value.hint == f"Change the {hint} so the spec is consistent."
    assert "\n" not in str(info.value)


def test_unchecked_resolve_gives_the_inconsistent_settings_as_written():
    """What the app shows beside the error, so the settings can be fixed where they show: the override's int16
    with reduce_range over the preset's activation, nothing raised; the checked resolve still refuses them."""
    recipe = Recipe(overrides={"c1": NodeSettings(activation=PartialSpec(dtype="int16", reduce_range=True))})
    with pytest.raises(RecipeError):
        resolve_node(recipe, "c1", "Conv")
    resolved = resolve_node(recipe, "c1", "Conv", check=False)
    act = resolved.config.activation
    assert (act.dtype, act.reduce_range, act.symmetric, act.granularity, act.observer) == (
        "int16", True, False, Granularity.per_tensor, "minmax")  # cpu-u8s8's uint8 asymmetric, per_tensor, minmax
    assert resolved.sources["activation"] == "override" and resolved.sources["weight"] == "preset cpu-u8s8"
    assert resolved.config.weight == resolve_node(Recipe(), "c1", "Conv").config.weight
    memo: dict = {}
    resolve_node(recipe, "c1", "Conv", memo, check=False)
    assert memo == {}  # nothing a plan's checked resolve with the same memo would reuse
    with pytest.raises(RecipeError):
        resolve_node(recipe, "c1", "Conv", memo)
