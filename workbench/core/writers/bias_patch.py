"""Bias correction's second write as a patch of the first: the corrected biases quantized into the written model.

Bias correction (:mod:`workbench.core.transforms.bias_correction`) measures the written model's rounding, then
writes the plan again from a copy of the float model whose Conv biases absorb the shift. That second write
changes only the int32 bias initializers: the weights, their grids and every activation grid are those of the
first. So when every corrected bias was written as an int32 initializer of the main graph
(:class:`~workbench.core.writers.int32_bias.BiasSlot`), and quantizing the corrected bias takes the same path as
the first (not too coarse to stay int32; a weight scale raised on the same channels to the same printed scales, so
the same note), the corrected bias is quantized as the writer quantizes it
(:func:`~workbench.core.writers.int32_bias.quantize_bias`, :func:`~workbench.core.writers.common.quantized_initializer`)
into the same initializer (with a raised weight scale: the weight's integer and scale initializers and the bias
scale too, when they are the unit's own), and the main graph's value_info is kept as the copy declares it: the
same bytes as the second write (tests/test_bias_patch.py). nudenet_320n's recipe choice writes 8 variants with
bias correction, each written twice: 0.11 s a second write; ppocrv4_rec's raises the weight scales of dead
channels in 4 Convs. Anything else (a bias kept float, a weight scale raised otherwise, a bias in a subgraph or read
by a float node) returns None, and the caller writes the plan again.
"""

from __future__ import annotations

import numpy as np
import onnx

from workbench.core.formats.numerics import quantize
from workbench.core.formats.qparams import QParams
from workbench.core.formats.qtypes import get_qtype
from workbench.core.graph.index import iter_graphs
from workbench.core.graph.walk import use_counts
from workbench.core.io.external import tensor_array
from workbench.core.writers.common import float_initializer, keep_declared_value_info, quantized_initializer
from workbench.core.writers.int32_bias import BiasSlot, coarse_error, quantize_bias, raised_scales
from workbench.core.writers.qdq import QdqResult


def patch_biases(written: QdqResult, fixed, shifts: dict[str, np.ndarray]) -> QdqResult | None:
    """``written`` (a QDQ write of a plan from a float model) with the biases of ``fixed`` (that model with
    the biases named in ``shifts`` corrected, :func:`~workbench.core.pipeline.write_passes.corrected_model`) put in
    place of its int32 biases: what writing the plan from ``fixed`` gives, or None when that cannot be told so
    (module docstring). ``written.proto`` is changed in place (only when the patch applies); nothing is
    raised: a bias the writer would refuse (NaN / Inf) returns None, and the full write says why."""
    slots: dict[str, list[BiasSlot]] = {}
    for s in written.biases:
        slots.setdefault(s.bias, []).append(s)
    if not shifts or any(b not in slots or not all(s.main for s in slots[b]) for b in shifts):
        return None
    if any(i.name in shifts for g in iter_graphs(written.proto.graph) for i in g.initializer):
        return None  # the float bias is still read (a float node): it would be corrected there too
    corrected = {i.name: i for i in fixed.proto.graph.initializer if i.name in shifts}
    targets = {i.name: i for i in written.proto.graph.initializer}
    readers = use_counts(written.proto.graph)
    new: list[onnx.TensorProto] = []
    for bias in shifts:
        if bias not in corrected:
            return None
        b = tensor_array(corrected[bias]).astype(np.float32, copy=False)
        if not np.isfinite(b).all():
            return None
        for s in slots[bias]:
            res = quantize_bias(b, s.input_scale, s.weight_qparams, s.op_type, np.empty(0, np.float32), s.group)
            if (res is None or coarse_error(b, res, s.out_scale) is not None or s.q_name not in targets
                    or res.raised != s.raised
                    or raised_scales(s.weight_qparams, res, s.op_type, s.group) != s.factor):
                return None  # kept float, or a weight scale raised otherwise (another note): written again
            if res.raised:
                weight = _raised_weight(s, res.weight_qparams, fixed, targets, readers)
                if weight is None:
                    return None
                new += weight + [float_initializer(s.scale_name, res.qparams.scale)]
            new.append(quantized_initializer(s.q_name, res.q, get_qtype("int32")))
    for t in new:
        targets[t.name].CopyFrom(t)
    _declare(written, getattr(fixed, "declared_value_info", None))
    return written


def _raised_weight(s: BiasSlot, wq: QParams, fixed, targets: dict[str, onnx.TensorProto],
                   readers: dict[str, int]) -> list[onnx.TensorProto] | None:
    """The integer weight and scale initializers of ``s``'s weight on the raised qparams ``wq``, as the writer makes
    them (``_int_init``); None when its initializers are not its unit's own (read by another node too, in any graph)."""
    if len(s.weight_inits) < 2 or any(n not in targets or readers.get(n, 0) != 1 for n in s.weight_inits):
        return None
    init = next((i for i in fixed.proto.graph.initializer if i.name == s.weight), None)
    if init is None:
        return None
    w = tensor_array(init).astype(np.float32, copy=False)
    return [quantized_initializer(s.weight_inits[0], quantize(w, wq), wq.qt),
            float_initializer(s.weight_inits[1], wq.scale)]


def _declare(written: QdqResult, declared: frozenset[str] | None) -> None:
    """The main graph's value_info as a write from a model declaring ``declared`` keeps it."""
    if written.value_info is None:
        keep_declared_value_info(written.proto, declared)
        return
    vis = written.proto.graph.value_info
    del vis[:]
    for vi in written.value_info:
        if declared is None or vi.name in declared:
            vis.add().CopyFrom(vi)
