"""JSON from untrusted files (projects, recipes): bounded nesting and number size.

``json.loads`` raises ``RecursionError`` on a document nested some thousands deep and
``ValueError`` (Python's int-string limit) on a 100,000-digit integer: tracebacks, not errors a
user can act on. :func:`loads_untrusted` refuses both with the file and the field's path.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

#: Deepest nesting accepted (a project file nests about 8 levels; histograms are flat lists).
MAX_DEPTH = 64
#: Longest integer literal accepted, in digits (2**64 has 20).
MAX_INT_DIGITS = 40
#: Longest float literal accepted, in characters.
MAX_FLOAT_CHARS = 64

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:]')


class UntrustedJSONError(ValueError):
    """The document is not JSON, too deep, or holds a too long number; ``field`` is its path."""

    def __init__(self, message: str, field: str = "") -> None:
        self.field = field
        super().__init__(message)


class _Long:
    """Placeholder for a number literal that is too long to convert."""

    def __init__(self, text: str) -> None:
        self.digits = len(text)


def _int(text: str) -> int | _Long:
    return _Long(text) if len(text.lstrip("-")) > MAX_INT_DIGITS else int(text)


def _float(text: str) -> float | _Long:
    return _Long(text) if len(text) > MAX_FLOAT_CHARS else float(text)


def _path(parts: list[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def _deep_field(text: str) -> str:
    """Path (keys only) to where ``text`` first nests deeper than :data:`MAX_DEPTH`."""
    stack: list[str] = []
    key, pending = "", ""
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok.startswith('"'):
            pending = tok[1:-1]
        elif tok == ":":
            key = pending
        elif tok in "[{":
            stack.append(key)
            key = ""
            if len(stack) > MAX_DEPTH:
                return ".".join(k for k in stack if k) or "(top level)"
        elif stack:
            stack.pop()
            key = ""
    return "(top level)"


def loads_untrusted(text: str) -> Any:
    """Parse ``text`` as JSON with bounded nesting and number length.

    ``NaN`` / ``Infinity`` literals are accepted (Python's json writes them); callers check the
    ranges they read.

    Raises
    ------
    UntrustedJSONError
        Invalid JSON (the message gives line and column), nesting deeper than :data:`MAX_DEPTH`,
        or a number literal longer than :data:`MAX_INT_DIGITS` digits (``field`` names its path).
    """
    try:
        doc = json.loads(text, parse_int=_int, parse_float=_float)
    except RecursionError:
        where = _deep_field(text)
        raise UntrustedJSONError(f"nested deeper than {MAX_DEPTH} levels (in {where})", where) from None
    except json.JSONDecodeError as exc:
        raise UntrustedJSONError(f"invalid JSON: {exc}") from None
    except ValueError as exc:  # any other conversion limit of the json module
        raise UntrustedJSONError(f"invalid JSON: {exc}") from None
    _check(doc)
    return doc


def _check(doc: Any) -> None:
    """Walk ``doc`` without recursion: depth and long numbers."""
    todo: list[tuple[Any, list[Any]]] = [(doc, [])]
    while todo:
        value, parts = todo.pop()
        if len(parts) > MAX_DEPTH:
            raise UntrustedJSONError(f"nested deeper than {MAX_DEPTH} levels (in {_path(parts[:4])}...)",
                                     _path(parts[:4]))
        if isinstance(value, _Long):
            where = _path(parts)
            raise UntrustedJSONError(f"field {where} holds a number of {value.digits} characters "
                                     f"(at most {MAX_INT_DIGITS} digits are accepted)", where)
        if isinstance(value, dict):
            todo.extend((v, [*parts, k]) for k, v in value.items())
        elif isinstance(value, list):
            todo.extend((v, [*parts, i]) for i, v in enumerate(value))


def is_finite_number(value: Any) -> bool:
    """True for an int or a finite float (not bool, not NaN / Inf)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _finite_or_text(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if value != value else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _finite_or_text(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_text(v) for v in value]
    return value


def dumps_strict(doc: Any, **kwargs: Any) -> str:
    """``json.dumps`` that writes strict JSON: a non-finite float becomes the string ``"inf"``,
    ``"-inf"`` or ``"nan"`` (Python's ``Infinity`` / ``NaN`` literals are not JSON; other readers
    refuse them). An SQNR of ``"inf"`` means the two tensors are identical."""
    return json.dumps(_finite_or_text(doc), allow_nan=False, **kwargs)
