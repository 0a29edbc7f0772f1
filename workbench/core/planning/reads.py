"""What a unit's activation inputs are read as, in a resolved plan, and which unit decides it.

A tensor gets one Q/DQ pair, so every unit reading it reads it on one grid: its producer's activation
spec when a quantized unit produces it, else the first reader's. The plan decides it and records it
(:attr:`QuantPlan.activations`, :meth:`QuantPlan.grid_of`, :attr:`QuantPlan.writers`; it notes a
disagreement as "tensor X uses the activation spec of Y"); this module only reads those. So setting a
Conv's activation to int16 changes its output, not what it reads: its input keeps the producer's dtype.
The inspector says so beside the activation settings (:func:`input_reads`).
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.core.planning.plan import QuantPlan


@dataclass(frozen=True)
class InputRead:
    """One activation input of a unit: ``tensor`` (the float tensor name), ``dtype`` (the dtype of its Q/DQ
    pair as the plan resolves it, e.g. "uint8"), ``source`` (the unit whose activation spec decides it:
    :attr:`QuantPlan.writers` of the tensor whose grid it uses, :meth:`QuantPlan.grid_of`; "" when no
    quantized unit writes it: a graph input or a float node's output, whose first reader decides) and
    ``own`` (the unit reads on its own activation dtype)."""

    tensor: str
    dtype: str
    source: str
    own: bool


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
    own = unit.config.activation.dtype if unit.config.activation is not None else None
    out = []
    for q in unit.quant_inputs:
        if q.role != "activation":
            continue
        grid = plan.grid_of(q.tensor)
        spec = plan.activations.get(grid, q.spec)
        out.append(InputRead(q.tensor, str(spec.dtype), plan.writers.get(grid, ""), str(spec.dtype) == own))
    return out
