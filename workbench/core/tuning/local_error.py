"""Local error of one activation tensor's quantization, measured at the compute nodes that read it.

For an activation tensor ``x`` and candidate quantization parameters ``qp``, the local error is
the relative squared error of each reading compute node (Conv, ConvTranspose, MatMul, Gemm) when
only ``x`` is fake-quantized and every other input stays float::

    e(qp) = sum_n || node_n(x, ...) - node_n(DQ(Q(x; qp)), ...) ||^2 / sum_n || node_n(x, ...) ||^2

summed over the readers ``n`` and over all elements of all held-out samples. A tensor that no
compute node reads is measured on itself: ``||x - DQ(Q(x))||^2 / ||x||^2`` over an evenly strided
subset of at most ``OWN_ELEMENTS`` elements per batch. Each reader runs as a
one-node onnxruntime model (its initializers copied in, its other inputs fed from the float model's
values), so the figure is the unit's own noise, not the noise accumulated upstream.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import onnx
from onnx import helper

from workbench.core.formats.qparams import QParams
from workbench.core.runtime.session import make_session

#: A tensor measured on itself uses at most about this many of its elements per batch (evenly strided).
OWN_ELEMENTS = 1 << 16
#: Op types whose output error is the local figure of their activation inputs.
COMPUTE_OPS = ("Conv", "ConvTranspose", "MatMul", "Gemm")


def _sq(a: np.ndarray) -> float:
    """Sum of squares: a float32 dot product, redone in float64 where float32 overflows (huge values)."""
    flat = np.ravel(a)
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(np.dot(flat, flat))
    if not np.isfinite(total):
        wide = flat.astype(np.float64)
        total = float(np.dot(wide, wide))
    return total


def fake_quantize_per_tensor(x: np.ndarray, qp: QParams) -> np.ndarray:
    """ONNX QuantizeLinear -> DequantizeLinear of ``x`` with a per-tensor integer ``qp``, float32.

    ``q = saturate(rint(x / scale) + zero_point)`` (round half to even, the storage dtype's range),
    then ``(q - zero_point) * scale``; the same values as
    :func:`workbench.core.formats.numerics.fake_quantize`, without its general per-axis machinery.
    """
    info = np.iinfo(qp.zero_point.dtype)
    scale = np.float32(qp.scale.reshape(()))
    zp = np.float32(qp.zero_point.reshape(()))
    q = np.rint(np.asarray(x, np.float32) / scale)
    q += zp
    np.clip(q, info.min, info.max, out=q)
    q -= zp
    q *= scale
    return q


class Reader:
    """One compute node as a single-node onnxruntime model.

    ``feeds``: the node's non-initializer inputs (fed from the float model's values); the tensor
    under test is one of them.
    """

    def __init__(self, proto: onnx.ModelProto, node: onnx.NodeProto):
        inits = {i.name: i for i in proto.graph.initializer}
        self.node = node
        self.feeds = [t for t in dict.fromkeys(node.input) if t and t not in inits]
        g = proto.graph
        types = {vi.name: vi.type.tensor_type.elem_type for vi in [*g.value_info, *g.input, *g.output]}

        def info(t: str) -> onnx.ValueInfoProto:
            return helper.make_tensor_value_info(t, types.get(t) or onnx.TensorProto.FLOAT, None)

        graph = helper.make_graph(
            [node], f"local_{node.name}", [info(t) for t in self.feeds], [info(node.output[0])],
            [inits[t] for t in dict.fromkeys(node.input) if t in inits])
        mini = helper.make_model(graph, opset_imports=list(proto.opset_import), ir_version=proto.ir_version)
        self.session = make_session(mini, threads=1)

    def run(self, values: dict[str, np.ndarray]) -> np.ndarray:
        return self.session.run(None, {t: values[t] for t in self.feeds})[0]


class LocalError:
    """Streaming local error of one tensor for several candidate qparams (see module docstring)."""

    def __init__(self, tensor: str, candidates: dict[str, QParams], readers: list[Reader]):
        self.tensor = tensor
        self.candidates = candidates
        self.readers = readers
        self.err = dict.fromkeys(candidates, 0.0)
        self.sig = 0.0

    def needs(self) -> set[str]:
        """Float-model tensors this measurement reads."""
        return {self.tensor} | {t for r in self.readers for t in r.feeds}

    def update(self, values: dict[str, np.ndarray]) -> None:
        """Add one batch; ``values`` maps every tensor of :meth:`needs` to its float value."""
        x = values[self.tensor]
        if x.size == 0:
            return
        if not self.readers and x.size > OWN_ELEMENTS:  # an evenly strided subset estimates its own error
            x = np.ravel(x)[::-(-x.size // OWN_ELEMENTS)]
        refs = [r.run(values) for r in self.readers] if self.readers else [x]
        self.sig += sum(_sq(y) for y in refs)
        seen: dict[tuple[float, int, str], float] = {}  # candidates with the same qparams are run once
        for name, qp in self.candidates.items():
            key = (float(qp.scale.reshape(())), int(qp.zero_point.reshape(())), str(qp.zero_point.dtype))
            if key not in seen:
                xq = fake_quantize_per_tensor(x, qp)
                if self.readers:
                    outs: Iterable[np.ndarray] = (r.run({**values, self.tensor: xq}) for r in self.readers)
                else:
                    outs = [xq]
                seen[key] = sum(_sq(y - ref) for y, ref in zip(outs, refs, strict=True))
            self.err[name] += seen[key]

    def relative(self) -> dict[str, float]:
        """Candidate -> relative squared error (0 when the tensor was all zeros)."""
        return {k: (v / self.sig if self.sig > 0 else 0.0) for k, v in self.err.items()}
