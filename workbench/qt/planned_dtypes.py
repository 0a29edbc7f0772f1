"""The dtype each node of the open float model computes in under the recipe's plan, as the exported
QDQ file will say (:func:`workbench.core.api.summarize_quantization`'s ``node_dtypes``), for the
canvas's dtype colours and its groups' fraction quantized.

A unit's nodes take its activation dtype (its weight's without one; "float" when excluded). A node of
no unit whose activation inputs are all quantized tensors (a unit's output, or read quantized by a
unit) and whose outputs are too sits between Q/DQ pairs in the file, which counts it as computing on
integers (a SiLU's Sigmoid between a quantized Conv output and a quantized Mul input): it takes its
first input's dtype. Other nodes get
no entry (the recipe does not quantize them; they run in float).
"""

from __future__ import annotations

import onnx


def planned_node_dtypes(graph: onnx.GraphProto, plan) -> dict[str, str]:
    """Node name -> dtype name ("uint8", "int16", "float", ...) for the nodes of ``graph`` (the plan's
    prepared main graph) that ``plan`` (a ``QuantPlan`` of :func:`workbench.core.api.plan`) quantizes
    or keeps float; see the module docstring."""
    out: dict[str, str] = {}
    read_as: dict[str, str] = {}  # tensor -> the dtype a unit reads it as (a Q/DQ pair in the file)
    for name, unit in plan.units.items():
        cfg = unit.config
        spec = None if unit.excluded else (cfg.activation or cfg.weight)
        for n in unit.nodes or [name]:
            out[n] = spec.dtype if spec is not None else "float"
        if not unit.excluded:
            for q in unit.quant_inputs:
                if q.role == "activation":
                    read_as.setdefault(q.tensor, q.spec.dtype)
            if cfg.activation is not None:  # a unit's activation dtype sets its output too
                for t in unit.outputs:
                    if t not in unit.float_outputs:
                        read_as.setdefault(t, cfg.activation.dtype)
    constants = {t.name for t in graph.initializer}
    for node in graph.node:
        if node.name in out:
            continue
        acts = [t for t in node.input if t and t not in constants]
        outs = [t for t in node.output if t]
        if acts and outs and all(t in read_as for t in acts + outs):
            out[node.name] = read_as[acts[0]]
    return out
