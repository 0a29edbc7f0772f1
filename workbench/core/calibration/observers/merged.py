"""Merged observers: a Concat output's statistics from its inputs' observers.

A Concat moves values, it computes none: the values of its output are exactly the values of its
inputs. When every input is observed anyway (fetched, fed, or derived), the output's observer is
their merge and the output need not be fetched (nudenet_320n: the C2f blocks' Concats, a fifth
of the values calibration would fetch once SiLU outputs are derived). An input may also reach an
observed tensor through operators that only rearrange values (Reshape, Transpose, Squeeze, ...),
and the outputs of one Split that all feed the Concat stand for the Split's input.

* MinMax: the smallest minimum and largest maximum of the inputs -- the output's exact range.
* Histograms: the inputs' histograms added (:meth:`StreamingHistogram.merge`, widest first): exact
  where bin grids align, otherwise each input bin's count is spread over the output's bins by
  overlap, i.e. within one bin of the direct histogram.

Only per-tensor float32 specs; a histogram output needs histogram inputs, a MinMax output inputs
with exact extremes (as :mod:`~workbench.core.calibration.observers.derived`).
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx

from workbench.core.calibration.observers.base import Observer
from workbench.core.calibration.observers.derived import can_derive, exact_range
from workbench.core.calibration.observers.histogram import HistogramObserver, StreamingHistogram
from workbench.core.graph.index import elem_types
from workbench.core.recipe.spec import QuantSpec

#: Operators whose output holds exactly the values of their data input (input 0), rearranged.
REARRANGING = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Identity"})


@dataclass(frozen=True)
class Merge:
    """``tensor`` = Concat of tensors holding the values of ``sources`` (in order, repeats kept)."""

    tensor: str
    sources: tuple[str, ...]


def find_merges(proto: onnx.ModelProto, specs: dict[str, QuantSpec], observed: set[str],
                keep: set[str] = frozenset()) -> dict[str, Merge]:
    """Concat outputs of ``specs`` whose observer can be merged from observed inputs.

    Parameters
    ----------
    proto : onnx.ModelProto
        The prepared model (main graph; shape inference filled ``value_info``).
    specs : dict[str, QuantSpec]
        Tensor -> spec of every tensor calibration observes.
    observed : set of str
        Tensors whose observers will be complete without merging (fetched, fed or derived).
    keep : set of str
        Tensors that must stay observed directly (the sources of derivations).

    Returns
    -------
    dict[str, Merge]
        In graph order; a merge may use an earlier merge's tensor. Graph outputs are never merged.
    """
    g = proto.graph
    producer = {o: n for n in g.node for o in n.output if o}
    types = elem_types(g)
    outputs = {o.name for o in g.output}
    out: dict[str, Merge] = {}
    for node in g.node:
        if node.op_type != "Concat" or node.domain not in ("", "ai.onnx") or len(node.output) != 1:
            continue
        y = node.output[0]
        if y not in specs or y in outputs or y in keep or types.get(y) != onnx.TensorProto.FLOAT:
            continue
        sources = _sources(list(node.input), producer, _Ready(observed, out, y))
        if sources and all(s in specs and can_derive(specs[y], specs[s]) for s in sources):
            out[y] = Merge(y, tuple(sources))
    return out


class _Ready:
    """Membership test "observed without merging, or merged already" (no set copied per Concat)."""

    def __init__(self, observed: set[str], merged: dict[str, Merge], itself: str):
        self.observed, self.merged, self.itself = observed, merged, itself

    def __contains__(self, t: str) -> bool:
        return t != self.itself and (t in self.observed or t in self.merged)


def _sources(inputs: list[str], producer: dict[str, onnx.NodeProto], ready) -> list[str] | None:
    """The observed tensors whose values make up ``inputs``, or None if some input has none.

    The outputs of one Split that all feed the Concat (each once) stand for the Split's input
    together, whether or not some of them are observed themselves (counted once either way).
    """
    if any(not t for t in inputs):
        return None
    out: list[str] = []
    whole: set[str] = set()  # first output of each Split whose outputs all feed the Concat
    for t in inputs:
        p = producer.get(t)
        if p is not None and p.op_type == "Split" and sorted(p.output) == sorted(i for i in inputs if i in p.output):
            if p.output[0] in whole:
                continue
            whole.add(p.output[0])
            t = p.input[0]
        src = _through_rearranging(t, producer, ready)
        if src is None:
            return None
        out.append(src)
    return out


def _through_rearranging(t: str, producer: dict[str, onnx.NodeProto], ready) -> str | None:
    for _ in range(16):
        if t in ready:
            return t
        p = producer.get(t)
        if p is None or p.op_type not in REARRANGING or p.domain not in ("", "ai.onnx"):
            return None
        t = p.input[0]
    return None


def apply_merges(merges: dict[str, Merge], observers: dict[str, Observer]) -> None:
    """Fill ``observers[m.tensor]`` from its sources' observers, in order (in place)."""
    for m in merges.values():
        dst = observers[m.tensor]
        srcs = [observers[s] for s in m.sources]
        dst.count = sum(s.count for s in srcs)
        dst.nonfinite = sum(s.nonfinite for s in srcs)
        dst.batches = max(s.batches for s in srcs)
        full = [s for s in srcs if s.count]
        if not full:
            continue
        if isinstance(dst, HistogramObserver):
            h = StreamingHistogram(dst.num_bins)
            for s in sorted(full, key=lambda o: -(o.hists[0].vmax - o.hists[0].vmin)):
                h.merge(s.hists[0])
            dst.hists = [h]
        else:
            ranges = [exact_range(s) for s in full]
            dst._min, dst._max = min(r[0] for r in ranges), max(r[1] for r in ranges)

