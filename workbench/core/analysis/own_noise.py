"""Each quantized unit's own noise (its local SQNR), measured on float inputs.

A unit's *own noise* is what it adds when everything it reads is exact: its QDQ fragment (the
Q -> DQ of its activation inputs, its dequantized weights, its node(s) and the Q -> DQ of its output,
as the quantized model has them) run on the float model's values of its inputs, against the float
model's value of its output::

    own SQNR = 10 log10( sum(ref^2) / sum((ref - fragment(float inputs))^2) )   [dB]

over every element of every row (the per-unit analysis' formula,
:mod:`workbench.core.analysis.unit_error`). The fragments of every measured unit sit side by side
in one model whose graph inputs are float-model tensors (:func:`own_fragments`; each unit's
fragment is :func:`~workbench.core.analysis.sweep_graph.backward_closure` of its quantized output,
stopped at float-model tensors, as the sensitivity sweep's "own output" pass builds it). The
per-unit analysis taps those tensors in the float run it makes anyway and runs this model beside
the quantized one, batch by batch, adding the error sums unit by unit: one unfused run more per
batch, no second float run, nothing kept between batches.

Deriving the figure from accumulated noise instead (``1/SQNR_own = 1/SQNR_out - 1/SQNR_in``,
:func:`workbench.core.analysis.sensitivity.local_sensitivity`'s fallback) leaves every unit whose
output is no noisier than its noisiest input without one ("inf": 77 of nudenet_320n's 156 units,
cpu-u8s8, a Conv at 19 dB among them) and charges a unit with noise that cancels downstream.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper

from workbench.core.analysis.noise_trace import PROBE
from workbench.core.analysis.sweep_graph import (
    FragmentStop,
    assemble,
    backward_closure,
    join_fragment,
    node_reads,
)
from workbench.core.errors import ModelError
from workbench.core.runtime.session import make_session

log = logging.getLogger(__name__)


@dataclass
class OwnFragments:
    """The fragments of the measured units side by side (:func:`own_fragments`).

    ``inputs``: the float-model tensors the fragments read (graph inputs of the float model, or
    tensors its run must also output); ``outputs``: measured float tensor -> the fragments model's
    output holding that tensor as the unit computes it from float inputs."""

    nodes: list[onnx.NodeProto]
    inits: dict[str, onnx.TensorProto]
    opsets: list
    inputs: list[str]
    outputs: dict[str, str]

    def session(self, values: dict[str, np.ndarray]):
        """An onnxruntime session of the fragments model, unfused (the Q -> DQ values as the ONNX
        operators define them), its inputs typed as ``values`` (tensor -> an array of the float run)
        are; None, with a warning in the log, when onnxruntime refuses it (the analysis then derives
        the units' own noise from the accumulated noise)."""
        types = {x: helper.np_dtype_to_tensor_dtype(np.asarray(values[x]).dtype) for x in self.inputs}
        proto = assemble(self.nodes, self.inits, list(self.outputs.values()), [], types, self.opsets).proto
        try:
            return make_session(proto, optimize=False)
        except ModelError as exc:
            log.warning("own noise not measured on float inputs (derived instead): %s", exc.message)
            return None


def unit_nodes(plan, pairs: dict) -> dict[str, tuple[str, ...]]:
    """Unit -> its node names (the unit's node first), for the units owning a tensor of ``pairs``
    (``{float tensor: (unit, op type, quantized tensor)}``, probes left out): what
    :func:`own_fragments` needs of the plan, small enough to send to an analysis shard."""
    out: dict[str, tuple[str, ...]] = {}
    for node, _op, _q in pairs.values():
        unit = plan.units.get(node) if node != PROBE else None
        if unit is not None and node not in out:
            out[node] = tuple(dict.fromkeys([node, *unit.nodes]))
    return out


def own_fragments(fp: onnx.ModelProto, qp: onnx.ModelProto, pairs: dict,
                  units: dict[str, tuple[str, ...]]) -> OwnFragments | None:
    """Every unit of ``units`` (:func:`unit_nodes`) with its QDQ fragment reading float tensors.

    Parameters
    ----------
    fp, qp : onnx.ModelProto
        The float model the analysis measures against and the QDQ model (node names shared).
    pairs : dict
        ``{float tensor: (unit, op type, quantized tensor)}`` of the analysis: each unit's fragment
        computes its quantized tensors, which are compared with the float tensors.

    Returns
    -------
    OwnFragments or None
        None when no unit has a fragment. A unit is left out when one of its nodes is not in the
        float model's main graph (If / Loop bodies), or its fragment reads a tensor neither model
        holds as a float-model tensor or an initializer (the analysis derives its figure).
    """
    f_out = {n.name: [o for o in n.output if o] for n in fp.graph.node}
    f_names = {i.name for i in fp.graph.input} | {o for outs in f_out.values() for o in outs}
    inits = {i.name: i for i in fp.graph.initializer}
    inits.update({i.name: i for i in qp.graph.initializer})
    q_sources = {i.name for i in qp.graph.initializer} | {i.name for i in qp.graph.input}
    q_nodes = list(qp.graph.node)
    producer = {o: k for k, n in enumerate(q_nodes) for o in n.output if o}
    by_unit: dict[str, list[str]] = {}
    for t, (node, _op, _q) in pairs.items():
        if node in units:
            by_unit.setdefault(node, []).append(t)
    nodes: list[onnx.NodeProto] = []
    shared: set[str] = set()
    outputs: dict[str, str] = {}
    for i, (node, tensors) in enumerate(by_unit.items()):
        names = set(units[node])
        if not names <= f_out.keys():
            continue
        internal = {o for n in names for o in f_out[n]}
        targets = [pairs[t][2] for t in tensors]
        frag = backward_closure(q_nodes, targets, FragmentStop(f_names, internal, q_sources), producer)
        made = {o for n in frag for o in n.output}
        free = {x for n in frag for x in node_reads(n)} - made
        if not frag or any(x not in f_names and x not in inits for x in free):
            continue
        mine = join_fragment(nodes, shared, frag, names, i)
        outputs.update((t, mine[q]) for t, q in zip(tensors, targets, strict=True) if q in mine)
    if not outputs:
        return None
    made = {o for n in nodes for o in n.output}
    reads = dict.fromkeys(x for n in nodes for x in sorted(node_reads(n)))
    inputs = [x for x in reads if x not in made and x not in inits]
    return OwnFragments(nodes, inits, list(qp.opset_import), inputs, outputs)
