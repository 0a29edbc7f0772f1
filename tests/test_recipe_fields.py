"""A recipe record's annotations are the one definition of its fields: the fast checks the record runs
without pydantic and the pydantic model generated on first use both come from them (names in order,
defaults, validators, frozen / extra), and agree on what they accept and refuse."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, ValidationError

from workbench.core.recipe import spec
from workbench.core.recipe.fields import REQUIRED, Factory, Valid, between, fast_check
from workbench.core.recipe.recipe import Recipe, ResolvedNode
from workbench.core.recipe.record import Record
from workbench.core.recipe.spec import NodeSettings, QuantSpec, Rule

ALL = (QuantSpec, spec.NodeConfig, spec.PartialSpec, NodeSettings, Rule, spec.SmoothQuantSpec, spec.Preset, Recipe,
       ResolvedNode)


@pytest.mark.parametrize(("hint", "kept", "handed_on"), [
    (int, [0, -3], [True, 1.0, "1"]),  # a bool is no int here, an int no float: pydantic would convert them
    (float, [0.5], [1, True]),
    (int | None, [None, 4], [4.0]),
    (Literal["qdq", "qonnx"], ["qdq", "qonnx"], ["QDQ", 1]),
    (list[str], [[], ["a"]], [("a",), ["a", 1]]),
    (tuple[str, ...], [(), ("a", "b")], [["a"]]),
    (dict[str, float], [{}, {"a": 1.0}], [{"a": 1}, {1: 1.0}]),
    (Annotated[float, between(0.0, 1.0)], [0.0, 1.0], [1.5, -0.1, 1]),
    (QuantSpec | None, [None, QuantSpec()], [{"dtype": "int8"}]),
])
def test_fast_checks_keep_only_values_pydantic_keeps_as_given(hint, kept, handed_on):
    check = fast_check(hint)
    assert [check(v) for v in kept] == [True] * len(kept)
    assert [check(v) for v in handed_on] == [False] * len(handed_on)


def test_a_type_with_no_fast_check_is_refused_when_the_class_is_made():
    with pytest.raises(TypeError, match="no fast check"):
        class _Odd(Record):
            when: set[int] = Factory(set)


@pytest.mark.parametrize("record", ALL, ids=lambda c: c.__name__)
def test_each_generated_model_has_the_records_fields_defaults_and_config(record):
    model = record._pydantic_model()
    assert model.__name__ == record.__name__
    assert list(model.model_fields) == list(record.model_fields)
    for name, default in record.model_fields.items():
        field = model.model_fields[name]
        if isinstance(default, Factory):
            assert field.default_factory is default.make
        else:
            assert field.is_required() == (default is REQUIRED)
            assert default is REQUIRED or field.default == default
    assert model.model_config.get("frozen", False) == record._frozen
    assert model.model_config.get("extra", "ignore") == record._extra


def test_counts_of_fields_and_the_rule_model_extends_the_settings_model():
    counts = [len(c.model_fields) for c in ALL]
    assert counts == [9, 3, 10, 4, 6, 3, 6, 9, 5]
    assert issubclass(Rule._pydantic_model(), NodeSettings._pydantic_model())
    assert QuantSpec._pydantic_model().__bases__ == (BaseModel,)


def _halve(v: int) -> int:
    if v % 2:
        raise ValueError(f"{v} is odd: use an even number")
    return v // 2


class _Halves(Record, frozen=True):
    size: Annotated[int, Valid(_halve)] | None = None
    kind: Literal["a", "b"] = "a"

    def _consistent(self) -> None:
        if self.kind == "b" and self.size is None:
            raise ValueError("kind b needs a size")


def test_a_validator_and_the_consistency_check_run_in_the_record_and_its_model():
    assert _Halves(size=8).size == 4 and _Halves._pydantic_model()(size=8).size == 4
    for values, loc, message in [({"size": 7}, ("size",), "7 is odd: use an even number"),
                                 ({"size": "8"}, ("size",), "valid integer"),  # strict: a str is not converted
                                 ({"kind": "b"}, (), "kind b needs a size"),
                                 ({"kind": "c"}, ("kind",), "Input should be 'a' or 'b'")]:
        for build in (_Halves, _Halves._pydantic_model()):
            with pytest.raises(ValidationError) as info:
                build(**values)
            (error,) = info.value.errors()
            assert error["loc"] == loc and message in error["msg"]
