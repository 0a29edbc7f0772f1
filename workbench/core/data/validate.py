"""Checking one feed array against a model input: rank, fixed dims, dtype.

Rules: the rank must equal the input's rank; every dim the model fixes (an int > 0) must match;
symbolic or unknown dims accept any size. Dtypes: an exact match passes; float given for
another float type and int given for another int type are cast (ints only when every value
fits) and a note is recorded; int vs float vs bool mismatches are errors.
"""

from __future__ import annotations

import numpy as np

from workbench.core.errors import DataError
from workbench.core.model.load import InputInfo
from workbench.core.model.shapes import shared_dim_name


def fmt_shape(shape) -> str:
    """``[N, 3, 224, 224]`` style text of a model or array shape (None -> ``?``)."""
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def check_shape(shape: tuple[int, ...], inp: InputInfo, origin: str, key: str | None = None) -> None:
    """Raise DataError when ``shape`` (one feed) does not fit ``inp``.

    ``origin`` names the file (and sample); ``key`` the array when it differs from the input name.
    """
    if not inp.has_shape:
        return
    what = f"array '{key}' for input '{inp.name}'" if key and key != inp.name else f"array for input '{inp.name}'"
    if len(shape) != len(inp.shape):
        raise DataError(f"{origin}: {what} has a feed of shape {fmt_shape(shape)} (rank {len(shape)}) but the model "
                        f"expects {fmt_shape(inp.shape)} (rank {len(inp.shape)}).",
                        hint="Reshape the array to the model's input shape (batch layout: N rows along the batch "
                             "axis; stacked layout: an extra leading axis of samples).")
    bad = [i for i, (got, want) in enumerate(zip(shape, inp.shape, strict=True))
           if isinstance(want, int) and want > 0 and got != want]
    if bad:
        raise DataError(f"{origin}: {what} has a feed of shape {fmt_shape(shape)} but the model fixes "
                        f"{fmt_shape(inp.shape)} (axis {', '.join(map(str, bad))} differs).",
                        hint="Resize or re-export the data to the model's fixed dimensions.")


def dtype_kind(dtype: np.dtype) -> str:
    """``"float"``, ``"int"``, ``"bool"``, ``"str"`` or ``"other"``."""
    if dtype == np.bool_:
        return "bool"
    if np.issubdtype(dtype, np.floating) or dtype.name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        return "float"
    if np.issubdtype(dtype, np.integer):
        return "int"
    if dtype.kind in "USO":
        return "str"
    return "other"


#: what every note of :func:`check_dtype` holds (", cast to float32."): :func:`cast_notes` picks them out
CAST_NOTE = ", cast to "


def cast_notes(notes: list[str]) -> list[str]:
    """The notes of a data source (``DataSource.notes``) that say an array was cast to its input's dtype."""
    return [n for n in notes if CAST_NOTE in n]


def check_dtype(dtype: np.dtype, inp: InputInfo, origin: str, key: str | None = None) -> str | None:
    """Raise DataError for an impossible dtype; return a note (without ``origin``) when a cast will be
    made, else None."""
    want = inp.dtype
    if dtype == want or want == np.dtype(object):
        return None
    got_kind, want_kind = dtype_kind(dtype), dtype_kind(want)
    what = f"array '{key}' for input '{inp.name}'" if key and key != inp.name else f"array for input '{inp.name}'"
    if got_kind == want_kind and got_kind in ("float", "int"):
        return f"{what} is {dtype.name}{CAST_NOTE}{want.name}."
    raise DataError(f"{origin}: {what} has dtype {dtype.name} but the model expects {want.name} "
                    f"({got_kind} vs {want_kind}).",
                    hint=f"Store the array as {want.name} (e.g. arr.astype(np.{want.name})) or check that each array "
                         "is saved under the right input name.")


def cast(arr: np.ndarray, inp: InputInfo, origin: str, key: str | None = None) -> np.ndarray:
    """Return ``arr`` as the input's dtype (int casts only when every value fits).

    Raises
    ------
    DataError
        An integer value does not fit the model's integer type.
    """
    want = inp.dtype
    if arr.dtype == want or want == np.dtype(object):
        return arr
    if dtype_kind(want) == "int" and arr.size:
        info = np.iinfo(want)
        lo, hi = int(arr.min()), int(arr.max())
        if lo < info.min or hi > info.max:
            raise DataError(f"{origin}: array for input '{inp.name}' holds values {lo}..{hi} that do not fit "
                            f"{want.name}.", hint=f"Store the array as {want.name} with values in range.")
    return arr.astype(want)


def check_symbols(shapes: dict[str, tuple[int, ...]], inputs: list[InputInfo], origin: str) -> None:
    """Raise DataError when one symbolic dim (e.g. ``sequence``) gets different sizes in
    different inputs of one feed (``input_ids`` 32 tokens, ``attention_mask`` 16).

    Placeholder names (``?``, ``-1``, ``unk__*`` from shape inference) are not symbols.
    """
    seen: dict[str, tuple[int, str]] = {}
    for inp in inputs:
        shape = shapes.get(inp.name)
        if shape is None or not inp.has_shape or len(shape) != len(inp.shape):
            continue
        for sym, size in zip(inp.shape, shape, strict=True):
            if not isinstance(sym, str) or not shared_dim_name(sym):
                continue
            first = seen.setdefault(sym, (size, inp.name))
            if first[0] != size and first[1] != inp.name:
                raise DataError(f"{origin}: dimension '{sym}' is {first[0]} in input '{first[1]}' but {size} in "
                                f"input '{inp.name}'; the model uses one size for both.",
                                hint="Pad or cut the arrays to the same size along that axis.")


def check_feed(feed: dict[str, np.ndarray], inputs: list[InputInfo], origin: str,
               notes: list[str] | None = None) -> dict[str, np.ndarray]:
    """Validate one feed dict against the model inputs and return it with dtypes cast.

    Extra keys are dropped. ``notes`` collects one message per kind of cast.

    Raises
    ------
    DataError
        A model input is missing, or an array has the wrong rank, fixed dim or dtype.
    """
    if not isinstance(feed, dict):
        raise DataError(f"{origin}: a sample is a {type(feed).__name__}, not a dict of arrays.",
                        hint="Yield {input_name: numpy array} dicts.")
    out = {}
    for inp in inputs:
        if inp.name not in feed:
            raise DataError(f"{origin} has no array for input '{inp.name}'; arrays found: "
                            f"{', '.join(sorted(map(str, feed))) or 'none'}.",
                            hint=f"Provide one array per model input ({', '.join(i.name for i in inputs)}).")
        arr = np.asarray(feed[inp.name])
        check_shape(arr.shape, inp, origin)
        note = check_dtype(arr.dtype, inp, origin)
        if note and notes is not None and not any(n.endswith(note) for n in notes):
            notes.append(f"{origin}: {note}")
        out[inp.name] = cast(arr, inp, origin)
    check_symbols({k: v.shape for k, v in out.items()}, inputs, origin)
    return out


def one_line(exc: BaseException, limit: int = 300) -> str:
    """An exception's text on one line (newlines collapsed), cut to ``limit`` characters."""
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
