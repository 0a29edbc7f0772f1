"""Words for a setting the selected nodes differ in: what each value is and on how many nodes
("dtype mixed (uint8 on 2, float on 1)"), for the inspector's folded one-line summaries. They read "quantize
mixed: uint8, ... (not quantized, preset ...)", which named neither what differed nor on how many."""

from __future__ import annotations

from collections import Counter

#: a role's value on a selected node that does not quantize it (its tensor stays float)
FLOAT = "float"


def spread_text(field: str, values: list[str]) -> str:
    """``field`` and its ``values`` (one per node) counted, the most common first (ties: first seen first):
    "dtype mixed (uint8 on 2, float on 1)"; the value alone when all nodes hold it."""
    counts = Counter(values).most_common()
    if not counts:  # no node of the selection has this role (its section is hidden)
        return f"{field} mixed"
    if len(counts) == 1:
        return counts[0][0]
    return f"{field} mixed ({', '.join(f'{value} on {n}' for value, n in counts)})"


def share_text(name: str, on: list[bool]) -> str:
    """A check box ticked on some of the nodes: "reduce_range on 1 of 3"; ``name`` alone when on all."""
    ticked = sum(on)
    return name if ticked == len(on) else f"{name} on {ticked} of {len(on)}"
