"""A rule or override that sets both ``observer`` and ``observer_args`` is refused when the observer does not
read one of the args (``{"observer": "minmax", "observer_args": {"percentile": 99}}`` was accepted and the
percentile silently ignored); the error names the field, the ignored args and those the observer reads.
Args set without an observer go to the observer the node inherits, and are refused when a node resolves
(or, when the preset's observer is the one inherited, when the recipe file is read) and that one does not read them (``{"observer_args": {"bins": 512}}`` on a preset's minmax was accepted
and ignored), naming the rule, node, role and args and saying what to do."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from pydantic import ValidationError
from qdq_helpers import save_matmul_model

from workbench.cli import main
from workbench.core.calibration.observers import make_observer
from workbench.core.errors import RecipeError
from workbench.core.recipe.recipe import Recipe, resolve_node
from workbench.core.recipe.spec import OBSERVER_READS, PartialSpec, QuantSpec


def _recipe(part: dict, where: str = "rules") -> str:
    if where == "rules":
        return json.dumps({"rules": [{"op_type": "Conv", "activation": part}]})
    return json.dumps({"overrides": {"conv": {"weight": part}}})


@pytest.mark.parametrize(("part", "where", "message"), [
    ({"observer": "minmax", "observer_args": {"percentile": 99}}, "rules",
     "rules.0.activation.observer_args: 'percentile' is not read by the minmax observer, which reads only "
     "averaging_constant: remove it or choose an observer that reads it"),
    ({"observer": "entropy", "observer_args": {"percentile": 99, "averaging_constant": 0.1}}, "overrides",
     "overrides.conv.weight.observer_args: 'averaging_constant', 'percentile' are not read by the entropy observer, "
     "which reads only bins: remove them or choose an observer that reads them"),
    ({"observer": "mse", "observer_args": {"bins": 512, "percentile": 99.9}}, "rules",
     "rules.0.activation.observer_args: 'percentile' is not read by the mse observer, which reads only bins: "
     "remove it or choose an observer that reads it"),
    ({"observer": "percentile", "observer_args": {"averaging_constant": 0.5}}, "rules",
     "rules.0.activation.observer_args: 'averaging_constant' is not read by the percentile observer, which reads "
     "only bins and percentile: remove it or choose an observer that reads it"),
])
def test_args_the_observer_ignores_are_refused_naming_the_field(part, where, message):
    with pytest.raises(RecipeError) as info:
        Recipe.from_json(_recipe(part, where), source="r.json")
    assert info.value.message == f"r.json: invalid recipe at {message}."


def test_args_the_observer_reads_are_accepted():
    for observer, reads in OBSERVER_READS.items():
        args = {k: {"bins": 64, "percentile": 99.9, "averaging_constant": 0.5}[k] for k in reads}
        recipe = Recipe.from_json(_recipe({"observer": observer, "observer_args": args}))
        assert recipe.rules[0].activation.observer_args == args


def test_args_without_an_observer_are_left_to_the_inherited_one():
    part = PartialSpec(observer_args={"percentile": 99.0, "averaging_constant": 0.5})
    assert part.observer_args == {"averaging_constant": 0.5, "percentile": 99.0}


NOT_READ = ("'bins' is not read by the inherited minmax observer, which reads only averaging_constant: set "
            '"observer" there to one that reads it (percentile, entropy or mse), or remove it.')


@pytest.mark.parametrize(("recipe", "message"), [
    ({"rules": [{"op_type": "Conv", "activation": {"observer_args": {"bins": 512}}}]},
     f"rule op_type=Conv (node c1): activation.observer_args {NOT_READ}"),
    ({"overrides": {"c1": {"weight": {"observer_args": {"bins": 512}}}}},
     f"override (node c1): weight.observer_args {NOT_READ}"),
    ({"rules": [{"name": "c*", "activation": {"observer_args": {"bins": 512, "averaging_constant": 0.5}}}]},
     "rule name=c* (node c1): activation.observer_args 'bins' is not read by the inherited minmax observer, which "
     "reads only averaging_constant: remove it."),  # no observer reads both
    ({"rules": [{"op_type": "Conv", "activation": {"observer": "entropy"}},
                {"name": "c1", "activation": {"observer_args": {"percentile": 99.0}}}]},
     "rule name=c1 (node c1): activation.observer_args 'percentile' is not read by the inherited entropy observer, "
     'which reads only bins: set "observer" there to one that reads it (percentile), or remove it.'),
])
def test_args_without_an_observer_the_inherited_one_does_not_read_are_refused(recipe, message):
    parsed = Recipe(**recipe)  # built in memory (a recipe file is refused when read: test_recipe_conflicts_at_load)
    with pytest.raises(RecipeError) as info:
        resolve_node(parsed, "c1", "Conv")
    assert info.value.message == message
    assert "observer the node has from its preset or an earlier rule" in info.value.hint


def test_args_without_an_observer_the_inherited_one_reads_are_applied():
    recipe = Recipe.from_json(json.dumps({"rules": [
        {"op_type": "Conv", "activation": {"observer": "percentile"}, "weight": {"observer_args": {"averaging_constant": 0.25}}},
        {"name": "c*", "activation": {"observer_args": {"bins": 512, "percentile": 99.5}}}]}))
    config = resolve_node(recipe, "c1", "Conv").config
    assert (config.activation.observer, config.activation.observer_args) == \
        ("percentile", {"bins": 512.0, "percentile": 99.5})
    assert (config.weight.observer, config.weight.observer_args) == ("minmax", {"averaging_constant": 0.25})
    assert resolve_node(recipe, "other", "MatMul").config.activation.observer_args == {}  # no rule matches it


def test_quantize_refuses_args_the_inherited_observer_does_not_read(tmp_path, capsys):
    model = save_matmul_model(tmp_path / "m.onnx", np.random.default_rng(0))
    np.savez(tmp_path / "calib.npz", X=np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32))
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"rules": [{"op_type": "MatMul", "activation": {"observer_args": {"bins": 512}}}]}))
    args = ["quantize", str(model), "--data", str(tmp_path / "calib.npz"), "--no-auto", "--no-latency-check"]
    assert main([*args, "--recipe", str(recipe), "-o", str(tmp_path / "q.onnx")]) == 2
    err = capsys.readouterr().err
    assert (f"error: {recipe}: invalid recipe at rules.0.activation.observer_args (rule op_type=MatMul): 'bins' is not "
            "read by the inherited minmax observer, which reads only averaging_constant (from preset cpu-u8s8).") in err
    assert not (tmp_path / "q.onnx").exists()
    recipe.write_text(json.dumps({"rules": [{"op_type": "MatMul", "activation": {"observer": "entropy",
                                                                                 "observer_args": {"bins": 512}}}]}))
    assert main([*args, "--recipe", str(recipe), "-o", str(tmp_path / "q2.onnx")]) == 0
    assert [n.op_type for n in onnx.load(str(tmp_path / "q2.onnx")).graph.node].count("QuantizeLinear") >= 1


def test_partial_spec_built_in_code_is_checked():
    with pytest.raises(ValidationError, match=r"observer_args\n.*'bins' is not read by the minmax observer"):
        PartialSpec(observer="minmax", observer_args={"bins": 64})


@pytest.mark.parametrize("observer", sorted(OBSERVER_READS))
def test_each_observer_reads_the_args_listed_for_it(observer):
    """OBSERVER_READS matches the observers: each listed arg changes the observer built from the spec."""
    seen = {"bins": lambda o: o.num_bins, "percentile": lambda o: o.percentile,
            "averaging_constant": lambda o: o.averaging}
    values = {"bins": 64, "percentile": 99.5, "averaging_constant": 0.25}
    for key in OBSERVER_READS[observer]:
        obs = make_observer(QuantSpec(observer=observer, observer_args={key: values[key]}))
        assert seen[key](obs) == values[key]
    attr = {"bins": "num_bins", "percentile": "percentile", "averaging_constant": "averaging"}
    for key in set(values) - set(OBSERVER_READS[observer]):  # the others have nowhere to go
        assert not hasattr(make_observer(QuantSpec(observer=observer)), attr[key])


@pytest.mark.parametrize(("first", "then", "args"), [
    ({"observer": "entropy", "observer_args": {"bins": 512}}, {"observer": "minmax"}, {}),
    ({"observer": "percentile", "observer_args": {"bins": 512, "percentile": 99.9}}, {"observer": "entropy"},
     {"bins": 512.0}),
    ({"observer": "minmax", "observer_args": {"averaging_constant": 0.25}}, {"observer": "mse"}, {}),
    ({"observer": "percentile", "observer_args": {"percentile": 99.9}}, {"observer": "percentile"},
     {"percentile": 99.9}),
])
def test_an_observer_set_without_args_keeps_only_the_inherited_args_it_reads(first, then, args):
    """An override switching the observer of a rule with args: the args the new observer does not read are
    not carried to it (an entropy rule's bins 512 showed on the override's minmax, which ignores it)."""
    recipe = Recipe.from_json(json.dumps({"rules": [{"op_type": "Conv", "activation": first}],
                                          "overrides": {"c1": {"activation": then}}}))
    config = resolve_node(recipe, "c1", "Conv").config.activation
    assert (config.observer, config.observer_args) == (then["observer"], args)
    ruled = resolve_node(recipe, "c2", "Conv").config.activation  # the rule alone keeps its args
    assert (ruled.observer, ruled.observer_args) == (first["observer"], first["observer_args"])
