"""The field table of a recipe record, read from its class annotations: the one place a record's fields
are written (:mod:`workbench.core.recipe.record` runs them without pydantic;
:mod:`workbench.core.recipe.models` builds the pydantic model of the same fields from them).

A field's annotation is its type; ``Annotated`` metadata adds what the type does not say:
:class:`Valid` (a validator of the value, e.g. a known dtype name) and :class:`Check` (a fast check
and a pydantic type of its own, e.g. ``observer_args``, whose keys pydantic checks one by one). The
fast check of a field is true only for values pydantic keeps exactly as given (the exact type: a
bool is not an int, an int is not a float), so a record built from such values equals the model.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from enum import Enum
from types import NoneType, UnionType
from typing import Annotated, Any, ClassVar, Literal, Union

#: types pydantic keeps as given only when the value is of exactly that type
_EXACT = (bool, int, float, str, NoneType)
#: the default of a field that has none (a value must be given)
REQUIRED: Any = object()


class Factory:
    """A default made per instance (``Factory(list)``), like pydantic's ``Field(default_factory=...)``."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


class Check:
    """``Annotated`` metadata: the field's fast check ``fast(value) -> bool``, and ``model(t)``: the type
    its pydantic model gives the field, from ``t`` (the annotated type as the model sees it); called on
    first use of the model, so it may import pydantic."""

    def __init__(self, fast: Callable[[Any], bool], model: Callable[[Any], Any]) -> None:
        self.fast, self.model = fast, model


class Valid:
    """``Annotated`` metadata: a validator run on a value of the field's type, by the record and, as an
    ``AfterValidator``, by its pydantic model. ``fn(value)`` (or ``fn(value, earlier)`` with
    ``earlier=True``: the fields declared before it, as pydantic's ``info.data``) returns the value to
    keep, or raises ValueError with the text a recipe error shows."""

    def __init__(self, fn: Callable[..., Any], *, earlier: bool = False) -> None:
        self.fn, self.earlier = fn, earlier

    def __call__(self, value: Any, earlier: dict[str, Any]) -> Any:
        return self.fn(value, earlier) if self.earlier else self.fn(value)


def between(lo: float, hi: float) -> Check:
    """A float field in ``[lo, hi]``: pydantic's ``Field(ge=lo, le=hi)`` (its errors name the bound)."""

    def model(t: Any) -> Any:
        from pydantic import Field

        return Annotated[t, Field(ge=lo, le=hi)]

    return Check(lambda v: type(v) is float and lo <= v <= hi, model)


class Table:
    """One record class's fields in declaration order (a base record's first): ``hints`` (name ->
    annotation, ``Annotated`` kept), ``defaults`` (name -> value, :class:`Factory` or :data:`REQUIRED`),
    ``fast`` (name -> fast check), ``valid`` (name -> validators, run on a value that is not None),
    ``enums`` (name -> the Enum a str naming a member becomes)."""

    def __init__(self, hints: dict[str, Any], defaults: dict[str, Any]) -> None:
        self.hints, self.defaults = hints, defaults
        self.fast = {name: fast_check(h) for name, h in hints.items()}
        self.valid = {name: v for name, h in hints.items() if (v := validators(h))}
        self.enums = {name: e for name, h in hints.items() if (e := _enum(h)) is not None}


def table(cls: type, base: Table) -> Table:
    """The fields of record class ``cls``: those of ``base`` (its base record's), then its own annotations
    that are not ``ClassVar``, each with the class attribute of its name as default. Raises TypeError
    for an annotation with no fast check."""
    own = cls.__dict__.get("__annotations__", {})
    hints = typing.get_type_hints(cls, include_extras=True)
    mine = {n: hints[n] for n in own if typing.get_origin(hints[n]) is not ClassVar}
    return Table({**base.hints, **mine}, {**base.defaults, **{n: cls.__dict__.get(n, REQUIRED) for n in mine}})


def _arms(hint: Any) -> tuple[Any, ...] | None:
    """The types of a union (``X | None``), or None when ``hint`` is no union."""
    return typing.get_args(hint) if typing.get_origin(hint) in (Union, UnionType) else None


def fast_check(hint: Any) -> Callable[[Any], bool]:
    """A predicate true only for values of ``hint`` that pydantic keeps exactly as given."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        checks = [m for m in hint.__metadata__ if isinstance(m, Check)]
        return checks[-1].fast if checks else fast_check(args[0])
    if (arms := _arms(hint)) is not None:
        each = [fast_check(a) for a in arms]
        return lambda v: any(c(v) for c in each)
    if origin is Literal:
        return lambda v: any(type(v) is type(a) and v == a for a in args)
    if origin in (list, tuple):  # list[X], tuple[X, ...]
        item = fast_check(args[0])
        return lambda v: type(v) is origin and all(item(x) for x in v)
    if origin is dict:  # dict[str, X]
        item = fast_check(args[1])
        return lambda v: type(v) is dict and all(type(k) is str and item(x) for k, x in v.items())
    if hint in _EXACT:
        return lambda v: type(v) is hint
    if isinstance(hint, type) and origin is None:  # a record or an enum
        return lambda v: isinstance(v, hint)
    raise TypeError(f"a record field of type {hint!r} has no fast check")


def validators(hint: Any) -> list[Valid]:
    """The :class:`Valid` metadata of ``hint`` (``Annotated[T, Valid(...)]``, also as ``... | None``)."""
    if typing.get_origin(hint) is Annotated:
        return [m for m in hint.__metadata__ if isinstance(m, Valid)]
    arms = _arms(hint) or ()
    return [v for a in arms for v in validators(a)]


def _enum(hint: Any) -> type[Enum] | None:
    """The Enum of an enum field (also ``E | None``), else None."""
    if typing.get_origin(hint) is Annotated:
        return _enum(typing.get_args(hint)[0])
    for arm in _arms(hint) or (hint,):
        if isinstance(arm, type) and issubclass(arm, Enum):
            return arm
    return None
