"""The recipe's plain records (built without pydantic when the values are of the exact field types) give
what the pydantic models they mirror give: the same values, the same JSON bytes, the same
ValidationError at the same field; and the dumps of both agree for every field."""

from __future__ import annotations

import copy
import pickle

import pytest
from pydantic import ValidationError

from workbench.core.recipe.recipe import Recipe, ResolvedNode, resolve_node
from workbench.core.recipe.record import RECORDS
from workbench.core.recipe.spec import (
    Granularity,
    NodeConfig,
    NodeSettings,
    PartialSpec,
    QuantSpec,
    Rule,
    SmoothQuantSpec,
)


def _pydantic(name: str):
    return RECORDS[name]._pydantic_model()


GOOD = [
    (QuantSpec, {}),
    (QuantSpec, {"dtype": "uint8", "symmetric": False}),
    (QuantSpec, {"granularity": Granularity.per_channel, "axis": 1, "reduce_range": True}),
    (QuantSpec, {"granularity": "per_block", "block_size": 32, "dtype": "int4"}),  # a str: pydantic converts
    (QuantSpec, {"observer": "percentile", "observer_args": {"percentile": 99.99, "bins": 4096.0}}),
    (QuantSpec, {"observer": "entropy", "observer_args": {"bins": 512}}),  # an int: pydantic makes it 512.0
    (PartialSpec, {"enabled": True, "dtype": "int16", "observer": "minmax", "observer_args": {"averaging_constant": 0.01}}),
    (Rule, {"op_type": "Conv", "exclude": True}),
    (Rule, {"name": "blk.*", "activation": {"dtype": "uint16"}}),  # a dict: pydantic builds the PartialSpec
    (Recipe, {"preset": "s8s8", "exclude": ["a", "b"], "reduce_range": False}),
    (Recipe, {"overrides": {"z": NodeSettings(exclude=True), "a": NodeSettings(exclude=False)}}),
    (Recipe, {"exclude": ("t",)}),  # a tuple: pydantic makes it a list
    (Recipe, {"smoothquant": {"alpha": 0.75}, "target": "qonnx",
              "rules": [Rule(op_type="MatMul", weight=PartialSpec(dtype="int3"))]}),
]


@pytest.mark.parametrize(("cls", "values"), GOOD)
def test_a_record_equals_the_pydantic_model_it_mirrors(cls, values):
    record, model = cls(**values), _pydantic(cls.__name__).model_validate(_plain(values))
    assert record.model_dump() == model.model_dump()
    assert record.model_dump(mode="json") == model.model_dump(mode="json")
    assert record.model_fields_set == model.model_fields_set
    for indent in (None, 2):
        for exclude_defaults in (False, True):
            assert record.model_dump_json(indent=indent, exclude_defaults=exclude_defaults) == \
                model.model_dump_json(indent=indent, exclude_defaults=exclude_defaults)
    assert cls.model_validate_json(record.model_dump_json()) == record
    assert str(record) == str(model) and repr(record) == repr(model)


def _plain(v):
    """Records as the dicts of their set fields (pydantic's input), inside containers too."""
    if hasattr(v, "model_dump"):
        return v.model_dump(exclude_unset=True)
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(_plain(x) for x in v)
    return v


BAD = [
    (QuantSpec, {"dtype": "int9"}, ("dtype",), "unknown dtype 'int9'"),
    (QuantSpec, {"observer_args": {"bins": 4.0}}, ("observer_args", "bins"), "4 is out of range"),
    (QuantSpec, {"dtype": "int16", "reduce_range": True}, (), "reduce_range applies to 8-bit dtypes only"),
    (QuantSpec, {"symmetric": "maybe"}, ("symmetric",), "valid boolean"),
    (QuantSpec, {"symmetric": "true"}, ("symmetric",), "valid boolean"),  # strict: lax mode read it as true
    (QuantSpec, {"axis": True}, ("axis",), "valid integer"),  # strict: lax mode read it as 1
    (QuantSpec, {"axis": "1"}, ("axis",), "valid integer"),
    (QuantSpec, {"color": 1}, ("color",), "Extra inputs are not permitted"),
    (PartialSpec, {"observer": "minmax", "observer_args": {"bins": 64.0}}, ("observer_args",),
     "'bins' is not read by the minmax observer"),
    (Rule, {"op_type": "Conv", "name": "x"}, (), "exactly one of them"),
    (Recipe, {"preset": "cpu-u8s9"}, ("preset",), "did you mean 'cpu-u8s8'"),
    (Recipe, {"rules": [Rule(op_type="Conv", weight=PartialSpec(dtype="int3"))]}, (), "exists only in QONNX"),
]


@pytest.mark.parametrize(("cls", "values", "loc", "message"), BAD)
def test_invalid_values_raise_pydantics_error_at_the_field(cls, values, loc, message):
    with pytest.raises(ValidationError) as record_error:
        cls(**values)
    with pytest.raises(ValidationError) as model_error:
        _pydantic(cls.__name__).model_validate(_plain(values))
    assert record_error.value.errors()[0]["loc"] == model_error.value.errors()[0]["loc"] == loc
    assert message in record_error.value.errors()[0]["msg"]
    assert record_error.value.errors()[0]["msg"] == model_error.value.errors()[0]["msg"]


def test_json_bytes_with_floats_and_names_out_of_ascii():
    """Floats (1e-05 is 0.00001 in pydantic's JSON) and control characters are written by pydantic itself."""
    recipe = Recipe(exclude=["ñame/ü", "tab\there"], smoothquant={"alpha": 1e-05},
                    rules=[Rule(name="x*", activation=PartialSpec(observer="percentile",
                                                                observer_args={"percentile": 99.999}))])
    text = recipe.to_json()
    assert '"alpha": 0.00001' in text and "ñame/ü" in text and "tab\\there" in text
    assert text == _pydantic("Recipe").model_validate_json(text).model_dump_json(indent=2, exclude_defaults=True)
    assert Recipe.from_json(text) == recipe


def test_copies_equality_frozen_and_pickle():
    spec = QuantSpec(dtype="uint8", symmetric=False)
    assert spec == QuantSpec(dtype="uint8", symmetric=False) != QuantSpec()
    smooth = SmoothQuantSpec(alpha=0.25)
    assert hash(smooth) == hash(SmoothQuantSpec(alpha=0.25)) != hash(SmoothQuantSpec())
    with pytest.raises(ValidationError, match="Instance is frozen"):  # as the pydantic model raised it
        spec.dtype = "int8"
    moved = spec.model_copy(update={"axis": 2})
    assert (moved.axis, spec.axis, moved.model_fields_set) == (2, None, {"dtype", "symmetric", "axis"})
    recipe = Recipe(overrides={"n": NodeSettings(exclude=True)})
    deep = recipe.model_copy(deep=True)
    deep.overrides["m"] = NodeSettings(exclude=False)
    assert list(recipe.overrides) == ["n"] and list(deep.overrides) == ["n", "m"]
    recipe.exclude = ["x"]
    assert "exclude" in recipe.model_fields_set and recipe.exclude == ["x"]
    with pytest.raises(ValueError, match="no field"):
        recipe.colour = 1
    assert pickle.loads(pickle.dumps(recipe)) == recipe == copy.deepcopy(recipe)
    assert PartialSpec(dtype="int8", enabled=True).changes() == {"dtype": "int8"}


def test_resolve_from_a_built_in_preset_matches_the_pydantic_models():
    recipe = Recipe(rules=[Rule(op_type="Conv", activation=PartialSpec(dtype="uint16"))], reduce_range=True)
    node = resolve_node(recipe, "c1", "Conv")
    assert node.config == NodeConfig(weight=QuantSpec(dtype="int8", granularity="per_channel", reduce_range=True),
                                     activation=QuantSpec(dtype="uint16", symmetric=False),
                                     bias=QuantSpec(dtype="int32"))
    assert node.sources == {"weight": "preset cpu-u8s8", "activation": "rule op_type=Conv", "bias": "preset cpu-u8s8"}
    model = _pydantic("ResolvedNode").model_validate_json(node.model_dump_json())
    assert model.model_dump(mode="json") == node.model_dump(mode="json")


@pytest.mark.parametrize("recipe", [
    Recipe(),
    Recipe(preset="s8s8", exclude=["mm*"], reduce_range=False),
    Recipe(rules=[Rule(op_type="MatMul", weight=PartialSpec(granularity="per_tensor")),
                  Rule(name="mm2", activation=PartialSpec(enabled=False), exclude=True)],
           overrides={"add": NodeSettings(activation=PartialSpec(dtype="uint16"))}, op_types=["MatMul", "Add"]),
])
@pytest.mark.parametrize(("node", "op_type"), [("mm1", "MatMul"), ("mm2", "MatMul"), ("add", "Add"), ("relu", "Relu")])
def test_a_resolved_node_built_unvalidated_equals_the_validated_records(recipe, node, op_type):
    got = resolve_node(recipe, node, op_type)
    cfg = got.config
    want = ResolvedNode(node=node, op_type=op_type, excluded=got.excluded, sources=dict(got.sources),
                        config=NodeConfig(weight=cfg.weight, activation=cfg.activation, bias=cfg.bias))
    assert got == want
    assert got.model_dump_json() == want.model_dump_json() and got.model_fields_set == want.model_fields_set
    assert got.config.model_fields_set == want.config.model_fields_set == {"weight", "activation", "bias"}
    assert _pydantic("ResolvedNode").model_validate_json(got.model_dump_json()).model_dump(mode="json") == \
        got.model_dump(mode="json")
