"""A rule or override whose merged spec is inconsistent is refused when a node resolves, in one line that
names the rule, the role and the broken field, without pydantic's 'Value error, ' prefix."""

from __future__ import annotations

import pytest

from workbench.core.errors import RecipeError
from workbench.core.recipe.recipe import Recipe, resolve_node
from workbench.core.recipe.spec import Granularity, NodeSettings, PartialSpec, Rule


@pytest.mark.parametrize(("recipe", "message"), [
    (Recipe(rules=[Rule(op_type="Conv", weight=PartialSpec(granularity=Granularity.per_block))]),
     "rule op_type=Conv: invalid weight settings: per_block needs a positive block_size (e.g. 32)."),
    (Recipe(rules=[Rule(name="c*", weight=PartialSpec(dtype="int16", reduce_range=True))]),
     "rule name=c*: invalid weight settings: reduce_range applies to 8-bit dtypes only, not int16."),
    (Recipe(overrides={"c1": NodeSettings(weight=PartialSpec(block_size=32))}),
     "override: invalid weight settings: block_size is only valid with granularity per_block."),
])
def test_an_inconsistent_rule_is_refused_in_one_line_naming_the_field(recipe, message):
    with pytest.raises(RecipeError) as info:
        resolve_node(recipe, "c1", "Conv")
    assert info.value.message == message
    assert info.value.hint == "Change the rule so the spec is consistent."
    assert "\n" not in str(info.value)
