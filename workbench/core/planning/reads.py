"""What a unit's activation inputs are read as, in a resolved plan, and which unit decides it.

A tensor gets one Q/DQ pair, so every unit reading it reads it on one grid: its producer's activation
spec when a quantized unit produces it, else the first reader's (:class:`workbench.core.planning.plan.QuantPlan`;
the plan notes a disagreement as "tensor X uses the activation spec of Y"). So setting a Conv's activation
to int16 changes its output, not what it reads: its input keeps the producer's dtype. The inspector says so
beside the activation settings (:func:`input_reads`).
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.core.planning.plan import QuantPlan


@dataclass(frozen=True)
class InputRead:
    """One activation input of a unit: ``tensor`` (the float tensor name), ``dtype`` (the dtype of its Q/DQ
    pair as the plan resolves it, e.g. "uint8"), ``source`` (the unit whose activation spec decides it: its
    producer, or for a tensor that reuses another's grid, that tensor's producer; "" when no quantized unit
    produces it: a graph input or a float node's output, whose first reader decides) and ``own`` (the unit
    reads on its own activation dtype)."""

    tensor: str
    dtype: str
    source: str
    own: bool


def _root(plan: QuantPlan, tensor: str) -> str:
    """The calibrated tensor whose grid ``tensor`` uses (itself when it has no alias)."""
    seen = {tensor}
    while tensor in plan.aliases and plan.aliases[tensor] not in seen:
        tensor = plan.aliases[tensor]
        seen.add(tensor)
    return tensor


def input_reads(plan: QuantPlan, node: str) -> list[InputRead]:
    """The activation inputs of the unit ``node`` (main node name), in input order, each with the dtype it is
    read as and the unit that decides that dtype; empty when ``node`` is not a unit of ``plan``, is excluded,
    or has no quantized activation input.

    Parameters
    ----------
    plan : QuantPlan
        A resolved plan (:func:`workbench.core.api.plan`).
    node : str
        A node name; a node folded into a unit (a Relu after a Conv) or a pass-through node has no reads.
    """
    unit = plan.units.get(node)
    if unit is None or unit.excluded:
        return []
    producers = {t: u.node for u in plan.units.values() if not u.excluded for t in u.outputs}
    own = unit.config.activation.dtype if unit.config.activation is not None else None
    out = []
    for q in unit.quant_inputs:
        if q.role != "activation":
            continue
        root = _root(plan, q.tensor)
        spec = plan.activations.get(root) or plan.activations.get(q.tensor) or q.spec
        source = producers.get(root, "")
        out.append(InputRead(q.tensor, str(spec.dtype), source, str(spec.dtype) == own))
    return out
