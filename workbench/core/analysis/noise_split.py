"""Where a quantized model's output noise comes from: its weights or its activations.

The QDQ model is run three ways on the same rows, next to the float model:

* **as written** -- every Q -> DQ pair and every weight DequantizeLinear;
* **weights only** -- each activation pair (a DequantizeLinear reading a QuantizeLinear) replaced
  by an Identity of the pair's float input; the constants' DequantizeLinear (weights, biases,
  quantized scalars) stay;
* **activations only** -- each constant's DequantizeLinear replaced by an Identity of the float
  initializer its reader reads in the float model (matched by node name and input position);
  the activation pairs stay.

All three and the float model run with graph optimisations off (the Q/DQ values exactly as the
ONNX operators define them, :func:`workbench.core.runtime.session.make_session`; the float model on
the same kernels, so a weight that dequantizes exactly adds no noise at all). Each gives one output SQNR over every float output of every row,
``10 log10(sum ref^2 / sum (ref - q)^2)`` (dB). Noise powers add when the two sources are
independent, so ``share = N_w / (N_w + N_a)`` with ``N = 10^(-SQNR / 10)`` tells which source holds
most of it (AIMET's QuantAnalyzer makes the same split with weight-only and activation-only
quantization of the whole model).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper

from workbench.core.analysis.sweep_tasks import Sqnr
from workbench.core.analysis.weight_error import chunked, dequantize_constants, tensor_sqnr
from workbench.core.data.finite import finite_rows
from workbench.core.data.loader import ANALYSIS_BATCH, open_data_source
from workbench.core.graph.prune import drop_unused_initializers
from workbench.core.graph.walk import iter_graphs, subgraphs
from workbench.core.io.external import tensor_array
from workbench.core.model.load import PreparedModel
from workbench.core.progress import CancelToken
from workbench.core.runtime.session import describe_runtime, make_session


@dataclass
class NoiseSplit:
    """Output SQNR (dB) of the model as written, with only its weights and with only its activations
    quantized; ``samples`` rows; ``unmatched``: constants whose float value was not found (they stay
    quantized in the activations-only model); ``runtime``: what the QDQ variants ran with."""

    all_db: float
    weights_db: float
    activations_db: float
    samples: int
    unmatched: list[str] = field(default_factory=list)
    runtime: str = ""

    @property
    def weights_share(self) -> float:
        """Fraction of the output noise power from the weights, ``N_w / (N_w + N_a)`` (NaN when
        neither adds noise)."""
        nw, na = _noise(self.weights_db), _noise(self.activations_db)
        return nw / (nw + na) if nw + na > 0 else math.nan

    def describe(self) -> str:
        """One line for a terminal or a status bar."""
        share = self.weights_share
        figures = (f"only the weights quantized {self.weights_db:.2f} dB, only the activations "
                   f"{self.activations_db:.2f} dB (both {self.all_db:.2f} dB)")
        if math.isnan(share):
            return f"{figures}: neither adds measurable noise"
        return f"{figures}: {share:.0%} of the output noise comes from the weights, {1 - share:.0%} from the activations"

    def to_json(self) -> dict:
        """JSON-safe dict (non-finite figures become None)."""
        d = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(self).items()}
        share = self.weights_share
        d["weights_share"] = None if math.isnan(share) else share
        return d


#: Samples the split reads by default: four unfused passes (the float model, the model as written and
#: its two variants) cost about twice the per-unit analysis of the same rows, and a share of noise
#: power settles on few rows (cpu-u8s8 preset, 32 calibration rows: ppocrv4_rec 26 % from the weights
#: on 64 eval rows, 22 % on 16; minilm_l6_v2 4 % on both).
SPLIT_SAMPLES = 16
#: Bytes of float-model outputs kept for the second and third variant (above it, the float model
#: runs again for each: memory stays flat in the number of rows).
REF_BUDGET = 16 << 20


def _noise(db: float) -> float:
    return 0.0 if db == math.inf else 10.0 ** (-db / 10.0)


def has_qdq_pairs(qp: onnx.ModelProto) -> bool:
    """True when the main graph has an activation Q -> DQ pair and a constant's DequantizeLinear (a QDQ
    model the split applies to; QOperator and dynamic files have neither)."""
    producer = {o: n for n in qp.graph.node for o in n.output if o}
    consts = {t.name for t in qp.graph.initializer}
    dqs = [n for n in qp.graph.node if n.op_type == "DequantizeLinear" and n.input]
    pair = any(producer.get(n.input[0]) is not None and producer[n.input[0]].op_type == "QuantizeLinear" for n in dqs)
    return pair and any(n.input[0] in consts for n in dqs)


def weights_only(qp: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of the QDQ model ``qp`` whose activation Q -> DQ pairs pass their float input through."""
    producer = {o: n for n in qp.graph.node for o in n.output if o}
    out = _copy_without_nodes(qp)
    for n in qp.graph.node:
        src = producer.get(n.input[0]) if n.op_type == "DequantizeLinear" and n.input else None
        if src is not None and src.op_type == "QuantizeLinear":
            out.graph.node.append(helper.make_node("Identity", [src.input[0]], [n.output[0]], name=n.name))
        else:
            out.graph.node.add().CopyFrom(n)
    return _drop_unread(out)


def activations_only(qp: onnx.ModelProto, fp: onnx.ModelProto) -> tuple[onnx.ModelProto, list[str]]:
    """A copy of ``qp`` whose constants' DequantizeLinear output the float initializer their
    readers read in ``fp`` (same node name, same input position, same shape, and within
    :data:`MATCH_DB` of the dequantized value: a model quantized by another tool from a differently
    prepared float model, e.g. BatchNorm folded on one side only, is not given foreign weights);
    ``(model, constants left quantized because no such float initializer was found)``."""
    f_inits = {t.name: t for t in fp.graph.initializer}
    f_nodes = {n.name: n for n in fp.graph.node if n.name}
    q_consts = {t.name: t for t in qp.graph.initializer}
    readers: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
    for n in qp.graph.node:
        for i, x in enumerate(n.input):
            readers.setdefault(x, []).append((n, i))
    candidates: list[tuple[onnx.NodeProto, str]] = []
    unmatched = []
    for n in qp.graph.node:
        if n.op_type != "DequantizeLinear" or not n.input or n.input[0] not in q_consts:
            continue
        names = {f_nodes[r.name].input[i] for r, i in readers.get(n.output[0], [])
                 if r.name in f_nodes and i < len(f_nodes[r.name].input)}
        source = names.pop() if len(names) == 1 else None
        if source is None or source not in f_inits or f_inits[source].data_type not in _FLOATS \
                or any(x and x not in q_consts for x in n.input):
            unmatched.append(n.output[0])
        else:
            candidates.append((n, source))
    floats: dict[str, str] = {}  # DQ output -> float initializer verified to be its float value
    for chunk in chunked(candidates, f_inits, key=lambda item: item[1]):
        values = dequantize_constants([n for n, _ in chunk], q_consts, qp)
        for (n, source), value in zip(chunk, values, strict=True):
            w = tensor_array(f_inits[source])  # lazy (external) weights memory-mapped
            if value.shape == w.shape and _close(w, value):
                floats[n.output[0]] = source
            else:
                unmatched.append(n.output[0])
    taken = set(q_consts) | {o for n in qp.graph.node for o in n.output}
    out = _copy_without_nodes(qp)
    added: dict[str, str] = {}
    for n in qp.graph.node:
        source = floats.get(n.output[0]) if n.op_type == "DequantizeLinear" and n.output else None
        if source is None:
            out.graph.node.add().CopyFrom(n)
            continue
        if source not in added:
            name = source if source not in taken else f"{source}#float"
            while name in taken and name != source:
                name += "_"
            t = out.graph.initializer.add()
            t.CopyFrom(f_inits[source])
            t.name = name
            added[source] = name
            taken.add(name)
        out.graph.node.append(helper.make_node("Identity", [added[source]], [n.output[0]], name=n.name))
    return _drop_unread(out), unmatched


#: A float initializer stands in for a dequantized constant only when the constant is within this
#: SQNR of it (dB): quantization error itself stays far above (8-bit ~40 dB, 4-bit ~20 dB).
MATCH_DB = 10.0


def _close(w: np.ndarray, dq: np.ndarray) -> bool:
    return tensor_sqnr(w, dq) >= MATCH_DB  # +inf when equal (an all-zero weight too); -inf: no signal


_FLOATS = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE}


def _copy_without_nodes(qp: onnx.ModelProto) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(qp)
    del out.graph.node[:]
    return out


def _drop_unread(proto: onnx.ModelProto) -> onnx.ModelProto:
    """Remove nodes nothing reads any more (the graph's outputs excepted), then the initializers no
    node reads (:func:`workbench.core.graph.prune.drop_unused_initializers`)."""
    g = proto.graph
    needed = {o.name for o in g.output}
    keep = []
    for n in reversed(g.node):
        if any(o in needed for o in n.output) or n.op_type in ("If", "Loop", "Scan"):
            keep.append(n)
            needed.update(n.input)
            needed.update(x for _, body in subgraphs(n) for _, sg in iter_graphs(body) for m in sg.node for x in m.input)
    if len(keep) != len(g.node):
        kept = list(reversed(keep))
        del g.node[:]
        g.node.extend(kept)
    drop_unused_initializers(proto)
    return proto


def noise_split(model: PreparedModel, qp: onnx.ModelProto, data: Any, *, samples: int | None = None,
                max_samples: int | None = SPLIT_SAMPLES, batch_size: int = ANALYSIS_BATCH,
                cancel: CancelToken | None = None) -> NoiseSplit:
    """:class:`NoiseSplit` of the QDQ model ``qp`` against its float model ``model`` (prepared; its
    node names are those of ``qp``'s nodes).

    ``data``: a path, spec or DataSource, validated against ``model``; samples with NaN / Inf inputs
    are left out, at most ``samples`` and at most ``max_samples`` (None: no cap) are read, streamed in batches of ``batch_size``. The three
    variants run one after the other (one variant session and its arena alive at a time), reading
    the float model's outputs kept from the first while they fit in :data:`REF_BUDGET` bytes (else
    the float model runs again), so memory stays flat in the number of rows.

    Raises
    ------
    DataError
        The data does not fit the model.
    ModelError
        onnxruntime refuses a model (``make_session``'s message).
    """
    source = finite_rows(open_data_source(data, model))
    if max_samples is not None:
        samples = min(samples, max_samples) if samples else max_samples
    fp = model.proto
    unmatched: list[str] = []

    def only_activations() -> onnx.ModelProto:
        proto, missing = activations_only(qp, fp)
        unmatched.extend(missing)
        return proto

    variants = [lambda: qp, lambda: weights_only(qp), only_activations]  # built when run: one copy at a time
    float_sess = make_session(fp, optimize=False, arena=False)  # the same kernels as the variants: only quantization differs
    q_outputs = {o.name for o in qp.graph.output}
    names = [o.name for o in float_sess.get_outputs() if o.type == "tensor(float)" and o.name in q_outputs]
    refs: list | None = []  # the float outputs per batch, while they fit in REF_BUDGET bytes
    held = 0
    figures, done = [], 0
    for k, variant in enumerate(variants):  # one at a time: one variant session (and its arena) alive
        sess = make_session(variant(), optimize=False, arena=False)
        acc, done = Sqnr(), 0
        for b, (idx, feed) in enumerate(source.indexed_batches(batch_size, samples)):
            if cancel is not None:
                cancel.check()
            if refs is not None and b < len(refs):
                ref = refs[b]
            else:
                ref = float_sess.run(names, feed)
                held += sum(r.nbytes for r in ref)
                if k == 0 and refs is not None:
                    refs = refs + [ref] if held <= REF_BUDGET else None
            for r, q in zip(ref, sess.run(names, feed), strict=True):
                r, q = np.asarray(r), np.asarray(q)
                ok = np.isfinite(r) & np.isfinite(q)
                if not ok.all():  # NaN / Inf left out, as evaluate does
                    r, q = r[ok], q[ok]
                acc.update(r, q)
            done += len(idx)
        del sess
        if k == 0 and refs is not None:
            float_sess = None  # every later variant reads the cached outputs
        figures.append(acc.figures()[0])
    return NoiseSplit(*figures, samples=done, unmatched=unmatched, runtime=describe_runtime(False))
