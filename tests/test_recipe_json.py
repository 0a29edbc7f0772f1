"""Recipe JSON: typos named with a guess; overrides kept in node-name order, so a recipe writes the same JSON built in memory and read
back from a project file (which sorts its keys): a replay's model metadata is the same bytes (a new
user's ppocr_mobile_v2_cls replay differed only there, at byte 343064)."""

from __future__ import annotations

import json

import pytest

from workbench.core.errors import RecipeError
from workbench.core.recipe.recipe import Recipe
from workbench.core.recipe.spec import NodeSettings


def test_overrides_sort_whatever_order_they_come_in():
    built = Recipe().with_excluded(["Conv@7", "Conv@10", "Conv@2"]).with_overrides(
        ["Add@1"], NodeSettings.model_validate({"activation": {"dtype": "int16"}}))
    assert list(built.overrides) == ["Add@1", "Conv@10", "Conv@2", "Conv@7"]
    read = Recipe.from_json(json.dumps({"overrides": {"b": {"exclude": True}, "a": {"exclude": True}}}))
    assert list(read.overrides) == ["a", "b"]


def test_a_recipe_round_trips_through_sorted_json_byte_for_byte():
    built = Recipe(preset="cpu-u8s8", reduce_range=False).with_excluded(["z", "m", "a"])
    as_project_stores_it = json.dumps(json.loads(built.to_json()), indent=2, sort_keys=True)
    assert Recipe.from_json(as_project_stores_it).to_json() == built.to_json()


@pytest.mark.parametrize(("text", "message"), [
    ('{"rules": [{"name": "*", "activation": {"dtpye": "uint16"}}]}',
     "r.json: invalid recipe at rules.0.activation.dtpye: unknown field 'dtpye' (did you mean 'dtype'?)."),
    ('{"exlude": ["a"]}', "r.json: invalid recipe at exlude: unknown field 'exlude' (did you mean 'exclude'?)."),
    ('{"exlude": [], "rules": [{"nmae": "*"}]}',
     "r.json: invalid recipe at rules.0.nmae: unknown field 'nmae' (did you mean 'name'?) (and 1 more problem)."),
    ('{"preset": "cpu-u8s8",}', "r.json: not valid JSON: trailing comma at line 1 column 23."),
    # the --preset flag guessed; the same typo inside a recipe file did not
    ('{"preset": "cpu-u8s9"}', "r.json: invalid recipe at preset: unknown preset 'cpu-u8s9' (did you mean "
                               "'cpu-u8s8'?); use one of cpu-u8s8, s8s8, a16w8, w4-block, fp8-e4m3, dynamic-u8."),
    ('{"preset": "zzz"}', "r.json: invalid recipe at preset: unknown preset 'zzz'; use one of cpu-u8s8, s8s8, a16w8, "
                          "w4-block, fp8-e4m3, dynamic-u8."),
])
def test_recipe_typos_are_named_with_a_guess(text, message):
    """A new user's typo read "Extra inputs are not permitted", and a syntax error "Fix that field"."""
    with pytest.raises(RecipeError) as info:
        Recipe.from_json(text, source="r.json")
    assert info.value.message == message


def test_a_preset_typo_gets_a_guess():
    from workbench.core.recipe.presets import get_preset

    with pytest.raises(RecipeError) as info:
        get_preset("cpu-u8s9")
    assert info.value.message == "unknown preset 'cpu-u8s9' (did you mean 'cpu-u8s8'?)."
