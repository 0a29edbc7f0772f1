"""The recipe's plain records copy, freeze and serialise as the pydantic models they replaced did:
``copy.copy`` gives a record with its own fields, a frozen record refuses assignment and deletion with
pydantic's ``frozen_instance`` ValidationError, and a resolved node goes through pydantic (JSON with
floats, values of other types) like every other record."""

from __future__ import annotations

import copy
import json

import pytest
from pydantic import ValidationError

from workbench.core.recipe.recipe import Recipe, ResolvedNode, resolve_node
from workbench.core.recipe.spec import NodeSettings, PartialSpec, QuantSpec, Rule, SmoothQuantSpec


def test_a_shallow_copy_has_its_own_fields():
    recipe = Recipe(exclude=["a"], overrides={"n": NodeSettings(exclude=True)})
    shallow = copy.copy(recipe)
    shallow.exclude = ["b"]
    shallow.preset = "s8s8"
    assert (recipe.exclude, recipe.preset) == (["a"], "cpu-u8s8")
    assert (shallow.exclude, shallow.preset) == (["b"], "s8s8")
    assert recipe.model_fields_set == {"exclude", "overrides"}
    assert shallow.model_fields_set == {"exclude", "overrides", "preset"}
    # shallow as pydantic's copy: the values themselves are shared
    assert copy.copy(recipe).overrides is recipe.overrides


def test_a_deep_copy_keeps_a_record_shared_between_records_shared():
    part = PartialSpec(dtype="uint16")
    recipe = Recipe(rules=[Rule(op_type="Conv", activation=part)], overrides={"n": NodeSettings(activation=part)})
    deep = copy.deepcopy(recipe)
    assert deep == recipe and deep.rules[0].activation is not part
    assert deep.rules[0].activation is deep.overrides["n"].activation  # one copy, as pydantic's deepcopy made
    deep.rules[0].activation.dtype = "int16"
    assert (part.dtype, deep.overrides["n"].activation.dtype) == ("uint16", "int16")
    assert deep.model_fields_set == recipe.model_fields_set == {"rules", "overrides"}


@pytest.mark.parametrize("record", [QuantSpec(dtype="uint8", symmetric=False), SmoothQuantSpec(alpha=0.25)],
                         ids=["QuantSpec", "SmoothQuantSpec"])
def test_a_frozen_record_refuses_assignment_and_deletion_as_pydantic_did(record):
    field = next(iter(type(record).model_fields))
    before = (record.model_dump(), hash(record) if isinstance(record, SmoothQuantSpec) else None)
    with pytest.raises(ValidationError) as assigned:
        setattr(record, field, None)
    with pytest.raises(ValidationError) as deleted:
        delattr(record, field)
    for exc, given in ((assigned.value, None), (deleted.value, None)):
        assert isinstance(exc, ValueError)
        assert exc.errors(include_url=False) == [{"type": "frozen_instance", "loc": (field,),
                                                  "msg": "Instance is frozen", "input": given}]
        assert exc.title == type(record).__name__
    assert (record.model_dump(), hash(record) if isinstance(record, SmoothQuantSpec) else None) == before


def test_a_resolved_node_with_float_arguments_round_trips_through_json():
    recipe = Recipe(rules=[Rule(op_type="Conv", activation=PartialSpec(
        observer="percentile", observer_args={"percentile": 99.9, "bins": 1024.0}))])
    node = resolve_node(recipe, "c1", "Conv")
    text = node.model_dump_json()
    assert text == ResolvedNode._pydantic_model().model_validate_json(text).model_dump_json()
    assert json.loads(text)["config"]["activation"]["observer_args"] == {"bins": 1024.0, "percentile": 99.9}
    again = ResolvedNode.model_validate_json(text)
    assert again == node and type(again) is ResolvedNode
    assert again.config.activation.observer_args == {"bins": 1024.0, "percentile": 99.9}
    # a value of another type goes to pydantic, whose bool is strict (1 was converted to True)
    with pytest.raises(ValidationError) as info:
        ResolvedNode(node="c1", op_type="Conv", config=node.config, excluded=1, sources={})
    assert info.value.errors()[0]["loc"] == ("excluded",) and info.value.errors()[0]["type"] == "bool_type"
