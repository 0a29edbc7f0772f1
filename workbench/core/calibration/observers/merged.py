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

A MinMax output may also reach its sources through operators that copy values without changing
their set (:func:`copies_every_value`: a nearest Resize at whole-number scales, which copies input
element ``k`` to output ``s * k``), and through a MaxPool whose every window holds an input element
(:func:`picks_input_values`: its values are some of its input's) when the same source also feeds the
Concat directly, as in YOLOv8's SPPF ``Concat(x, MaxPool(x), MaxPool(MaxPool(x)), ...)``: the
smallest and largest value are then exactly the sources'. Not for histograms: a Resize repeats each
value ``s * s`` times, a MaxPool keeps some. nudenet_320n: 3 more Concats merged (516k of the 4.5M
values fetched per row at 320x320).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

from workbench.core.calibration.observers.base import Observer
from workbench.core.calibration.observers.derived import can_derive, exact_range, is_histogram
from workbench.core.calibration.observers.histogram import HistogramObserver, StreamingHistogram
from workbench.core.graph.index import elem_types
from workbench.core.io.external import materialize
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
    consts = {t.name: t for t in g.initializer}
    out: dict[str, Merge] = {}
    for node in g.node:
        if node.op_type != "Concat" or node.domain not in ("", "ai.onnx") or len(node.output) != 1:
            continue
        y = node.output[0]
        if y not in specs or y in outputs or y in keep or types.get(y) != onnx.TensorProto.FLOAT:
            continue
        extremes = None if is_histogram(specs[y]) else consts  # MinMax: Resize / MaxPool paths too
        sources = _sources(list(node.input), producer, _Ready(observed, out, y), extremes)
        if sources and all(s in specs and can_derive(specs[y], specs[s]) for s in sources):
            out[y] = Merge(y, tuple(sources))
    return out


class _Ready:
    """Membership test "observed without merging, or merged already" (no set copied per Concat)."""

    def __init__(self, observed: set[str], merged: dict[str, Merge], itself: str):
        self.observed, self.merged, self.itself = observed, merged, itself

    def __contains__(self, t: str) -> bool:
        return t != self.itself and (t in self.observed or t in self.merged)


def _sources(inputs: list[str], producer: dict[str, onnx.NodeProto], ready,
             extremes: dict[str, onnx.TensorProto] | None = None) -> list[str] | None:
    """The observed tensors whose values make up ``inputs``, or None if some input has none.

    The outputs of one Split that all feed the Concat (each once) stand for the Split's input
    together, whether or not some of them are observed themselves (counted once either way).
    ``extremes`` (the initializers; a MinMax output only): an input may also reach its source
    through :func:`copies_every_value` operators, or through a :func:`picks_input_values` MaxPool
    when another input reaches that source without one (so the extremes are the sources').
    """
    if any(not t for t in inputs):
        return None
    out: list[str] = []
    direct: set[str] = set()  # sources some input holds all the values of
    picked: set[str] = set()  # sources some input holds only some values of (through a MaxPool)
    whole: set[str] = set()  # first output of each Split whose outputs all feed the Concat
    for t in inputs:
        p = producer.get(t)
        if p is not None and p.op_type == "Split" and sorted(p.output) == sorted(i for i in inputs if i in p.output):
            if p.output[0] in whole:
                continue
            whole.add(p.output[0])
            t = p.input[0]
        found = _through_rearranging(t, producer, ready, extremes)
        if found is None:
            return None
        out.append(found[0])
        (picked if found[1] else direct).add(found[0])
    return out if picked <= direct else None


def _through_rearranging(t: str, producer: dict[str, onnx.NodeProto], ready,
                         extremes: dict[str, onnx.TensorProto] | None = None) -> tuple[str, bool] | None:
    """``(observed tensor, whether a MaxPool was crossed)`` that ``t`` holds values of, or None."""
    subset = False
    for _ in range(16):
        if t in ready:
            return t, subset
        p = producer.get(t)
        if p is None or p.domain not in ("", "ai.onnx") or not p.input:
            return None
        if p.op_type in REARRANGING:
            pass
        elif extremes is not None and copies_every_value(p, extremes, producer):
            pass
        elif extremes is not None and picks_input_values(p):
            subset = True
        else:
            return None
        t = p.input[0]
    return None


def _constant(name: str, consts: dict[str, onnx.TensorProto], producer: dict[str, onnx.NodeProto]) -> np.ndarray | None:
    """The value of an initializer or a Constant node's ``value``, else None."""
    if name in consts:
        return numpy_helper.to_array(materialize(consts[name]))
    p = producer.get(name)
    if p is not None and p.op_type == "Constant":
        for a in p.attribute:
            if a.name == "value":
                return numpy_helper.to_array(a.t)
    return None


def _attrs(node: onnx.NodeProto) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def copies_every_value(node: onnx.NodeProto, consts: dict[str, onnx.TensorProto],
                       producer: dict[str, onnx.NodeProto]) -> bool:
    """True when the output of ``node`` holds every value of its input 0 and no other.

    A Resize (opset 10+) or Upsample in ``nearest`` mode with ``asymmetric`` coordinates (Upsample's
    only ones) and constant whole-number scales ``s >= 1`` (no ``sizes``): output element ``i`` reads
    input element ``nearest(i / s)`` (values copied, none computed) and output ``s * k`` reads ``k``
    exactly, whatever the rounding mode, so no input element is skipped.
    """
    a = _attrs(node)
    if node.op_type == "Upsample":
        scales_at = 1
    elif node.op_type == "Resize" and a.get("coordinate_transformation_mode", b"half_pixel") == b"asymmetric":
        scales_at = 1 if len(node.input) == 2 else 2  # opset 10: (X, scales); 11+: (X, roi, scales, sizes)
        if len(node.input) > 3 and node.input[3]:
            return False
    else:
        return False
    if a.get("mode", b"nearest") != b"nearest" or len(node.input) <= scales_at or len(node.output) != 1:
        return False
    scales = _constant(node.input[scales_at], consts, producer)
    if scales is None or scales.dtype.kind != "f" or scales.size == 0:
        return False
    return bool(np.all(scales >= 1) and np.all(scales == np.round(scales)))


def picks_input_values(node: onnx.NodeProto) -> bool:
    """True when every output element of a MaxPool is one of its input's elements: every window
    holds an input element (no dilation, no ceil mode, explicit pads smaller than the kernel) and
    there is no index output. Its extremes then lie within its input's."""
    if node.op_type != "MaxPool" or len(node.output) != 1:
        return False
    a = _attrs(node)
    kernel = list(a.get("kernel_shape", []))
    pads = list(a.get("pads", [0] * 2 * len(kernel)))
    return (bool(kernel) and a.get("auto_pad", b"NOTSET") in (b"NOTSET", b"VALID") and not a.get("ceil_mode", 0)
            and all(d == 1 for d in a.get("dilations", [1] * len(kernel))) and len(pads) == 2 * len(kernel)
            and all(p < kernel[i % len(kernel)] for i, p in enumerate(pads)))


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

