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


@pytest.mark.parametrize(("text", "message"), [
    # a new user's recipe with the activation settings at the top level read
    # "unknown field 'activation' (did you mean 'activation'?)"
    ('{"preset": "cpu-u8s8", "activation": {"dtype": "int16"}}',
     "r.json: invalid recipe at activation: 'activation' is not a field at the top level; it goes in a rule "
     '({"rules": [{"op_type": "Conv", "activation": ...}]}) or in an override ({"overrides": {"NODE": '
     '{"activation": ...}}}).'),
    ('{"dtype": "int8"}',
     "r.json: invalid recipe at dtype: 'dtype' is not a field at the top level; it goes in a weight / activation / "
     'bias spec ({"rules": [{"op_type": "Conv", "activation": {"dtype": ...}}]}).'),
    ('{"rules": [{"op_type": "Conv", "observer": "mse"}]}',
     "r.json: invalid recipe at rules.0.observer: 'observer' is not a field in a rule; it goes in a weight / "
     'activation / bias spec ({"rules": [{"op_type": "Conv", "activation": {"observer": ...}}]}).'),
    ('{"overrides": {"/f/Conv": {"name": "x"}}}',
     "r.json: invalid recipe at overrides./f/Conv.name: 'name' is not a field in an override; it goes in a rule "
     '({"rules": [{"name": ...}]}).'),
    ('{"alpha": 0.5}',
     "r.json: invalid recipe at alpha: 'alpha' is not a field at the top level; it goes in smoothquant "
     '({"smoothquant": {"alpha": ...}}).'),
])
def test_a_field_at_the_wrong_level_says_where_it_goes(text, message):
    with pytest.raises(RecipeError) as info:
        Recipe.from_json(text, source="r.json")
    assert info.value.message == message
    assert info.value.hint == "Move it there (see README, 'Recipes')."
    assert "did you mean" not in info.value.message


def test_every_example_of_where_a_field_goes_is_read_as_a_recipe():
    """The examples the message gives are valid recipes once ``...`` is a value of that field."""
    examples = {
        '{"rules": [{"op_type": "Conv", "activation": {"dtype": "int16"}}]}',
        '{"overrides": {"NODE": {"activation": {"dtype": "int16"}}}}',
        '{"rules": [{"name": "x"}]}',
        '{"smoothquant": {"alpha": 0.5}}',
    }
    for text in examples:
        Recipe.from_json(text, source="r.json")


def test_a_preset_typo_gets_a_guess():
    from workbench.core.recipe.presets import get_preset

    with pytest.raises(RecipeError) as info:
        get_preset("cpu-u8s9")
    assert info.value.message == "unknown preset 'cpu-u8s9' (did you mean 'cpu-u8s8'?)."


@pytest.mark.parametrize(("text", "message"), [
    ('{"reduce_range": "yes"}',
     'r.json: invalid recipe at reduce_range: "yes" is not a boolean; write true or false, without quotes.'),
    ('{"bias_correction": 1}', "r.json: invalid recipe at bias_correction: 1 is not a boolean; write true or false."),
    ('{"rules": [{"op_type": "Conv", "weight": {"symmetric": "false"}}]}',
     'r.json: invalid recipe at rules.0.weight.symmetric: "false" is not a boolean; write true or false, '
     "without quotes."),
    ('{"rules": [{"op_type": "Conv", "weight": {"axis": "1"}}]}',
     'r.json: invalid recipe at rules.0.weight.axis: "1" is not an integer; write a whole number (e.g. 3), '
     "without quotes."),
    ('{"rules": [{"op_type": "Conv", "weight": {"block_size": 32.5}}]}',
     "r.json: invalid recipe at rules.0.weight.block_size: 32.5 is not an integer; write a whole number (e.g. 3)."),
    ('{"smoothquant": {"alpha": "0.5"}}',
     'r.json: invalid recipe at smoothquant.alpha: "0.5" is not a number; write a number (e.g. 0.5), without quotes.'),
    ('{"overrides": {"a": {"activation": {"observer_args": {"bins": "512"}}}}}',
     'r.json: invalid recipe at overrides.a.activation.observer_args.bins: "512" is not a number; write a number '
     "(e.g. 0.5), without quotes."),
    ('{"exclude": [], "reduce_range": "' + "y" * 50 + '"}',
     "r.json: invalid recipe at reduce_range: a JSON string is not a boolean; write true or false, without quotes."),
])
def test_values_of_the_wrong_json_type_are_refused_not_converted(text, message):
    """``"reduce_range": "yes"`` was read as true, ``"axis": "1"`` as 1 and ``"bins": "512"`` as 512.0."""
    with pytest.raises(RecipeError) as info:
        Recipe.from_json(text, source="r.json")
    assert info.value.message == message
    assert info.value.hint == "Fix that field (see README, 'Recipes')."


def test_a_nan_is_said_not_to_be_a_number():
    """NaN is accepted by the JSON reader, then the field's bound said 'Input should be less than or equal to 1'."""
    with pytest.raises(RecipeError) as info:
        Recipe.from_json('{"smoothquant": {"alpha": NaN}}', source="r.json")
    assert info.value.message == "r.json: invalid recipe at smoothquant.alpha: NaN is not a number; write a number (e.g. 0.5)."
    assert info.value.hint == "Fix that field (see README, 'Recipes')."


@pytest.mark.parametrize("text", ["", " \n"])
def test_an_empty_recipe_file_is_said_empty(text):
    """It read 'not valid JSON: EOF while parsing a value at line 1 column 0'."""
    with pytest.raises(RecipeError) as info:
        Recipe.from_json(text, source="r.json")
    assert info.value.message == "r.json: the recipe file is empty."
    assert info.value.hint == 'Write a recipe JSON object there, e.g. {"preset": "cpu-u8s8"} (see README, \'Recipes\').'


def test_json_integers_still_pass_as_floats_and_booleans_as_booleans():
    recipe = Recipe.from_json('{"reduce_range": false, "smoothquant": {"alpha": 1}, "overrides": '
                              '{"a": {"activation": {"observer": "entropy", "observer_args": {"bins": 512}}}}}')
    assert recipe.reduce_range is False and recipe.smoothquant.alpha == 1.0
    assert recipe.overrides["a"].activation.observer_args == {"bins": 512.0}


@pytest.mark.parametrize(("text", "message"), [
    # a typo in a value guessed as the preset's and a field name's are; it read "unknown observer 'percentil'; use
    # one of minmax, percentile, entropy, mse" with no guess
    ('{"rules": [{"op_type": "Conv", "activation": {"observer": "percentil"}}]}',
     "r.json: invalid recipe at rules.0.activation.observer: unknown observer 'percentil' (did you mean "
     "'percentile'?); use one of minmax, percentile, entropy, mse."),
    ('{"rules": [{"op_type": "Conv", "weight": {"dtype": "unit8"}}]}',
     "r.json: invalid recipe at rules.0.weight.dtype: unknown dtype 'unit8' (did you mean 'uint8'?); use one of "),
    ('{"rules": [{"op_type": "Conv", "activation": {"observer": "percentile", "observer_args": {"percentil": 99}}}]}',
     "r.json: invalid recipe at rules.0.activation.observer_args: unknown observer_args 'percentil' (did you mean "
     "'percentile'?); use "),
    ('{"rules": [{"op_type": "Conv", "weight": {"dtype": "float16"}}]}',  # no close name: no guess
     "r.json: invalid recipe at rules.0.weight.dtype: unknown dtype 'float16'; use one of "),
])
def test_a_value_typo_gets_a_guess(text, message):
    with pytest.raises(RecipeError) as info:
        Recipe.from_json(text, source="r.json")
    assert info.value.message.startswith(message), info.value.message
