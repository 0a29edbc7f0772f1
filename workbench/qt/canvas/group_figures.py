"""What a group box shows of the active colour figure: worst SQNR, most sensitive unit, fraction
quantized (or, for a model quantized elsewhere, the quantized kernels it holds), main op.

The canvas hands over the per-node keys it coloured the nodes by (``CanvasState.fill_keys``: op
type, normalized dtype, or the SQNR-scale value in dB; with a ranked figure such as the sensitivity
sweep's, also the real figure of each node) and gets back a fill and a short text per shown group.
The reduction over a group's members is ``workbench.core.api.aggregate``; colours come from
``colors``.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from PySide6.QtGui import QColor

from workbench.core import api
from workbench.core.api import Hierarchy, aggregate
from workbench.qt.canvas import colors

#: dtypes a quantized tensor or kernel computes in (normalized names; float8 types too); int32 /
#: int64 are shape and index math (Shape, Gather, Concat) or accumulators, not quantization
QUANTIZED_DTYPES = frozenset({"int8", "uint8", "int16", "uint16", "int4", "uint4", "int2", "uint2"})
#: the quantizer's own nodes: not counted in a group's fraction quantized (the model's nodes are)
QDQ_OPS = frozenset({"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"})


def is_quantized_dtype(key: str | None) -> bool:
    """True for a quantized dtype name (8 / 16 / 4-bit integer, float8), False for float types,
    int32 / int64 / bool and for no value."""
    if key is None:
        return False
    key = colors.normalize_dtype(key)
    return key in QUANTIZED_DTYPES or key.startswith("float8")


def _db(value: float) -> str:
    return "exact" if value == float("inf") else f"{value:.1f} dB"


def sqnr_text(value: float) -> str:
    """An SQNR-scale value (dB) as the canvas says it: ``"12.3 dB"``; the stand-ins the app colours with
    (:data:`colors.INF_DB`) as what they are: ``"no noise"`` for +inf (bit-exact, or a unit that adds no noise
    of its own), drawn at 100 dB, and ``"all noise"`` for -inf, drawn at -100 dB (they read "100.0 dB")."""
    if value == float("inf") or value == colors.INF_DB:
        return "no noise"
    if value == -float("inf") or value == -colors.INF_DB:
        return "all noise"
    return f"{value:.1f} dB"


def worst_text(value: float) -> str:
    """A group's text in the SQNR colour modes from its worst member's value: ``"worst 12.3 dB"``, ``"no noise"``
    when even the worst has none (the box read "worst 100.0 dB"), ``"worst: all noise"``."""
    text = sqnr_text(value)
    return text if text == "no noise" else f"worst: {text}" if text == "all noise" else f"worst {text}"


def short_dtypes(dtypes: str) -> str:
    """``"uint8/int8"`` -> ``"u8/i8"`` (``"float/uint4"`` -> ``"float/u4"``)."""
    return "/".join(
        "u" + d[4:] if d.startswith("uint") else "i" + d[3:] if d.startswith("int") else d
        for d in dtypes.split("/")
    )


def _dtype_figures(
    h: Hierarchy,
    groups: list[int],
    keys: list,
    ops: list[str] | None,
    compute: dict[int, str],
    kernels: dict[int, str],
) -> tuple[dict[int, QColor], dict[int, str]]:
    """:func:`group_figures` of the ``"dtype"`` mode."""
    fills: dict[int, QColor] = {}
    texts: dict[int, str] = {}
    values = np.array([float(is_quantized_dtype(k)) for k in keys])
    if ops is not None:
        values[[i for i, op in enumerate(ops) if op in QDQ_OPS]] = np.nan
    assigned = np.array([k is not None for k in keys], dtype=np.float64)
    anything = aggregate(h, assigned, "max", groups).tolist()
    for g, f, any_dtype in zip(groups, aggregate(h, values, "mean", groups).tolist(), anything, strict=True):
        members = h.members(g).tolist()
        acts = None
        if ops is not None and compute:  # a model quantized elsewhere (the Exported tab keeps the fraction)
            acts = Counter(
                held_dtype(compute[i], kernels.get(i)) if i in compute else keys[i]
                for i in members
                if i in compute or (i in kernels and keys[i] is not None)
            )
        if acts:  # a model quantized elsewhere: the kernels inside, coloured by the dtype they compute on
            texts[g] = kernel_text(members, ops, compute, kernels, keys)
            fills[g] = colors.dtype_color(acts.most_common(1)[0][0])
            continue
        if f != f or not any_dtype:  # only Q/DQ nodes, or no dtype known in it (no plan)
            continue
        if compute and f == 0:
            texts[g] = "float"
        else:
            texts[g] = f"{f:.0%} quantized"
        fills[g] = colors.dtype_color(_fraction_fill(members, keys, kernels, f))
    return fills, texts


def _fraction_fill(members: list[int], keys: list, kernels: dict[int, str], share: float) -> str:
    """The dtype a group counted by its share of quantized nodes (``share``) is filled with: the most common
    quantized dtype when at least half its nodes have one; else that of the integer kernels inside (``kernels``,
    known for a file: the Exported tab), so a block running its Conv as a QLinearConv beside six float nodes is not
    drawn float (ppocrv4_rec's "7 nodes · 14% quantized" blocks were white); else float."""
    quant = Counter(keys[i] for i in members if is_quantized_dtype(keys[i]))
    if share >= 0.5 and quant:
        return quant.most_common(1)[0][0]
    ran = Counter(keys[i] for i in members if i in kernels and is_quantized_dtype(keys[i]))
    return ran.most_common(1)[0][0] if ran else "float"


def _run(dtypes: str, kernel: str | None) -> str:
    """``"activation/weight"`` dtypes as onnxruntime runs the node (``api.run_dtypes``: a MatMulNBits kernel,
    in the file or fused from a QDQ MatMul, quantizes its float activation to int8: ``"int8/int4"``)."""
    return api.run_dtypes(
        dtypes, kernel
    )  # loads the summary's module at the first call (a file quantized elsewhere)


def held_dtype(dtypes: str, kernel: str | None) -> str:
    """The dtype a quantized compute node of a file colours its collapsed group with: the activation dtype it
    runs at (:func:`_run`), or its weight's where that is float (a weight-only MatMulNBits below accuracy_level 4:
    float math on a uint4 weight, as its node is filled uint4; such a group was drawn float-white)."""
    act, _, weight = _run(dtypes, kernel).partition("/")
    return weight if act.startswith("float") and weight else act


def _kernel_name(kernel: str) -> str:
    return kernel.removeprefix("QDQ -> ").removeprefix("DynamicQuantize")


def kernel_text(
    members: list[int],
    ops: list[str],
    compute: dict[int, str],
    kernels: dict[int, str],
    dtypes: list | None = None,
) -> str:
    """What a group of a model quantized elsewhere holds: its quantized compute nodes by the kernel
    they run as (``kernels``: ``"ConvInteger"``, ``"QDQ -> QLinearConv"`` -> ``"QLinearConv"``; else the
    op type, ``"DynamicQuantizeLSTM"`` -> ``"LSTM"``, as the box has room for ~20 characters) and their
    activation/weight dtypes as onnxruntime runs them (:func:`_run`), the two most common: ``"ConvInteger u8/u8"``,
    ``"MatMulNBits i8/i4"``,
    ``"3 QLinearConv u8/i8, 1 QLinearMatMul u8/u8"``; then the element-wise integer kernels (a kernel
    without a compute dtype: QLinearSigmoid, QLinearAdd ...) as a count, ``", 4 element-wise"``, or, in a
    group without compute kernels, the two most common of them with their dtype (``dtypes``: one per
    node): ``"2 QLinearMul u8, 1 QLinearAdd u8"``; ``"float"`` when it holds none."""
    found = Counter(
        f"{_kernel_name(kernels.get(i, ops[i]))} {short_dtypes(_run(compute[i], kernels.get(i)))}"
        for i in members
        if i in compute
    )
    others = Counter(
        f"{_kernel_name(kernels[i])} {short_dtypes(str(dtypes[i]) if dtypes else '')}".rstrip()
        for i in members
        if i in kernels and i not in compute
    )
    if not found and not others:
        return "float"
    top = (found or others).most_common(2)
    text = ", ".join(t if n == 1 and len(top) == 1 else f"{n} {t}" for t, n in top)
    if found and others:
        text += f", {sum(others.values())} element-wise"
    return text


def group_figures(
    h: Hierarchy,
    groups: list[int],
    mode: str,
    keys: list,
    figures: list | None = None,
    ops: list[str] | None = None,
    *,
    compute: dict[int, str] | None = None,
    kernels: dict[int, str] | None = None,
    floats: set[int] | None = None,
) -> tuple[dict[int, QColor], dict[int, str]]:
    """Fill and text of each group in ``groups`` for colour ``mode`` (``"op"``, ``"dtype"``, ``"error"``).

    ``keys`` has one entry per node (None: no value). ``"error"``: the worst (lowest) value inside,
    coloured like a node of that value; ``"worst X dB"``, or with ``figures`` (one real figure per
    node, dB, +inf for exact: ``keys`` are then that figure's ranks on the SQNR colour scale) the
    figure of that most sensitive member, ``"most sensitive X dB"``; a group none of whose members
    has a value is drawn like such a node (``colors.NO_VALUE``), its text "kept float" when one of its
    members is in ``floats`` (node indices the recipe keeps float), else "no value". ``"dtype"``: the
    fraction of the members with a quantized dtype, of all members but Q/DQ nodes (``ops``: one op
    type per node; a member without a dtype, which the recipe does not quantize, counts as float:
    the Graph tab's recipe and the Exported tab's file count the same nodes), coloured by the most
    common quantized dtype when it is at least half, else by that of the integer kernels inside (``kernels``), else
    as float; with ``compute`` (a model quantized
    elsewhere: quantized compute node -> ``"uint8/int8"``, see :func:`kernel_text`; ``kernels``: node ->
    integer kernel) the text names the quantized kernels inside instead (one kernel in a block of 13
    nodes is not "8% quantized"), and a group holding any is coloured by their most common activation
    dtype (the dtype its kernel node is drawn in). ``"op"``: the two most common op types with their counts
    (default box fill). In the other modes groups without any value get no entry.
    """
    fills: dict[int, QColor] = {}
    texts: dict[int, str] = {}
    if not groups:
        return fills, texts
    if mode == "error":
        values = np.array([np.nan if k is None else float(k) for k in keys])
        for g, v in zip(groups, aggregate(h, values, "min", groups).tolist(), strict=True):
            if v != v:
                kept = floats is not None and any(int(i) in floats for i in h.members(g).tolist())
                fills[g], texts[g] = colors.error_color(None), "kept float" if kept else "no value"
            elif figures is None:
                fills[g], texts[g] = colors.error_color(v), worst_text(v)
            else:
                members = h.members(g)
                figure = figures[int(members[np.nanargmin(values[members])])]
                fills[g] = colors.error_color(v)
                if figure is not None:
                    texts[g] = f"most sensitive {_db(figure)}"
        return fills, texts
    if mode == "dtype":
        return _dtype_figures(h, groups, keys, ops, compute or {}, kernels or {})
    for g in groups:
        top = Counter(keys[i] for i in h.members(g).tolist()).most_common(2)
        texts[g] = ", ".join(f"{count} {op}" for op, count in top)
    return fills, texts
