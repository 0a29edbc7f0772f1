"""Titles of the flat-name blocks of :mod:`workbench.core.graph.hierarchy`, by what they hold.

A block of a model whose node names carry no scope (``p2o.Conv.32``, ``p2o.Add.7``) is titled by its
first op type, its most frequent other op types and the names of its first and last node:
``"Conv ×12, Add ×4, Mul ×2 · p2o.Conv.0 – p2o.Add.7"`` (a count of one is left out:
``"Conv, HardSigmoid · p2o.Conv.3 – p2o.HardSigmoid.1"``).
Long node names are cut in the middle so that a title stays short.

Pure Python; never imports Qt.
"""

from __future__ import annotations

from collections import Counter

#: op types named in a title after the first one, most frequent first
TITLE_OPS = 2
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


def block_title(names: list[str], op_types: list[str]) -> str:
    """Title of a block whose nodes (model order) have these names and op types.

    Returns
    -------
    str
        ``"Conv, Mul ×3, Add ×2 · first – last"``: the block's first op type (a block starts at its
        anchor op), then the :data:`TITLE_OPS` most frequent other op types (ties in model order)
        with their counts, then the first and last node names (one name when they are the same).
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
    first, last = (short_name(names[k] or "?") for k in (keep[0], keep[-1]))
    span = first if first == last else f"{first} \u2013 {last}"
    return f"{text} \u00b7 {span}"
