"""The recipe choice runs on a preset with node overrides and keeps them.

It ran only on a bare preset: one node set to int16 activations in the app made F5 say "Recipe choice skipped:
the recipe has 1 edit" and calibrate the preset as it was (ppocrv4_rec: output SQNR 9.6 dB instead of the
choice's ~11.5). Now every variant scored keeps the user's overrides, the units the choice promotes never
include an overridden node, and the chosen recipe holds the override unchanged. Rules, op types and
SmoothQuant still make it skip.
"""

from __future__ import annotations

import onnx
import pytest
from bundled_example import EXAMPLE

from workbench.cli import main
from workbench.core import api
from workbench.core.errors import RecipeError
from workbench.core.recipe.spec import NodeSettings, PartialSpec
from workbench.core.tuning import recipe_choice
from workbench.core.tuning.recipe_choice import choose_recipe

MODEL, DATA = EXAMPLE / "digits_cnn.onnx", EXAMPLE / "digits_cnn_calib.npz"
NODE = "/f/f.3/Conv"
INT16 = NodeSettings(activation=PartialSpec(dtype="int16"))


def _user_recipe() -> api.Recipe:
    return api.make_recipe("cpu-u8s8").with_overrides([NODE], INT16)


def test_the_choice_runs_around_a_node_override_and_keeps_it(monkeypatch):
    model = api.open_model(MODEL)
    scored: list[api.Recipe] = []
    candidates: list[list[str]] = []
    real_quantize, real_find = recipe_choice.quantize, recipe_choice.find_promotion

    def spy_quantize(m, recipe, **kw):
        scored.append(recipe)
        return real_quantize(m, recipe, **kw)

    def spy_find(units, gain):
        candidates.append(list(units))
        return real_find(units, gain)
    monkeypatch.setattr(recipe_choice, "quantize", spy_quantize)
    monkeypatch.setattr(recipe_choice, "find_promotion", spy_find)
    rep = choose_recipe(model, _user_recipe(), str(DATA), samples=40)
    assert rep.skipped is None and rep.held_out == 10
    assert set(rep.scores) == {"preset", "mse", "compute+mse"}
    assert rep.recipe.overrides[NODE] == INT16  # unchanged
    assert rep.recipe.bias_correction  # a chosen recipe: a project or --recipe replays it as written
    assert rep.chosen == "compute+mse" and api.why_not_choose(rep.recipe) is not None  # not chosen again
    # every variant and promotion group scored kept the override
    assert scored and all(r.overrides.get(NODE) == INT16 for r in scored)
    # the overridden node was no promotion candidate; the other units were
    assert candidates == [["/f/f.0/Conv", "/f/f.7/Conv", "/head/head.2/Gemm"]]
    promoted = rep.promotion.units if rep.promotion is not None else []
    assert NODE not in promoted
    assert set(rep.recipe.overrides) == {NODE, *promoted}
    # the chosen recipe quantizes the node at int16, as the user set it
    res = api.quantize(model, rep.recipe, data=str(DATA), samples=40, calibration=rep.calibration)
    unit = next(u for u in res.plan.units.values() if u.node == NODE)
    assert not unit.excluded and {res.plan.activations[t].dtype for t in unit.outputs} == {"int16"}


def test_a_rule_or_op_types_still_skip():
    model = api.open_model(MODEL)
    rule = api.Recipe.model_validate({"preset": "cpu-u8s8", "rules": [{"op_type": "Conv",
                                                                       "activation": {"dtype": "int16"}}]})
    for given in (rule, _user_recipe().model_copy(update={"op_types": ["Conv"]})):
        rep = choose_recipe(model, given, str(DATA), samples=40)
        assert rep.skipped == recipe_choice.CHOICE_RULES and rep.recipe is given


def test_cli_recipe_file_with_overrides_chooses_and_no_auto_uses_it(tmp_path, capsys):
    recipe = tmp_path / "r.json"
    recipe.write_text(_user_recipe().to_json())
    out, plain = tmp_path / "q.onnx", tmp_path / "plain.onnx"
    assert main(["quantize", str(MODEL), "--data", str(DATA), "--samples", "40", "--recipe", str(recipe),
                 "-o", str(out), "--no-latency-check", "--save-project", str(tmp_path / "p.wbproj")]) == 0
    err = capsys.readouterr().err
    assert "the --recipe file holds a preset and 1 node override only, so the recipe choice runs" in err
    assert "recipe choice: compute+mse (output SQNR on 10 held-out rows" in err
    saved = api.load_project(tmp_path / "p.wbproj").recipe
    assert saved.overrides[NODE] == INT16 and saved.bias_correction
    # the saved project replays byte for byte (its recipe is a chosen one: not chosen again)
    again = tmp_path / "again.onnx"
    assert main(["quantize", str(tmp_path / "p.wbproj"), "-o", str(again)]) == 0
    assert "recipe choice:" not in capsys.readouterr().err
    assert again.read_bytes() == out.read_bytes()
    # --no-auto: the file as written
    assert main(["quantize", str(MODEL), "--data", str(DATA), "--samples", "40", "--recipe", str(recipe),
                 "-o", str(plain), "--no-latency-check", "--no-auto"]) == 0
    assert "recipe choice:" not in capsys.readouterr().err
    assert onnx.load(str(plain)).graph != onnx.load(str(out)).graph


def test_cli_recipe_file_with_a_bare_preset_is_still_used_as_written(tmp_path, capsys):
    recipe = tmp_path / "r.json"
    recipe.write_text('{"preset": "cpu-u8s8"}')
    assert main(["quantize", str(MODEL), "--data", str(DATA), "--samples", "40", "--recipe", str(recipe),
                 "-o", str(tmp_path / "q.onnx"), "--no-latency-check"]) == 0
    assert "recipe choice:" not in capsys.readouterr().err


def test_an_override_the_preset_refuses_is_refused_before_the_choice_calibrates(tmp_path, capsys, monkeypatch):
    """``observer_args`` an override sets without ``observer`` go to the preset's minmax, which does not read
    ``bins``: the preset's plan refused it only after the choice's calibration pass and first scores."""

    def no_calibration(*args, **kw):
        pytest.fail("the recipe choice calibrated before refusing the override")

    monkeypatch.setattr(recipe_choice, "calibrate_split", no_calibration)
    monkeypatch.setattr(recipe_choice, "open_data_source", no_calibration)
    recipe = tmp_path / "r.json"
    recipe.write_text('{"overrides": {"/f/f.0/Conv": {"activation": {"observer_args": {"bins": 512}}}}}')
    assert main(["quantize", str(MODEL), "--data", str(DATA), "--recipe", str(recipe), "-o", str(tmp_path / "q.onnx"),
                 "--no-latency-check"]) == 2
    err = capsys.readouterr().err
    assert (f"error: {recipe}: invalid recipe at overrides./f/f.0/Conv.activation.observer_args (override of node "
            "/f/f.0/Conv): 'bins' is not read by the inherited minmax observer, which reads only averaging_constant "
            "(from preset cpu-u8s8).") in err  # refused when the file is read
    assert "Calibrating" not in err and "Choosing the recipe" not in err
    assert not (tmp_path / "q.onnx").exists()
    with pytest.raises(RecipeError):  # the app's choice (F5) goes through the same function
        choose_recipe(api.open_model(MODEL), api.Recipe.from_json(recipe.read_text()), str(DATA))
