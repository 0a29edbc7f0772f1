"""Titles of the flat-name blocks of :mod:`workbench.core.graph.hierarchy`, by what they hold.

A block of a model whose node names carry no scope (``p2o.Conv.32``, ``p2o.Add.7``) is titled by its
first op type, its most frequent other op type and the names of its first and last node:
``"Conv ×12, Add ×4 · p2o.Conv.0 – Add.7"`` (a count of one is left out, and the last name loses the
start it shares with the first: ``"Conv, HardSigmoid · p2o.Conv.3 – HardSigmoid.1"``).
Long node names are cut in the middle so that a title stays short.

Pure Python; never imports Qt.
"""

from __future__ import annotations

from collections import Counter

#: op types named in a title after the first one, most frequent first
TITLE_OPS = 1
#: op types that count only in a block of nothing else (they say little of what a block computes)
QUIET_OPS = frozenset({"Constant", "QuantizeLinear", "DequantizeLinear"})
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


def block_title(names: list[str], op_types: list[str]) -> str:
    """Title of a block whose nodes (model order) have these names and op types.

    Returns
    -------
    str
        ``"Conv, Mul ×3 · p2o.Conv.1 – Add.6"``: the block's first op type (a block starts at its
        anchor op), then the :data:`TITLE_OPS` most frequent other op types (ties in model order)
        with their counts, then the first and last node names, the last without the start it shares
        with the first (one name when they are the same).
        :data:`QUIET_OPS` (Constant, Q/DQ) count only in a block of nothing else. Empty for an empty block.
    """
    keep = [k for k, op in enumerate(op_types) if op not in QUIET_OPS] or list(range(len(op_types)))
    if not keep:
        return ""
    ops = [op_types[k] for k in keep]
    counts = Counter(ops)  # insertion order is first appearance, so ties keep model order
    lead = ops[0]
    order = [lead] + [op for op, _ in Counter({o: n for o, n in counts.items() if o != lead}).most_common(TITLE_OPS)]
    text = ", ".join(op if counts[op] == 1 else f"{op} \u00d7{counts[op]}" for op in order)
    first, last = names[keep[0]] or "?", names[keep[-1]] or "?"
    span = short_name(first) if first == last else f"{short_name(first)} \u2013 {short_name(last[_shared(first, last):])}"
    return f"{text} \u00b7 {span}"
