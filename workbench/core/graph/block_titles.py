"""Titles of the flat-name blocks of :mod:`workbench.core.graph.hierarchy`, by what they hold.

A block of a model whose node names carry no scope (``p2o.Conv.32``, ``p2o.Add.7``) is titled by the
names of its first and last node: ``"Conv.0 – Add.7"`` (without the ``p2o.`` that nearly every name of
the model starts with, and the last name without the start it shares with the first). The op types it holds are the box's second line ("7 nodes · 2 Add, 2 Mul"), so the title
stays short enough for a collapsed box (about 18 characters at the zoom a model opens with; with the op
types in front the middle elision left "Conv, A… Add.6"). Long node names are cut in the middle.

Pure Python; never imports Qt.
"""

from __future__ import annotations

from collections import Counter

#: op types that name a block only when it holds nothing else (they say little of what a block computes)
QUIET_OPS = frozenset({"Constant", "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"})
#: node names longer than this many characters are cut in the middle ("…")
NAME_CHARS = 22


def short_name(name: str, limit: int = NAME_CHARS) -> str:
    """``name`` cut to at most ``limit`` characters, keeping its start and end: ``"abc…xyz"``."""
    if len(name) <= limit:
        return name
    head = (limit - 1) // 2
    return name[:head] + "\u2026" + name[len(name) - (limit - 1 - head):]


def _shared(a: str, b: str) -> int:
    """Length of the start ``a`` and ``b`` share up to a separator (``.``, ``/``, ``_``, ``:``):
    ``"p2o.Conv.1"``, ``"p2o.Add.6"`` -> 4 (``"p2o."``)."""
    n = 0
    for k, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            break
        if x in "./_:":
            n = k + 1
    return n if n < len(b) else 0


def common_head(names: list[str], op_types: list[str], share: float = 0.8) -> str:
    """The first name segment (up to and with its ``.``, ``/``, ``_`` or ``:``) that at least ``share`` of
    the names of nodes not in :data:`QUIET_OPS` start with, e.g. ``"p2o."`` for ppocrv4_rec (its 234
    unnamed Constants, ``Constant#0`` ..., are not counted): a title leaves it out, since every block
    would repeat it. Empty when no segment is that common."""
    names = [n for n, op in zip(names, op_types, strict=True) if op not in QUIET_OPS]
    heads = Counter(n[:k + 1] for n in names if (k := next((i for i, c in enumerate(n) if c in "./_:"), -1)) > 0)
    if not heads:
        return ""
    head, count = heads.most_common(1)[0]
    return head if count >= share * len(names) else ""


def block_title(names: list[str], op_types: list[str], drop: str = "",
                anchors: frozenset[str] = frozenset()) -> str:
    """Title of a block whose nodes (model order) have these names and op types.

    Returns
    -------
    str
        ``"p2o.Conv.1 – Add.6"``: the first and last node names, the last without the start it shares
        with the first (one name when they are the same). The first name is that of the first node
        whose op type is in ``anchors`` when there is one (a block of a quantized model starts with
        the chain quantizing its Conv's input, but is told apart by the Conv: ``"Conv_3_quant –
        Mul_5"``). Nodes of :data:`QUIET_OPS` (Constant, Q/DQ) are passed over unless the block holds
        nothing else. ``drop`` (:func:`common_head`, e.g. ``"p2o."``) is left out of both names:
        ``"Conv.1 – Add.6"``. Empty for an empty block.
    """
    keep = [k for k, op in enumerate(op_types) if op not in QUIET_OPS] or list(range(len(op_types)))
    if not keep:
        return ""
    lead = next((k for k in keep if op_types[k] in anchors), keep[0])
    first, last = names[lead] or "?", names[keep[-1]] or "?"
    if drop and first.startswith(drop) and len(first) > len(drop):
        first, last = first[len(drop):], last.removeprefix(drop) or last
    return short_name(first) if first == last else f"{short_name(first)} \u2013 {short_name(last[_shared(first, last):])}"
