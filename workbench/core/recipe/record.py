"""Plain typed records for the recipe's settings, without pydantic at import.

A :class:`Record` subclass declares its fields as class annotations with defaults; the annotations are
the one definition of the fields (:mod:`workbench.core.recipe.fields` reads them into the class's
``TABLE``: each field's fast check, a predicate that holds only for values pydantic would keep exactly
as given, and its validators). Building one from values that pass the fast checks, the validators
and the class's own consistency check (``_consistent``) costs no pydantic import: a quantize with a
built-in preset never loads it (pydantic and the OpenSSL that ``pydantic.types`` loads through
``secrets`` held about 11 MiB of digits_cnn's 93 MiB peak). Any other value is handed to the pydantic
model of the same name, generated from the same table on first use (:mod:`workbench.core.recipe.models`),
which coerces it or raises pydantic's ``ValidationError`` with the location of the bad field, so the
result and the errors are those of that model.

The methods follow pydantic's ``BaseModel`` (``model_dump``, ``model_dump_json``, ``model_copy``,
``model_validate``, ``model_validate_json``, ``model_fields``, ``model_fields_set``, equality,
frozen instances); ``model_dump_json`` writes the same bytes as pydantic (it delegates to pydantic
when a value is a float or a string with control characters, whose spelling could differ).
"""

from __future__ import annotations

import copy
import json
import math
import re
import typing
from enum import Enum
from types import UnionType
from typing import Annotated, Any, ClassVar, Literal, Union

from workbench.core.recipe import models
from workbench.core.recipe.fields import REQUIRED, Factory, Table, table

#: every record class by name: the pydantic model of each has the same name
RECORDS: dict[str, type] = {}


class Record:
    """Base of the recipe's records: fields are the class annotations (not ``ClassVar``), in declaration
    order, a base record's first; the class attribute of the same name is the default (or a
    :class:`Factory`). ``frozen=True`` in the class statement makes instances immutable and hashable;
    ``extra`` is what the pydantic model does with unknown fields ("forbid": a ValidationError)."""

    __slots__ = ("__dict__", "_fields_set")
    TABLE: ClassVar[Table] = Table({}, {})
    #: field name -> default (as pydantic's ``model_fields`` names them)
    model_fields: ClassVar[dict[str, Any]] = {}
    _frozen: ClassVar[bool] = False
    _extra: ClassVar[str] = "forbid"

    def __init_subclass__(cls, frozen: bool = False, extra: Literal["forbid", "ignore"] = "forbid",
                          **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls._frozen, cls._extra = frozen, extra
        cls.TABLE = table(cls, cls.__mro__[1].TABLE)
        cls.model_fields = cls.TABLE.defaults
        for name in cls.TABLE.hints:  # the defaults live in the table, the values in each instance
            if name in cls.__dict__:
                delattr(cls, name)
        cls.__hash__ = Record.__hash__ if frozen else None  # type: ignore[assignment]
        RECORDS[cls.__name__] = cls

    @classmethod
    def _pydantic_model(cls) -> Any:
        """The pydantic model of this record (same name and fields, generated from ``TABLE``); imports pydantic."""
        return models.model_of(cls)

    def __init__(self, **values: Any) -> None:
        enums = self.TABLE.enums
        values = {k: _enum_member(enums[k], v) if k in enums else v for k, v in values.items()}
        data = self._fast(values)
        if data is not None:
            object.__setattr__(self, "__dict__", data)
            object.__setattr__(self, "_fields_set", frozenset(values))
            try:
                return self._consistent()
            except (ValueError, TypeError):
                pass
        # pydantic decides: coerces, or raises ValidationError at the bad field
        other = self._pydantic_model().model_validate({k: _to_model(v) for k, v in values.items()})
        object.__setattr__(self, "__dict__", _fields_of(other))
        object.__setattr__(self, "_fields_set", frozenset(other.model_fields_set))

    def _fast(self, values: dict[str, Any]) -> dict[str, Any] | None:
        """The fields from ``values`` and the defaults, as pydantic would keep them, when every value passes
        its fast check and validators; else None (pydantic decides)."""
        fast, valid = self.TABLE.fast, self.TABLE.valid
        if not (set(values) <= set(fast) and all(fast[k](v) for k, v in values.items())):
            return None
        data: dict[str, Any] = {}
        try:
            for name, default in self.TABLE.defaults.items():
                if name in values:
                    value = _copy_container(values[name])
                    for check in valid.get(name, ()) if value is not None else ():
                        value = check(value, data)
                    data[name] = value
                elif default is REQUIRED:
                    return None
                else:
                    data[name] = default.make() if isinstance(default, Factory) else default
        except (ValueError, TypeError):
            return None
        return data

    def _consistent(self) -> None:
        """Raise ValueError when the fields contradict each other (run on the record's values and, as an
        ``after`` model validator, by its pydantic model); a subclass defines its own."""

    # -- pydantic BaseModel's interface -------------------------------------------------------------
    @property
    def model_fields_set(self) -> set[str]:
        return set(self._fields_set)

    def model_dump(self, *, mode: str = "python", exclude_unset: bool = False, exclude_defaults: bool = False,
                   exclude_none: bool = False) -> dict[str, Any]:
        """The fields as a dict (nested records as dicts); ``mode="json"``: enums as their values, tuples as lists."""
        flags = {"mode": mode, "exclude_unset": exclude_unset, "exclude_defaults": exclude_defaults,
                 "exclude_none": exclude_none}
        out = {}
        for name, default in self.model_fields.items():
            value = self.__dict__[name]
            if exclude_unset and name not in self._fields_set:
                continue
            if exclude_none and value is None:
                continue
            if exclude_defaults and default is not REQUIRED and \
                    value == (default.make() if isinstance(default, Factory) else default):
                continue
            out[name] = _dump(value, flags)
        return out

    def model_dump_json(self, *, indent: int | None = None, exclude_defaults: bool = False,
                        exclude_unset: bool = False) -> str:
        """JSON text, byte for byte as pydantic's ``model_dump_json`` writes it."""
        doc = self.model_dump(mode="json", exclude_defaults=exclude_defaults, exclude_unset=exclude_unset)
        if not _plain(doc):
            return _to_model(self).model_dump_json(indent=indent, exclude_defaults=exclude_defaults,
                                                   exclude_unset=exclude_unset)
        return json.dumps(doc, ensure_ascii=False, indent=indent, separators=(",", ": ") if indent else (",", ":"))

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Any:
        """A copy with ``update`` applied as given (not validated, as pydantic's ``model_copy``)."""
        data = copy.deepcopy(self.__dict__) if deep else dict(self.__dict__)
        data.update(update or {})
        out = object.__new__(type(self))
        object.__setattr__(out, "__dict__", data)
        object.__setattr__(out, "_fields_set", self._fields_set | frozenset(update or ()))
        return out

    @classmethod
    def model_construct(cls, _fields_set: set[str] | None = None, **values: Any) -> Any:
        """A record of ``values`` and the defaults, not validated (as pydantic's ``model_construct``)."""
        data = {name: values[name] if name in values else default.make() if isinstance(default, Factory)
                else default for name, default in cls.model_fields.items() if name in values or default is not REQUIRED}
        out = object.__new__(cls)
        object.__setattr__(out, "__dict__", data)
        object.__setattr__(out, "_fields_set", frozenset(values if _fields_set is None else _fields_set))
        return out

    @classmethod
    def model_validate(cls, obj: Any) -> Any:
        """A record from a dict (or a record of this class, returned as it is); pydantic's ValidationError when invalid."""
        if isinstance(obj, cls):
            return obj
        if type(obj) is dict and all(type(k) is str for k in obj):
            return cls(**obj)  # pydantic validates it unless every value passes the fast checks
        return _from_model(cls._pydantic_model().model_validate(obj))

    @classmethod
    def model_validate_json(cls, text: str | bytes) -> Any:
        """A record from JSON text; pydantic's ValidationError when invalid.

        Text whose every value, at every level, passes the fast checks and validators (:meth:`_from_json_doc`)
        builds the records without pydantic: the values pydantic keeps as given, so the same record. Anything
        else (invalid JSON, NaN / Infinity, a float beyond float64, a repeated key, an escaped lone surrogate, a
        value pydantic would coerce or refuse) goes to the pydantic model, which coerces it or raises.
        """
        doc = _plain_json(text)
        if type(doc) is dict:
            built = cls._from_json_doc(doc)
            if built is not _NOT_FAST:
                return built
        return _from_model(cls._pydantic_model().model_validate_json(text))

    @classmethod
    def _from_json_doc(cls, doc: dict[str, Any]) -> Any:
        """The record of a parsed JSON object when its values pass the fast checks, validators and
        :meth:`_consistent` (a JSON object at a record field built the same way), else :data:`_NOT_FAST`."""
        hints, enums = cls.TABLE.hints, cls.TABLE.enums
        values = {}
        for name, value in doc.items():
            if name not in hints:
                return _NOT_FAST
            value = _json_value(hints[name], value)
            if value is _NOT_FAST:
                return _NOT_FAST
            values[name] = _enum_member(enums[name], value) if name in enums else value
        out = object.__new__(cls)
        data = out._fast(values)
        if data is None:
            return _NOT_FAST
        object.__setattr__(out, "__dict__", data)
        object.__setattr__(out, "_fields_set", frozenset(values))
        try:
            out._consistent()
        except (ValueError, TypeError):
            return _NOT_FAST
        return out

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """Lets a pydantic model hold a record as a field (the project file's recipe)."""
        from pydantic_core import core_schema  # only where a pydantic model holds a record

        def check(value: Any, validate: Any) -> Any:
            return value if isinstance(value, cls) else _from_model(validate(value))

        model = handler.generate_schema(cls._pydantic_model())
        return core_schema.no_info_wrap_validator_function(
            check, model, serialization=core_schema.plain_serializer_function_ser_schema(
                _to_model, return_schema=model))

    # -- object protocol ----------------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        if self._frozen:
            raise self._frozen_error(name, value)
        if name not in self.TABLE.hints:
            raise ValueError(f'"{type(self).__name__}" object has no field "{name}"')
        self.__dict__[name] = value
        object.__setattr__(self, "_fields_set", self._fields_set | {name})

    def __delattr__(self, name: str) -> None:
        if self._frozen:  # a frozen record keeps every field (its hash and equality depend on them)
            raise self._frozen_error(name, None)
        object.__delattr__(self, name)

    def _frozen_error(self, name: str, value: Any) -> Exception:
        """pydantic's ``ValidationError`` (a ValueError) of type ``frozen_instance`` at ``name``: what a
        frozen pydantic model raises on assignment or deletion (imports pydantic_core, on this error only)."""
        from pydantic_core import ValidationError

        return ValidationError.from_exception_data(type(self).__name__, [
            {"type": "frozen_instance", "loc": (name,), "input": value}])

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__  # type: ignore[union-attr]

    def __hash__(self) -> int:
        return hash((type(self), *self.__dict__.values()))

    def __iter__(self):
        yield from self.__dict__.items()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._fields_text(', ')})"

    def __str__(self) -> str:
        return self._fields_text(" ")

    def _fields_text(self, sep: str) -> str:
        return sep.join(f"{k}={v!r}" for k, v in self.__dict__.items())

    def __copy__(self) -> Any:
        """A shallow copy with its own field dict (as pydantic's): assigning a field of the copy leaves
        this record as it is (the default copy would share the dict :meth:`__getstate__` returns)."""
        return self.model_copy()

    def __deepcopy__(self, memo: dict | None = None) -> Any:
        """A deep copy that shares ``memo`` with the enclosing ``copy.deepcopy`` (as pydantic's): a record
        held in two places of the copied structure is copied once, and both places hold that copy."""
        out = object.__new__(type(self))
        object.__setattr__(out, "__dict__", copy.deepcopy(self.__dict__, memo))
        object.__setattr__(out, "_fields_set", self._fields_set)
        return out

    def __getstate__(self) -> dict:
        return {"values": self.__dict__, "fields_set": self._fields_set}

    def __setstate__(self, state: dict) -> None:
        object.__setattr__(self, "__dict__", state["values"])
        object.__setattr__(self, "_fields_set", state["fields_set"])


# -- conversions ----------------------------------------------------------------------------------------
#: a JSON value :meth:`Record._from_json_doc` leaves to pydantic
_NOT_FAST: Any = object()
#: an escaped UTF-16 surrogate (``\\ud800``): Python's JSON reader keeps a lone one, pydantic's refuses it
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")


def _plain_json(text: str | bytes) -> Any:
    """``text`` parsed when it is JSON both readers read alike (no NaN / Infinity, no float beyond float64, no
    repeated key in an object, no escaped surrogate), else :data:`_NOT_FAST`."""
    if not isinstance(text, str) or _SURROGATE.search(text):
        return _NOT_FAST

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(items)
        if len(out) != len(items):
            raise ValueError("repeated key")
        return out

    def finite(s: str) -> float:
        f = float(s)
        if not math.isfinite(f):
            raise ValueError("beyond float64")
        return f

    def refuse(name: str) -> Any:
        raise ValueError(name)

    try:
        return json.loads(text, object_pairs_hook=pairs, parse_float=finite, parse_constant=refuse)
    except (ValueError, RecursionError):
        return _NOT_FAST


def _json_value(hint: Any, v: Any) -> Any:
    """Parsed JSON value ``v`` of a field of type ``hint`` with each JSON object at a record type built as that
    record (:meth:`Record._from_json_doc`); other values as they are (the fast checks judge them);
    :data:`_NOT_FAST` when a record cannot be built so or the type does not tell which record an object is."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        return _json_value(args[0], v)
    if origin in (Union, UnionType):
        if v is None:
            return v
        arms = [a for a in args if a is not type(None)]
        if len(arms) == 1:
            return _json_value(arms[0], v)
        return _NOT_FAST if any(_holds_record(a) for a in arms) else v
    if origin is list and type(v) is list:
        items = [_json_value(args[0], x) for x in v]
        return _NOT_FAST if any(x is _NOT_FAST for x in items) else items
    if origin is dict and type(v) is dict:
        items = {k: _json_value(args[1], x) for k, x in v.items()}
        return _NOT_FAST if any(x is _NOT_FAST for x in items.values()) else items
    if isinstance(hint, type) and issubclass(hint, Record) and origin is None:
        return hint._from_json_doc(v) if type(v) is dict else v
    return v


def _holds_record(hint: Any) -> bool:
    """True when a value of type ``hint`` may hold a record (at any depth)."""
    if isinstance(hint, type) and issubclass(hint, Record):
        return True
    return any(_holds_record(a) for a in typing.get_args(hint) if not isinstance(a, (str, int, float, bool)))


def _enum_member(enum: type[Enum], v: Any) -> Any:
    return enum(v) if type(v) is str and v in enum._value2member_map_ else v


def _copy_container(v: Any) -> Any:
    return list(v) if type(v) is list else dict(v) if type(v) is dict else v


def _dump(v: Any, flags: dict) -> Any:
    if isinstance(v, Record):
        return v.model_dump(**flags)
    if isinstance(v, Enum) and flags["mode"] == "json":
        return v.value
    if isinstance(v, dict):
        return {k: _dump(x, flags) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        items = [_dump(x, flags) for x in v]
        return items if isinstance(v, list) or flags["mode"] == "json" else tuple(items)
    return v


def _plain(v: Any) -> bool:
    """True when ``json.dumps`` spells ``v`` as pydantic does: no floats, no control characters or surrogates."""
    if isinstance(v, dict):
        return all(_plain(k) and _plain(x) for k, x in v.items())
    if isinstance(v, list):
        return all(_plain(x) for x in v)
    if isinstance(v, str):
        return v.isprintable() or not any(ord(c) < 0x20 or 0xD800 <= ord(c) < 0xE000 for c in v)
    return v is None or type(v) in (bool, int)


def _to_model(v: Any) -> Any:
    """Records (also inside lists, tuples and dicts) as their pydantic models, without validating again."""
    if isinstance(v, Record):
        fields = {k: _to_model(x) for k, x in v.__dict__.items()}
        return type(v)._pydantic_model().model_construct(_fields_set=set(v._fields_set), **fields)
    if isinstance(v, dict):
        return {k: _to_model(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(_to_model(x) for x in v)
    return v


def _fields_of(model: Any) -> dict[str, Any]:
    return {k: _from_model(getattr(model, k)) for k in type(model).model_fields}


def _from_model(v: Any) -> Any:
    """Pydantic models (also inside containers) as the records of the same class name."""
    record = RECORDS.get(type(v).__name__) if hasattr(type(v), "__pydantic_fields__") else None
    if record is not None:
        out = object.__new__(record)
        object.__setattr__(out, "__dict__", _fields_of(v))
        object.__setattr__(out, "_fields_set", frozenset(v.model_fields_set))
        return out
    if isinstance(v, dict):
        return {k: _from_model(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(_from_model(x) for x in v)
    return v

