"""A rule or override that sets both ``observer`` and ``observer_args`` is refused when the observer does not
read one of the args (``{"observer": "minmax", "observer_args": {"percentile": 99}}`` was accepted and the
percentile silently ignored); the error names the field, the ignored args and those the observer reads."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from workbench.core.calibration.observers import make_observer
from workbench.core.errors import RecipeError
from workbench.core.recipe.recipe import Recipe
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
