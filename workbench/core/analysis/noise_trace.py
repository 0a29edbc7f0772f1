"""Where a unit's input noise was measured: the SQNR_in of the local SQNR (:mod:`.sensitivity`).

A unit's input is traced upstream to the nearest tensor whose error against float is measured:
the output of another unit (its row of :func:`~workbench.core.analysis.unit_error.analyze_units`),
through the plan's shared grids and through nodes with one noisy input (Split, Reshape, MaxPool, a
float Sigmoid or bias Add, a LayerNorm: they keep the noise ratio, roughly). A tensor that float
nodes compute from the graph's inputs, initializers and tensor shapes alone is noiseless (the same
in both models: a Range, a Reshape of a weight, the Sqrt of a head size read with Shape). A float
node that mixes noisy tensors (a residual Add, a Concat of two branches) stops the walk: its output
is measured too when the analysis probes it (:func:`probe_pairs`), and is NaN (not measured)
otherwise.
"""

from __future__ import annotations

import math

import onnx

from workbench.core.graph.op_families import PASS_THROUGH_OPS

#: The unit-name slot of a probe in the analysis' pairs (``{float tensor: (unit, op type, quantized
#: tensor)}``): a probed tensor belongs to no unit, so it gets no row of its own.
PROBE = ""


#: Ops whose output depends only on their input's shape, the same in both models (noiseless).
SHAPE_OPS = frozenset({"Shape", "Size"})


class Tracer:
    """Traces tensors of ``graph`` (the main graph the figures were measured on) to a measured one.

    Parameters
    ----------
    plan : QuantPlan
        Its units (which nodes add noise) and aliases (shared grids).
    measured : dict of str to float
        Tensor -> SQNR (dB) of every measured tensor: unit outputs, and probed float-node outputs.
    graph : onnx.GraphProto
        The float model's main graph (topologically ordered, as ONNX requires).
    """

    def __init__(self, plan, measured: dict[str, float], graph: onnx.GraphProto) -> None:
        self.plan, self.db = plan, measured
        self.producer = {o: node for node in graph.node for o in node.output if o}
        self.quantized = quantized = {n for u in plan.units.values() if not u.excluded for n in u.nodes}
        self.clean = {i.name for i in graph.input} | {t.name for t in graph.initializer}
        for node in graph.node:  # graph order is topological; a quantized unit's node adds noise
            exact = node.op_type in SHAPE_OPS or all(not i or i in self.clean for i in node.input)
            if node.name not in quantized and exact:
                self.clean.update(o for o in node.output if o)

    def sqnr(self, tensor: str, own: set[str]) -> float:
        """SQNR (dB) upstream of ``tensor`` as read by a unit whose outputs are ``own``: the measured
        figure the walk reaches, +inf when noiseless, NaN when it stops at an unmeasured mixing node."""
        db, _stop = self._walk(tensor, own)
        return db

    def stop(self, tensor: str, own: set[str]) -> str | None:
        """The output of the float node that mixes noisy tensors where the walk from ``tensor`` stops
        (the tensor to probe), or None when it reaches a measured or noiseless tensor."""
        db, stop = self._walk(tensor, own)
        return stop if math.isnan(db) else None

    def _walk(self, tensor: str, own: set[str]) -> tuple[float, str | None]:
        seen: set[str] = set()
        while tensor not in seen:
            seen.add(tensor)
            if tensor in self.db and tensor not in own:
                return self.db[tensor], None
            if tensor in self.clean:
                return math.inf, None
            alias = self.plan.aliases.get(tensor)
            if alias is not None and alias not in own:
                tensor = alias  # a grid shared with its producer's (not with the reading unit's own output)
                continue
            node = self.producer.get(tensor)
            noisy = [i for i in (node.input if node is not None else []) if i and i not in self.clean]
            if node is not None and len(noisy) == 1 and (node.name not in self.quantized
                                                         or node.op_type in PASS_THROUGH_OPS):
                tensor = noisy[0]  # one noisy input: the node keeps its noise ratio, roughly
                continue
            if node is not None and node.name not in self.quantized and len(noisy) > 1:
                return math.nan, tensor  # a float node mixing noisy tensors: measured only when probed
            break
        return math.nan, None


def probe_pairs(plan, float_proto: onnx.ModelProto, quant_proto: onnx.ModelProto,
                pairs: dict[str, tuple[str, str, str]], *,
                units: set[str] | None = None) -> dict[str, tuple[str, str, str]]:
    """The float-node outputs where some unit's input trace stops (:meth:`Tracer.stop`), in the
    format of ``pairs`` (``{float tensor: (PROBE, op type, quantized tensor)}``), so the analysis
    measures them beside the unit outputs and every unit behind a residual Add gets a local SQNR.

    The quantized tensor is the output of the node of the same name and op type in ``quant_proto``
    (the writer keeps float nodes): the value before any Q -> DQ pair the reading unit puts on it,
    whose rounding is that unit's own noise. A node the quantized model does not have is not probed;
    ``pairs`` are the unit outputs already measured; ``units``: the units whose inputs are traced (default:
    every quantized unit; the analysis passes those whose own noise is derived, not measured on float inputs).
    """
    graph = float_proto.graph
    tracer = Tracer(plan, dict.fromkeys(pairs, 0.0), graph)
    main = {n.name for n in graph.node}
    q_nodes = {n.name: n for n in quant_proto.graph.node if n.name}
    found: dict[str, tuple[str, str, str]] = {}
    for unit in plan.units.values():
        if unit.excluded or unit.node not in main or (units is not None and unit.node not in units):
            continue
        own = set(unit.results)
        for t in unit.inputs:
            stop = tracer.stop(t, own)
            if not stop or stop in pairs or stop in found:
                continue
            node = tracer.producer[stop]
            twin = q_nodes.get(node.name)
            if node.name and twin is not None and twin.op_type == node.op_type \
                    and len(twin.output) == len(node.output):
                found[stop] = (PROBE, node.op_type, twin.output[list(node.output).index(stop)])
    return found
