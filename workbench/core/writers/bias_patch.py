"""Bias correction's second write as a patch of the first: the corrected biases quantized into the written model.

Bias correction (:mod:`workbench.core.transforms.bias_correction`) measures the written model's rounding, then
writes the plan again from a copy of the float model whose Conv biases absorb the shift. That second write
changes only the int32 bias initializers: the weights, their grids and every activation grid are those of the
first. So when every corrected bias was written as an int32 initializer of the main graph
(:class:`~workbench.core.writers.int32_bias.BiasSlot`), and quantizing the corrected bias takes the same path as
the first (no weight scale raised, not too coarse to stay int32), the corrected bias is quantized as the writer
quantizes it (:func:`~workbench.core.writers.int32_bias.quantize_bias`,
:func:`~workbench.core.writers.common.quantized_initializer`) into the same initializer, and the main graph's
value_info is kept as the copy declares it: the same bytes as the second write
(tests/test_bias_patch.py). nudenet_320n's recipe choice writes 8 variants with bias correction, each written
twice: 0.11 s a second write. Anything else (a bias kept float, a raised weight scale, a bias in a subgraph or
read by a float node) returns None, and the caller writes the plan again.
"""

from __future__ import annotations

import numpy as np
import onnx

from workbench.core.formats.qtypes import get_qtype
from workbench.core.graph.index import iter_graphs
from workbench.core.io.external import tensor_array
from workbench.core.writers.common import keep_declared_value_info, quantized_initializer
from workbench.core.writers.int32_bias import BiasSlot, coarse_error, quantize_bias
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
    if not shifts or any(b not in slots or any(s.raised or not s.main for s in slots[b]) for b in shifts):
        return None
    if any(i.name in shifts for g in iter_graphs(written.proto.graph) for i in g.initializer):
        return None  # the float bias is still read (a float node): it would be corrected there too
    corrected = {i.name: i for i in fixed.proto.graph.initializer if i.name in shifts}
    targets = {i.name: i for i in written.proto.graph.initializer}
    new: list[onnx.TensorProto] = []
    for bias in shifts:
        if bias not in corrected:
            return None
        b = tensor_array(corrected[bias]).astype(np.float32, copy=False)
        if not np.isfinite(b).all():
            return None
        for s in slots[bias]:
            res = quantize_bias(b, s.input_scale, s.weight_qparams, s.op_type, np.empty(0, np.float32), s.group)
            if res is None or res.raised or coarse_error(b, res, s.out_scale) is not None or s.q_name not in targets:
                return None
            new.append(quantized_initializer(s.q_name, res.q, get_qtype("int32")))
    for t in new:
        targets[t.name].CopyFrom(t)
    _declare(written, getattr(fixed, "declared_value_info", None))
    return written


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
