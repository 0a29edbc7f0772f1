"""The pydantic models that validate recipe settings from outside (recipe files, project files, values that
are not already of the exact field type), generated on first use from the records' field tables
(:mod:`workbench.core.recipe.fields`): one model per record class, with its name, fields in order,
defaults, config (``frozen``, ``extra``), field validators (:class:`~workbench.core.recipe.fields.Valid`
as ``AfterValidator``) and its ``_consistent`` check as an ``after`` model validator; ``bool``, ``int``
and ``float`` fields are strict (no string converted). Nothing here imports pydantic until a model is
asked for, so pydantic (about 11 MiB resident with the OpenSSL it loads) stays out of a job that reads
no recipe file."""

from __future__ import annotations

import functools
import typing
from types import UnionType
from typing import Annotated, Any, Literal, Union

from workbench.core.recipe.fields import REQUIRED, Check, Factory, Valid


def _is_record(t: Any) -> bool:
    return isinstance(t, type) and hasattr(t, "TABLE") and hasattr(t, "_pydantic_model")


@functools.cache
def model_of(record: type) -> Any:
    """The pydantic model of record class ``record`` (built once; a base record's model is its base).

    Its fields are those of ``record.TABLE``, with the types of :func:`model_type` and the table's defaults
    (a :class:`Factory` as ``default_factory``); ``ValidationError`` names the bad field.
    """
    from pydantic import BaseModel, ConfigDict, Field, model_validator

    parent = record.__mro__[1]
    base = parent._pydantic_model() if _is_record(parent) and parent.TABLE.hints else BaseModel
    own = [n for n in record.TABLE.hints if n not in getattr(base, "model_fields", {})]
    ns: dict[str, Any] = {"__module__": record.__module__, "__qualname__": record.__name__,
                          "__annotations__": {n: model_type(record.TABLE.hints[n]) for n in own},
                          "model_config": ConfigDict(frozen=record._frozen, extra=record._extra)}
    for name in own:
        default = record.TABLE.defaults[name]
        if isinstance(default, Factory):
            ns[name] = Field(default_factory=default.make)
        elif default is not REQUIRED:
            ns[name] = default
    if "_consistent" in vars(record):
        ns["_consistent"] = model_validator(mode="after")(_after(record._consistent))
    return type(base)(record.__name__, (base,), ns)


def _after(check: Any) -> Any:
    def consistent(self: Any) -> Any:
        check(self)  # the record's own check, run on the model (the same field names)
        return self

    return consistent


def model_type(hint: Any) -> Any:
    """``hint`` as the pydantic model's field type: records as their models, :class:`Check` types as
    their ``model``, :class:`Valid` metadata as ``AfterValidator`` (inside lists, dicts, unions too)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        from pydantic import AfterValidator

        marks = hint.__metadata__
        checks = [m for m in marks if isinstance(m, Check)]
        inner = checks[-1].model(model_type(args[0])) if checks else model_type(args[0])
        after = [AfterValidator(_pydantic_validator(m)) for m in marks if isinstance(m, Valid)]
        return Annotated[(inner, *after)] if after else inner
    if origin in (Union, UnionType):
        return Union[tuple(model_type(a) for a in args)]  # noqa: UP007  (built from a tuple)
    if origin in (list, tuple, dict):
        return origin[tuple(a if a is Ellipsis else model_type(a) for a in args)]
    if origin is Literal:
        return hint
    if _is_record(hint):
        return hint._pydantic_model()
    return _strict(hint) if hint in (bool, int, float) else hint


def _strict(hint: type) -> Any:
    """``bool``, ``int`` or ``float`` in pydantic's strict mode: a recipe's ``"reduce_range": "yes"`` was read
    as true and ``"axis": "1"`` as 1; strict, a string (or a number for a bool, a bool or 1.5 for an int) is
    a ``ValidationError`` at the field. A JSON integer still passes as a float (``"bins": 512``)."""
    from pydantic import Strict

    return Annotated[hint, Strict()]


def _pydantic_validator(valid: Valid) -> Any:
    """``valid`` as pydantic calls an ``AfterValidator``: ``(value)``, or ``(value, info)`` for ``earlier``."""
    if not valid.earlier:
        return valid.fn

    def with_earlier(value: Any, info: Any) -> Any:
        return valid.fn(value, info.data)

    return with_earlier
