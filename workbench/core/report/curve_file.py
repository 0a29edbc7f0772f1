"""Reading an autotune curve file (``workbench-cli autotune --curve-json FILE``) for the report.

The file is untrusted: every field the report draws or prints is checked on read, and a wrong one is
refused in one line naming the file and the field (``curve[2].levels``), so a hand-edited or foreign
file is never drawn as nonsense. Keys the report does not read are left alone (newer files may add some).
Non-finite metrics, written as the strings ``"inf"``, ``"-inf"``, ``"nan"``
(:func:`workbench.core.io.jsonsafe.dumps_strict`), are read back as floats.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from workbench.core.analysis.metrics import METRICS
from workbench.core.errors import DataError
from workbench.core.io.jsonsafe import UntrustedJSONError, loads_untrusted

_HINT = "Give the file `workbench-cli autotune --curve-json FILE` wrote (unedited)."
_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}
_MISSING = object()


class _Bad(Exception):
    """A field that fails its check: ``field`` its path, ``want`` what it should hold."""

    def __init__(self, field: str, want: str, got: Any) -> None:
        super().__init__(field)
        self.field, self.want, self.got = field, want, got


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _number(v: Any, field: str, *, finite_only: bool = False) -> float:
    """``v`` as a float: a JSON number or (unless ``finite_only``) "inf" / "-inf" / "nan"."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if finite_only and not math.isfinite(v):
            raise _Bad(field, "a finite number", v)
        return float(v)
    if isinstance(v, str) and v in _NONFINITE and not finite_only:
        return _NONFINITE[v]
    raise _Bad(field, "a number" + ("" if finite_only else ' (or "inf", "-inf", "nan")'), v)


def _count(v: Any, field: str, *, optional: bool = True) -> int | None:
    if v is None and optional:
        return None
    if not _is_int(v) or v < 0:
        raise _Bad(field, "a whole number >= 0" + (" or null" if optional else ""), v)
    return v


def _metric_name(v: Any, field: str) -> str:
    if isinstance(v, str) and (v in METRICS or v == "sqnr" or v.endswith(".py")):
        return v
    raise _Bad(field, f"a metric name ({', '.join(METRICS)}) or a metric .py file", v)


def _levels(v: Any, field: str) -> dict:
    ok = isinstance(v, dict) and all(isinstance(k, str) and isinstance(nodes, list)
                                     and all(isinstance(n, str) for n in nodes) for k, nodes in v.items())
    if not ok:
        raise _Bad(field, "{level: [node name, ...]}", v)
    return v


def _point(p: Any, i: int) -> dict:
    at = f"curve[{i}]"
    if not isinstance(p, dict):
        raise _Bad(at, "a point {promoted, metric, ...}", p)
    for key in ("promoted", "metric"):
        if key not in p:
            raise _Bad(f"{at}.{key}", "a number" if key == "metric" else "a whole number >= 0", _MISSING)
    out = dict(p)
    _count(p["promoted"], f"{at}.promoted", optional=False)
    out["metric"] = _number(p["metric"], f"{at}.metric")
    if "fraction_int8" in p:
        frac = _number(p["fraction_int8"], f"{at}.fraction_int8", finite_only=True)
        if not 0.0 <= frac <= 1.0:
            raise _Bad(f"{at}.fraction_int8", "a fraction in [0, 1]", p["fraction_int8"])
    for key in ("weight_bytes", "bops"):
        _count(p.get(key), f"{at}.{key}")
    if p.get("latency") is not None and _number(p["latency"], f"{at}.latency", finite_only=True) <= 0:
        raise _Bad(f"{at}.latency", "a latency ratio > 0 or null", p["latency"])
    for key in ("accepted", "pareto"):
        if key in p and not isinstance(p[key], bool):
            raise _Bad(f"{at}.{key}", "true or false", p[key])
    if "trial" in p:
        _count(p["trial"], f"{at}.trial", optional=False)
    if "levels" in p:
        _levels(p["levels"], f"{at}.levels")
    return out


def check_curve(doc: Any, source: str) -> dict:
    """``doc`` (a parsed curve file) checked field by field; non-finite metrics as floats.

    Required: ``curve``, a non-empty list of points each with ``promoted`` (int >= 0) and ``metric``
    (number). Checked when present: ``metric`` (a metric name), ``metric_float`` (number or null),
    ``promote_to`` / ``cost_proxy`` (str), ``eval`` (str or null), ``eval_samples`` (int >= 0 or null),
    ``front`` (list of int >= 0), and per point ``fraction_int8`` in [0, 1], ``weight_bytes`` / ``bops``
    (int >= 0 or null), ``latency`` (> 0 or null), ``accepted`` / ``pareto`` (bool), ``trial`` (int
    >= 0), ``levels`` ({level: [node, ...]}).

    Raises
    ------
    DataError
        The first field that fails: one line naming ``source`` (the file), the field's path (e.g.
        ``curve[0].levels``), what it should hold and what it holds.
    """
    try:
        return _checked(doc)
    except _Bad as bad:
        said = "is missing" if bad.got is _MISSING else f"holds {_shown(bad.got)}"
        raise DataError(f"{source}: field {bad.field} {said}; expected {bad.want}.", hint=_HINT) from None


def _checked(doc: Any) -> dict:
    if not isinstance(doc, dict):
        raise _Bad("(top level)", "an object {metric, metric_float, curve, ...}", doc)
    if not isinstance(doc.get("curve"), list) or not doc["curve"]:
        raise _Bad("curve", "a non-empty list of {promoted, metric, ...} points", doc.get("curve", _MISSING))
    out = dict(doc)
    if "metric" in doc:
        _metric_name(doc["metric"], "metric")
    if doc.get("metric_float") is not None:
        out["metric_float"] = _number(doc["metric_float"], "metric_float")
    for key in ("promote_to", "cost_proxy"):
        if key in doc and not isinstance(doc[key], str):
            raise _Bad(key, "a string", doc[key])
    if doc.get("eval") is not None and not isinstance(doc["eval"], str):
        raise _Bad("eval", "the eval data's path (a string) or null", doc["eval"])
    _count(doc.get("eval_samples"), "eval_samples")
    if "front" in doc and not (isinstance(doc["front"], list) and all(_is_int(t) and t >= 0 for t in doc["front"])):
        raise _Bad("front", "a list of trial numbers", doc["front"])
    out["curve"] = [_point(p, i) for i, p in enumerate(doc["curve"])]
    return out


def read_curve(path: str | Path) -> dict:
    """The autotune curve of ``path`` ({metric, metric_float, curve, ...}), checked (:func:`check_curve`).

    Raises
    ------
    DataError
        The file is missing or unreadable, not JSON, or a field fails its check: one line naming the
        file and the field (e.g. ``curve.json: field curve[0].levels holds 5; expected {level: [node name, ...]}``).
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"{path}: cannot read the autotune curve ({exc.strerror}).", hint="Check the path.") from None
    except UnicodeDecodeError:
        raise DataError(f"{path}: not a text file, so not an autotune curve.", hint=_HINT) from None
    try:
        doc = loads_untrusted(text)
    except UntrustedJSONError as exc:
        raise DataError(f"{path}: not an autotune curve ({exc}).", hint=_HINT) from None
    return check_curve(doc, str(path))


__all__ = ["check_curve", "read_curve"]
