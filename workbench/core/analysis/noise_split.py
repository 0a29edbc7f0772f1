"""Where a quantized model's output noise comes from: its weights or its activations.

The QDQ model is run three ways on the same rows, next to the float model:

* **as written** -- every Q -> DQ pair and every weight DequantizeLinear;
* **weights only** -- each activation pair (a DequantizeLinear reading a QuantizeLinear of a
  computed tensor) replaced by an Identity of the pair's float input (neither rounded nor clipped
  to the calibrated range: that saturation is activation noise, and the activations-only model has
  it), except where the quantizer removed a Relu / Clip of the float model and lets the pair's
  range clip the negatives (onnxruntime's quantize_static): there the input is clipped as the
  removed node did; the constants' DequantizeLinear (weights, biases, quantized scalars) and the
  Q -> DQ pairs of constants stay;
* **activations only** -- each Q -> DQ pair of a constant (a float weight carried through
  QuantizeLinear, QAT / onnxruntime style) replaced by an Identity of that float constant, and each
  DequantizeLinear of an integer constant by the float initializer its reader reads in the float
  model (matched by node name and input position, and accepted when it is that constant's float
  source: :func:`is_float_source`; a Conv / Gemm bias that bias correction moved is matched to the
  float bias of the same node when that node's weight is matched, so the correction counts on the
  weights' side: :class:`BiasChange`); the activation pairs stay. The float model is the prepared one
  (BatchNormalization and per-channel Mul / Add folded into the Conv before them, as our exports
  quantize it), and for the constants it has no source of, the float file as written
  (:func:`~workbench.core.model.as_written.read_as_written`: onnxruntime's ``quantize_static`` keeps those nodes and quantizes
  their constants and the unfolded Conv weights).

A tensor is *constant* when it is an initializer, a Constant node's output, or a Cast / Identity of
one (:func:`constant_names`).

All three and the float model run with graph optimisations off (the Q/DQ values exactly as the
ONNX operators define them, :func:`workbench.core.runtime.session.make_session`; the float model on
the same kernels, so a weight that dequantizes exactly adds no noise at all). Each gives one output
SQNR over every float output (float32, float16, double; integer outputs such as argmax labels are
left out) of every row, ``10 log10(sum ref^2 / sum (ref - q)^2)`` (dB). Noise powers add when the
two sources are independent, so ``share = N_w / (N_w + N_a)`` with ``N = 10^(-SQNR / 10)`` tells
which source holds most of it (AIMET's QuantAnalyzer makes the same split with weight-only and
activation-only quantization of the whole model).

Whether they add is measured, not assumed: the parts added, ``-10 log10(N_w + N_a)`` dB
(:attr:`NoiseSplit.parts_db`), are compared with the model as written. The difference
``N_all - (N_w + N_a)`` is noise neither part holds (errors of the two that correlate or cancel, one
source's rounding moved by the other through a non-linear op, outputs saturated by a softmax or a
sigmoid); when the two figures differ by more than :data:`ADDITIVE_DB` (a power ratio of 1.26: that
noise is over a fifth of the whole, and a share may be off by as much), :attr:`NoiseSplit.additive`
is False and the shares are rough (ppocr_mobile_v2_cls, cpu-u8s8: both quantized 40.7 dB, better
than weights-only 38.7 and activations-only 34.3 dB, whose noise added gives 33.0 dB).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from workbench.core.analysis.sweep_tasks import Sqnr
from workbench.core.analysis.weight_error import chunked, dequantize_constants, row_slices
from workbench.core.data.finite import finite_rows
from workbench.core.data.loader import ANALYSIS_BATCH, open_data_source
from workbench.core.errors import ModelError, WorkbenchError, runtime_reason
from workbench.core.graph.prune import drop_unused_initializers
from workbench.core.graph.walk import all_names, iter_graphs, iter_nodes, subgraphs
from workbench.core.io.external import tensor_array
from workbench.core.io.ort_session import BUFFER_TENSOR_BYTES, QUIET_LOG, proto_session, session_sources
from workbench.core.io.tensor_bytes import copy_fields, tensor_nbytes
from workbench.core.model.as_written import read_as_written
from workbench.core.model.load import PreparedModel
from workbench.core.progress import CancelToken, ProgressFn, no_progress
from workbench.core.runtime.mx_simulation import has_mx, simulation_proto
from workbench.core.runtime.session import describe_runtime, make_session


@dataclass
class NoiseSplit:
    """Output SQNR (dB) of the model as written, with only its weights and with only its activations
    quantized; ``samples`` rows; ``unmatched``: constants whose float value was not found (they stay
    quantized in the activations-only model); ``corrected``: biases matched to their float bias although
    their values moved (bias correction; the activations-only model runs the float bias, so the shift
    counts as weight noise); ``runtime``: what the QDQ variants ran with.
    :attr:`additive` says whether the two noise powers add up to the model's (else the shares are
    rough: callers print "the noise of the two does not add on this model; shares are rough")."""

    all_db: float
    weights_db: float
    activations_db: float
    samples: int
    unmatched: list[str] = field(default_factory=list)
    runtime: str = ""
    corrected: list[BiasChange] = field(default_factory=list)

    @property
    def parts_db(self) -> float:
        """The two parts' noise powers added, ``-10 log10(N_w + N_a)`` (dB; +inf when neither adds
        noise): what the model as written gives when the two sources are independent."""
        total = _noise(self.weights_db) + _noise(self.activations_db)
        if total == 0 or math.isnan(total):
            return math.inf if total == 0 else math.nan
        return -10.0 * math.log10(total) if math.isfinite(total) else -math.inf

    @property
    def additive(self) -> bool:
        """True unless the parts added (:attr:`parts_db`) and the model as written differ by more than
        :data:`ADDITIVE_DB`: then the two noise powers do not add on this model, and the shares are
        rough. True when a figure is NaN (nothing measured: nothing to say)."""
        a, b = self.parts_db, self.all_db
        if math.isnan(a) or math.isnan(b) or a == b:
            return True
        return abs(a - b) <= ADDITIVE_DB

    @property
    def weights_share(self) -> float:
        """Fraction of the output noise power from the weights, ``N_w / (N_w + N_a)`` (NaN when
        neither adds noise)."""
        nw, na = _noise(self.weights_db), _noise(self.activations_db)
        return nw / (nw + na) if nw + na > 0 else math.nan

    def describe(self) -> str:
        """One line for a terminal or a status bar."""
        if all(math.isnan(v) for v in (self.all_db, self.weights_db, self.activations_db)):
            return "not measured: the model has no float output to compare (integer outputs are left out)"
        share = self.weights_share
        figures = (f"only the weights quantized {self.weights_db:.2f} dB, only the activations "
                   f"{self.activations_db:.2f} dB (both {self.all_db:.2f} dB)")
        if math.isnan(share):
            return f"{figures}: neither adds measurable noise"
        line = f"{figures}: {share:.0%} of the output noise comes from the weights, {1 - share:.0%} from the activations"
        if not self.additive:
            line += (f"; the noise of the two does not add on this model (added they give {self.parts_db:.2f} dB, "
                     f"both quantized {self.all_db:.2f} dB), so the shares are rough")
        return line

    def to_json(self) -> dict:
        """JSON-safe dict (non-finite figures become None)."""
        d = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(self).items()}
        share, parts = self.weights_share, self.parts_db
        d["weights_share"] = None if math.isnan(share) else share
        d["parts_db"] = parts if math.isfinite(parts) else None
        d["additive"] = None if math.isnan(parts) or math.isnan(self.all_db) else self.additive
        return d


#: Samples the split reads by default: four unfused passes (the float model, the model as written and
#: its two variants) cost about twice the per-unit analysis of the same rows, and a share of noise
#: power settles on few rows (cpu-u8s8 preset, 32 calibration rows: ppocrv4_rec 26 % from the weights
#: on 64 eval rows, 22 % on 16; minilm_l6_v2 4 % on both).
SPLIT_SAMPLES = 16
#: Largest difference (dB) between the parts' noise added and the model as written for which the two
#: noise powers are said to add (:attr:`NoiseSplit.additive`).
ADDITIVE_DB = 1.0
#: Bytes of float-model outputs kept for the second and third variant (above it, the float model
#: runs again for each: memory stays flat in the number of rows).
REF_BUDGET = 16 << 20


def _noise(db: float) -> float:
    return 0.0 if db == math.inf else 10.0 ** (-db / 10.0)


def constant_names(g: onnx.GraphProto) -> set[str]:
    """Names of the tensors with a fixed value in ``g`` and in its If / Loop / Scan bodies (a body
    sees its outer scope's names): initializers, Constant outputs, and the outputs of Cast / Identity
    nodes reading one (nodes in graph order, outer graphs first)."""
    graphs = [sg for _, sg in iter_graphs(g)]
    consts = {t.name for sg in graphs for t in sg.initializer}
    consts |= {t.values.name for sg in graphs for t in sg.sparse_initializer}
    for sg in graphs:
        for n in sg.node:
            if n.op_type == "Constant" or (n.op_type in ("Cast", "Identity") and n.input and n.input[0] in consts):
                consts.update(o for o in n.output if o)
    return consts


def qdq_pairs(qp: onnx.ModelProto) -> tuple[dict[str, onnx.NodeProto], dict[str, onnx.NodeProto]]:
    """``(activation pairs, weight pairs)`` of ``qp``, If / Loop / Scan bodies included (a body's
    DequantizeLinear may read a QuantizeLinear of the outer graph): DequantizeLinear output -> the
    QuantizeLinear it reads, split by whether that QuantizeLinear's input is constant
    (:func:`constant_names`: a weight quantization) or computed (an activation)."""
    consts = constant_names(qp.graph)
    nodes = [n for _, n in iter_nodes(qp.graph)]
    producer = {o: n for n in nodes for o in n.output if o}
    act: dict[str, onnx.NodeProto] = {}
    weight: dict[str, onnx.NodeProto] = {}
    for n in nodes:
        src = producer.get(n.input[0]) if n.op_type == "DequantizeLinear" and n.input and n.output else None
        if src is not None and src.op_type == "QuantizeLinear" and src.input:
            (weight if src.input[0] in consts else act)[n.output[0]] = src
    return act, weight


def has_qdq_pairs(qp: onnx.ModelProto) -> bool:
    """True when the model (bodies included) has an activation Q -> DQ pair and a weight quantization
    (a DequantizeLinear of a constant, or a Q -> DQ pair of one): a QDQ model the split applies to
    (QOperator and dynamic files have neither)."""
    act, weight = qdq_pairs(qp)
    if not act:
        return False
    consts = constant_names(qp.graph)
    return bool(weight) or any(n.op_type == "DequantizeLinear" and n.input and n.input[0] in consts
                               for _, n in iter_nodes(qp.graph))


def weights_only(qp: onnx.ModelProto, fp: onnx.ModelProto | None = None) -> onnx.ModelProto:
    """A copy of the QDQ model ``qp`` whose activation Q -> DQ pairs (If / Loop / Scan bodies
    included) pass their float input through, not rounded and not clipped to the calibrated range
    (that saturation is activation noise), except where the quantizer removed a Relu / Clip of the
    float model ``fp`` and left the pair's range to do its work (onnxruntime's quantize_static): there
    the float input is clipped as that node did (:func:`removed_activations`). Only the initializers
    the copy reads are copied."""
    return _assemble(qp, *_weights_only_parts(qp, fp))


def _weights_only_parts(qp: onnx.ModelProto, fp: onnx.ModelProto | None) -> tuple[_Replace, dict[str, TensorProto]]:
    """``(replace, added initializers)`` of :func:`weights_only` for :func:`_assemble`."""
    act, _ = qdq_pairs(qp)
    removed = removed_activations(qp, fp) if fp is not None else {}
    tensors = _tensor_protos(qp.graph)
    taken = all_names(qp.graph)
    added: dict[str, TensorProto] = {}

    def replace(n: onnx.NodeProto) -> list[onnx.NodeProto] | None:
        q = act.get(n.output[0]) if n.op_type == "DequantizeLinear" and n.output else None
        if q is None:
            return None
        nodes, inits = _clipped(q.input[0], n, removed.get(q.input[0], (None, None)), tensors, taken)
        added.update((t.name, t) for t in inits)
        return nodes

    return replace, added


def removed_activations(qp: onnx.ModelProto, fp: onnx.ModelProto) -> dict[str, tuple[float | None, float | None]]:
    """Tensors of ``qp`` that ``fp`` computes with a Relu or Clip node ``qp`` no longer has (a
    quantizer rewired the node before it to write that output, and lets the next QuantizeLinear's
    range clip), If / Loop / Scan bodies included: ``{tensor: (lower, upper)}`` the node clipped to
    (None: unbounded). A Clip whose bounds are not constants of ``fp`` is left out."""
    q_nodes = [n for _, n in iter_nodes(qp.graph)]
    q_names = {n.name for n in q_nodes if n.name}
    q_outputs = {o for n in q_nodes for o in n.output if o}
    tensors = _tensor_protos(fp.graph)
    out: dict[str, tuple[float | None, float | None]] = {}
    for _, n in iter_nodes(fp.graph):
        if n.op_type not in ("Relu", "Clip") or not n.output or n.name in q_names or n.output[0] not in q_outputs:
            continue
        if n.op_type == "Relu":
            out[n.output[0]] = (0.0, None)
            continue
        attrs = {a.name: a.f for a in n.attribute}
        bounds = []
        for k, key in ((1, "min"), (2, "max")):
            name = n.input[k] if len(n.input) > k else ""
            if name and name not in tensors:
                break
            bounds.append(float(_value(tensors[name]).reshape(-1)[0]) if name else attrs.get(key))
        else:
            out[n.output[0]] = (bounds[0], bounds[1])
    return out


def _clipped(x: str, dq: onnx.NodeProto, bounds: tuple[float | None, float | None],
             tensors: dict[str, TensorProto], taken: set[str]) -> tuple[list[onnx.NodeProto], list[TensorProto]]:
    """``(nodes, initializers)`` writing ``dq``'s output as ``x`` clipped to ``bounds`` (Max, Min;
    in the dtype of ``dq``'s scale), or an Identity of ``x`` without bounds."""
    y = dq.output[0]
    steps = [(op, b) for op, b in (("Max", bounds[0]), ("Min", bounds[1])) if b is not None]
    scale = tensors.get(dq.input[1]) if len(dq.input) > 1 else None
    if not steps or scale is None:
        return [helper.make_node("Identity", [x], [y], name=dq.name)], []
    dtype = helper.tensor_dtype_to_np_dtype(scale.data_type)
    nodes, inits, cur = [], [], x
    for k, (op, bound) in enumerate(steps):
        c = _fresh(f"{y}#{op.lower()}", taken)
        inits.append(numpy_helper.from_array(np.array(bound, dtype), c))
        last = k == len(steps) - 1
        out = y if last else _fresh(f"{y}#{op.lower()}_out", taken)
        nodes.append(helper.make_node(op, [cur, c], [out], name=dq.name if last else _fresh(f"{dq.name}#{op}", taken)))
        cur = out
    return nodes, inits


def activations_only(qp: onnx.ModelProto, fp: onnx.ModelProto, written: onnx.ModelProto | None = None
                     ) -> tuple[onnx.ModelProto, list[str]]:
    """A copy of ``qp`` whose weights are float (If / Loop / Scan bodies included): a Q -> DQ pair of
    a constant outputs that constant (the file's own float weight); a DequantizeLinear of an integer
    initializer outputs the float initializer its readers read in ``fp`` (same node name, same input
    position, same shape, and :func:`is_float_source` of it: a model quantized by another tool from a
    differently prepared float model, e.g. BatchNorm folded or SmoothQuant scales applied on one side
    only, is not given foreign weights; a Conv / Gemm bias moved by bias correction is matched to its
    float bias when the node's weight is matched: :func:`_corrected`), or else in ``written`` (the float file as written,
    :func:`~workbench.core.model.as_written.read_as_written`: a BatchNormalization or Mul / Add that ``fp`` folded and the
    quantizer kept), added to the main graph (visible in every body);
    ``(model, constants left quantized because no such float initializer was found)``. Only the
    initializers the copy reads are copied."""
    replace, added, unmatched, _ = _activations_only_parts(qp, fp, lambda: written)
    return _assemble(qp, replace, added), unmatched


def _activations_only_parts(qp: onnx.ModelProto, fp: onnx.ModelProto,
                            written: Callable[[], onnx.ModelProto | None] = lambda: None,
                            ) -> tuple[_Replace, dict[str, TensorProto], list[str], list[BiasChange]]:
    """``(replace, added float initializers, unmatched, biases matched with a change)`` of
    :func:`activations_only`; ``written()`` (called only when ``fp`` leaves a constant unmatched) gives
    the second float model or None."""
    q_consts = {t.name: t for _, g in iter_graphs(qp.graph) for t in g.initializer}
    consts = constant_names(qp.graph)
    _, weight_pairs = qdq_pairs(qp)
    q_nodes = [n for _, n in iter_nodes(qp.graph)]
    readers: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
    for n in q_nodes:
        for i, x in enumerate(n.input):
            readers.setdefault(x, []).append((n, i))
    dqs = [n for n in q_nodes if n.op_type == "DequantizeLinear" and n.input and n.input[0] in consts]
    floats, unmatched, changed = _float_sources(qp, fp, dqs, readers, q_consts)
    second = written() if unmatched else None
    if second is not None:
        left = set(unmatched)
        more, unmatched, also = _float_sources(qp, second, [n for n in dqs if n.output[0] in left], readers,
                                               q_consts, known=floats)
        floats.update(more)
        changed += also
    taken = all_names(qp.graph)
    names_of: dict[int, str] = {}  # id of a float initializer of fp / written -> its name in the variant
    added: dict[str, TensorProto] = {}

    def replace(n: onnx.NodeProto) -> list[onnx.NodeProto] | None:
        out_name = n.output[0] if n.op_type == "DequantizeLinear" and n.output else None
        if out_name in weight_pairs:
            return [helper.make_node("Identity", [weight_pairs[out_name].input[0]], [out_name], name=n.name)]
        source = floats.get(out_name) if out_name else None
        if source is None:
            return None
        if id(source) not in names_of:
            names_of[id(source)] = _fresh(source.name if source.name not in taken else f"{source.name}#float", taken)
            added[names_of[id(source)]] = source
        return [helper.make_node("Identity", [names_of[id(source)]], [out_name], name=n.name)]

    return replace, added, unmatched, changed


def _float_sources(qp: onnx.ModelProto, fp: onnx.ModelProto, dqs: list[onnx.NodeProto],
                   readers: dict[str, list[tuple[onnx.NodeProto, int]]], q_consts: dict[str, TensorProto],
                   known: Collection[str] = ()) -> tuple[dict[str, TensorProto], list[str], list[BiasChange]]:
    """``({DQ output: float initializer of fp verified to be its float value}, [DQ outputs left], [biases
    matched with a change])`` for the DequantizeLinear nodes ``dqs`` of constants of ``qp`` (``readers``:
    tensor -> (node, input position) of ``qp``; ``q_consts``: its initializers): the initializer the
    same-named reader reads at the same position in ``fp``, accepted by :func:`is_float_source`, or, for
    a bias :func:`is_float_source` rejects, by :func:`_corrected` (``known``: DQ outputs an earlier
    look-up matched, whose weights count as matched there)."""
    f_inits = {t.name: t for _, g in iter_graphs(fp.graph) for t in g.initializer}
    f_nodes = {n.name: n for _, n in iter_nodes(fp.graph) if n.name}
    candidates: list[tuple[onnx.NodeProto, str]] = []
    unmatched = []
    for n in dqs:
        names = {f_nodes[r.name].input[i] for r, i in readers.get(n.output[0], [])
                 if r.name in f_nodes and i < len(f_nodes[r.name].input)}
        source = names.pop() if len(names) == 1 else None
        if source is None or source not in f_inits or f_inits[source].data_type not in _FLOATS \
                or any(x and x not in q_consts for x in n.input):
            unmatched.append(n.output[0])
        else:
            candidates.append((n, source))
    floats: dict[str, TensorProto] = {}
    biases: list[BiasChange] = []  # biases whose value moved: accepted once their readers' weights are matched
    for chunk in chunked(candidates, f_inits, key=lambda item: item[1]):
        values = dequantize_constants([n for n, _ in chunk], q_consts, qp)
        for (n, source), value in zip(chunk, values, strict=True):
            w = tensor_array(f_inits[source])  # lazy (external) weights memory-mapped
            if value.shape == w.shape and is_float_source(w, value, n, q_consts):
                floats[n.output[0]] = f_inits[source]
            elif value.shape == w.shape and _is_bias(n, readers, q_consts):
                change = np.abs(value.astype(np.float64) - w.astype(np.float64))
                biases.append(BiasChange(n.output[0], source, float(change.max(initial=0.0)), float(change.mean())))
            else:
                unmatched.append(n.output[0])
        del values
    changed = _corrected(biases, {*floats, *known}, readers)
    floats.update((b.tensor, f_inits[b.float_tensor]) for b in changed)
    unmatched += [b.tensor for b in biases if b not in changed]
    return floats, unmatched, changed


@dataclass
class BiasChange:
    """A bias of the quantized file matched to its float bias although their values differ by more than
    rounding (bias correction moved it, :mod:`workbench.core.transforms.bias_correction`): ``tensor``
    (the DequantizeLinear output), ``float_tensor`` (the float model's bias), the largest and the mean
    absolute change, in the bias's own units (float64 of the dequantized minus the float values)."""

    tensor: str
    float_tensor: str
    largest: float
    mean: float


#: Ops whose input 2 is a bias added per output channel (the int32 DequantizeLinear our writer and
#: onnxruntime's quantize_static put there).
_BIAS_READERS = ("Conv", "ConvTranspose", "Gemm")


def _is_bias(n: onnx.NodeProto, readers: dict[str, list[tuple[onnx.NodeProto, int]]],
             q_consts: dict[str, TensorProto]) -> bool:
    """True when the DequantizeLinear ``n`` dequantizes an int32 constant that only Conv / ConvTranspose
    / Gemm nodes read, each as its bias (input 2)."""
    used = readers.get(n.output[0], [])
    return q_consts[n.input[0]].data_type == TensorProto.INT32 and bool(used) \
        and all(r.op_type in _BIAS_READERS and i == 2 for r, i in used)


def _corrected(biases: list[BiasChange], floats: Collection[str],
               readers: dict[str, list[tuple[onnx.NodeProto, int]]]) -> list[BiasChange]:
    """The biases of ``biases`` (same reader, same input position and same shape as their float bias,
    values moved) whose every reader's weight (input 1) is a DequantizeLinear output matched to its
    float source (in ``floats``, DQ outputs): both models were prepared alike (a BatchNormalization folded on one
    side only would move the weight too), so the bias differs only by a correction of its own."""
    return [b for b in biases if all(len(r.input) > 1 and r.input[1] in floats for r, _ in readers[b.tensor])]


#: A float initializer is a dequantized constant's source when at least this fraction of its elements
#: lie within one quantization step of the dequantized value (or beyond the grid's end it was clipped to).
MATCH_FRACTION = 0.99


def is_float_source(w: np.ndarray, dq: np.ndarray, node: onnx.NodeProto, consts: dict[str, TensorProto]) -> bool:
    """True when the float weight ``w`` is the value the DequantizeLinear ``node`` (inputs in
    ``consts``, output ``dq``, same shape as ``w``) was quantized from: at least
    :data:`MATCH_FRACTION` of the elements within one step of the node's grid (``scale`` broadcast
    per tensor, per axis or per block; for float8 the step of the value's binade), or clipped at the
    grid's end. Rounding to nearest stays within half a step, adaptive rounding (AdaRound) within
    one; a BatchNorm folded or a SmoothQuant scale applied on one side moves most elements by many
    steps. Computed in float64 slices of axis 0 (no whole-tensor copy)."""
    grid = _grid(node, consts)
    if grid is None:
        return False
    if w.ndim == 0:
        w, dq = w.reshape(1), dq.reshape(1)
    good = 0
    for i, j in row_slices(w):
        s, zp = grid.rows(grid.scale, i, j, w.shape), grid.rows(grid.zero_point, i, j, w.shape)
        wc, dc = w[i:j].astype(np.float64), dq[i:j].astype(np.float64)
        step = np.abs(dc) * 2.0 ** -grid.mantissa + s * 2.0 ** -9 if grid.mantissa else s
        step = step * (1 + 1e-3) + np.abs(dc) * 2.0 ** -22  # float32 rounding of large int32 values
        lo, hi = (grid.qmin - zp) * s, (grid.qmax - zp) * s
        ok = np.abs(wc - dc) <= step
        ok |= (wc >= dc) & (dc >= hi - 1.5 * step)  # clipped at the top of the grid
        ok |= (wc <= dc) & (dc <= lo + 1.5 * step)
        good += int(np.count_nonzero(ok))
    return good >= MATCH_FRACTION * w.size


@dataclass
class _Grid:
    """A Q / DQ node's grid: scale and zero_point (float64), axis, block_size, the dtype's range
    ``[qmin, qmax]`` and, for float8 / float4, its mantissa bits (0 for integers)."""

    scale: np.ndarray
    zero_point: np.ndarray
    axis: int
    block_size: int
    qmin: float
    qmax: float
    mantissa: int

    def rows(self, p: np.ndarray, i: int, j: int, shape: tuple[int, ...]) -> np.ndarray:
        """``p`` (scale or zero_point) broadcastable against rows ``i:j`` of a tensor of ``shape``."""
        if p.size == 1:
            return p.reshape(())
        axis = self.axis % len(shape)
        if self.block_size:
            if axis == 0:
                return p[np.arange(i, j) // self.block_size]
            return np.take(p[i:j], np.arange(shape[axis]) // self.block_size, axis=axis)
        p = p.reshape([-1 if k == axis else 1 for k in range(len(shape))])
        return p[i:j] if axis == 0 else p


_INT_RANGE = {TensorProto.UINT8: (0, 255), TensorProto.INT8: (-128, 127), TensorProto.UINT16: (0, 65535),
              TensorProto.INT16: (-32768, 32767), TensorProto.INT32: (-2 ** 31, 2 ** 31 - 1),
              TensorProto.UINT4: (0, 15), TensorProto.INT4: (-8, 7)}
#: float8 / float4 dtypes: (largest finite value, mantissa bits).
_FLOAT_Q = {TensorProto.FLOAT8E4M3FN: (448.0, 3), TensorProto.FLOAT8E4M3FNUZ: (240.0, 3),
            TensorProto.FLOAT8E5M2: (57344.0, 2), TensorProto.FLOAT8E5M2FNUZ: (57344.0, 2)}
if hasattr(TensorProto, "FLOAT4E2M1"):
    _FLOAT_Q[TensorProto.FLOAT4E2M1] = (6.0, 1)


def _grid(node: onnx.NodeProto, tensors: dict[str, TensorProto]) -> _Grid | None:
    """The grid of a QuantizeLinear / DequantizeLinear ``node`` whose scale (and zero_point) are in
    ``tensors``; None when they are not, or the dtype is not one the split knows."""
    if len(node.input) < 2 or node.input[1] not in tensors:
        return None
    zp_name = node.input[2] if len(node.input) > 2 and node.input[2] else ""
    if zp_name and zp_name not in tensors:
        return None
    attrs = {a.name: a for a in node.attribute}
    if zp_name:
        dtype = tensors[zp_name].data_type
    elif node.op_type == "DequantizeLinear":
        dtype = tensors[node.input[0]].data_type if node.input[0] in tensors else None
    else:
        dtype = attrs["output_dtype"].i if "output_dtype" in attrs and attrs["output_dtype"].i else TensorProto.UINT8
    if dtype in _INT_RANGE:
        (qmin, qmax), mantissa = _INT_RANGE[dtype], 0
    elif dtype in _FLOAT_Q:
        (fmax, mantissa) = _FLOAT_Q[dtype]
        qmin, qmax = -fmax, fmax
    else:
        return None
    scale = _value(tensors[node.input[1]]).astype(np.float64)
    zp = _value(tensors[zp_name]).astype(np.float64) if zp_name else np.zeros(1)
    axis = attrs["axis"].i if "axis" in attrs else 1
    block = attrs["block_size"].i if "block_size" in attrs else 0
    return _Grid(scale, zp, axis, block, float(qmin), float(qmax), mantissa)


def _value(t: TensorProto) -> np.ndarray:
    return tensor_array(t)


def _tensor_protos(g: onnx.GraphProto) -> dict[str, TensorProto]:
    """Initializers and Constant node values (``value`` attribute) of ``g`` and its bodies by name."""
    out = {t.name: t for _, sg in iter_graphs(g) for t in sg.initializer}
    for _, n in iter_nodes(g):
        if n.op_type == "Constant" and n.output:
            t = next((a.t for a in n.attribute if a.name == "value"), None)
            if t is not None:
                out[n.output[0]] = t
    return out


def _fresh(name: str, taken: set[str]) -> str:
    while name in taken:
        name += "_"
    taken.add(name)
    return name


_FLOATS = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE}
#: onnxruntime output types the split compares (integer and bool outputs are left out).
_FLOAT_OUTPUTS = ("tensor(float)", "tensor(float16)", "tensor(double)")


#: A node rewriter: the nodes replacing a node of the QDQ model, or None to keep it (bodies rewritten).
_Replace = Callable[[onnx.NodeProto], "list[onnx.NodeProto] | None"]


def _copied(t: TensorProto, name: str) -> TensorProto:
    """A copy of ``t`` called ``name``."""
    out = TensorProto()
    out.CopyFrom(t)
    out.name = name
    return out


def _assemble(qp: onnx.ModelProto, replace: _Replace, added: dict[str, TensorProto],
              tensor: Callable[[TensorProto, str], TensorProto] = _copied) -> onnx.ModelProto:
    """A variant of ``qp``: its nodes passed through ``replace`` (in If / Loop / Scan bodies too),
    nodes nothing reads dropped (in bodies too), then the main-graph initializers of ``qp`` and ``added`` (name ->
    tensor, filled by ``replace``) that a node of the variant reads (or that are graph inputs or
    outputs), each made by ``tensor(t, name)``: the others are never copied. Body initializers no
    node reads any more are dropped."""
    out = onnx.ModelProto()
    copy_fields(qp, out, ("graph",))
    copy_fields(qp.graph, out.graph, ("node", "initializer"))
    _rewrite(qp.graph, out.graph, replace)
    for _, g in reversed(list(iter_graphs(out.graph))):  # innermost bodies first: their reads are then final
        _drop_unread_nodes(g)
    read = {i.name for i in out.graph.input}
    for _, g in iter_graphs(out.graph):
        read.update(x for n in g.node for x in n.input)
        read.update(o.name for o in g.output)
    for t in qp.graph.initializer:
        if t.name in read:
            out.graph.initializer.append(tensor(t, t.name))
    for name, t in added.items():
        if name in read:
            out.graph.initializer.append(tensor(t, name))
    drop_unused_initializers(out)
    return out


def _rewrite(src: onnx.GraphProto, dst: onnx.GraphProto, replace: _Replace) -> None:
    """Append ``src``'s nodes to ``dst`` through ``replace``; a kept node's bodies are rewritten too."""
    for n in src.node:
        new = replace(n)
        if new is not None:
            dst.node.extend(new)
            continue
        m = dst.node.add()
        m.CopyFrom(n)
        for (_, body), (_, body_out) in zip(subgraphs(n), subgraphs(m), strict=True):
            del body_out.node[:]
            _rewrite(body, body_out, replace)


def _drop_unread_nodes(g: onnx.GraphProto) -> None:
    """Remove the nodes of ``g`` (a graph or a body) nothing reads any more (the graph's outputs and
    If / Loop / Scan nodes excepted; a body's reads of the outer graph count)."""
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


def noise_split(model: PreparedModel, qp: onnx.ModelProto, data: Any, *, samples: int | None = None,
                max_samples: int | None = SPLIT_SAMPLES, batch_size: int = ANALYSIS_BATCH,
                cancel: CancelToken | None = None, quant_label: str = "",
                progress: ProgressFn | None = None) -> NoiseSplit:
    """:class:`NoiseSplit` of the QDQ model ``qp`` against its float model ``model`` (prepared; its
    node names are those of ``qp``'s nodes). A constant of ``qp`` whose float source the prepared model
    does not hold (another tool quantized the file as written, keeping a BatchNormalization or
    Mul / Add the prepared model folded) is looked up in ``model``'s file as written
    (:func:`~workbench.core.model.as_written.read_as_written`, read only then).

    ``data``: a path, spec or DataSource, validated against ``model``; samples with NaN / Inf inputs
    are left out, at most ``samples`` and at most ``max_samples`` (None: no cap) are read, streamed
    in batches of ``batch_size``. The float model runs first, alone, while its outputs fit in
    :data:`REF_BUDGET` bytes (else it runs beside each pass), then the model as written and its two
    variants one after the other (one session and its arena alive at a time; a variant holds only
    the initializers it reads, its large weights handed to onnxruntime as one copy of their bytes:
    :func:`_pass_session`), so memory stays flat in the number of rows (minilm_l6_v2, cpu-u8s8,
    16 rows: peak RSS 390 MiB instead of 462, 295 before the split). A model whose inputs
    have axis 0 fixed (a QDQ file with a batch of 1, e.g. after a QONNX round trip, beside a float
    model of any batch) is fed that many rows at a time (:func:`run_rows`). ``quant_label`` names
    ``qp`` in errors (default: "the quantized model of FLOAT.onnx"). ``progress`` counts the rows of each of
    the four passes (the float model, the model as written and its two variants) and the session of each of the
    last three: ``4 * rows + 3`` steps (0 total when the data's length is unknown), a report per batch
    (:func:`split_steps`; it was one step of 2.6-6 s on minilm_l6_v2).

    Raises
    ------
    DataError
        The data does not fit the model.
    ModelError
        onnxruntime refuses a model (``make_session``'s message), or cannot run one on the data
        (the message names the model and the input shapes).
    """
    source = finite_rows(open_data_source(data, model))
    if max_samples is not None:
        samples = min(samples, max_samples) if samples else max_samples
    progress = progress or no_progress
    n = source.num_samples()
    total = split_steps(min(n, samples) if (n and samples) else (samples or n or 0)) if n else 0
    step = [0]  # the steps done

    def tick(steps: int, what: str) -> None:
        step[0] = max(step[0], min(step[0] + steps, total) if total else step[0] + steps)
        progress(step[0], total, what)

    progress(0, total, _PASSES[0])
    fp = model.proto
    float_label = Path(model.path).name if model.path else "(in memory)"
    quant_label = quant_label or f"the quantized model of {float_label}"
    unmatched: list[str] = []
    corrected: list[BiasChange] = []
    float_what = f"the float model {float_label}"
    float_sess = make_session(fp, optimize=False, arena=False)  # the same kernels as the variants: only quantization differs
    q_outputs = {o.name for o in qp.graph.output}
    names = [o.name for o in float_sess.get_outputs() if o.type in _FLOAT_OUTPUTS and o.name in q_outputs]
    if not names:  # integer outputs only (argmax labels): nothing to compare; run([]) would read them all
        return NoiseSplit(math.nan, math.nan, math.nan, samples=0, runtime=describe_runtime(False))
    refs = _float_outputs(float_sess, names, source.indexed_batches(batch_size, samples), float_what, cancel,
                          lambda rows: tick(rows, _PASSES[0]))
    if refs is not None:
        float_sess = None  # every pass reads the kept outputs: one session alive at a time
    elif total:  # stopped at its memory budget (it runs beside each pass instead): its rows counted done
        tick((total - 3) // 4 - step[0], _PASSES[0])
    figures, done = [], 0
    for k in range(len(_VARIANTS)):  # one at a time: one variant session (and its arena) alive
        sess = _pass_session(k, qp, fp, unmatched, f"{_VARIANTS[k]}{quant_label}", lambda: read_as_written(model),
                             corrected)
        tick(1, _PASSES[k + 1])  # its session built (a variant's constants rewritten first)
        acc, done = Sqnr(), 0
        for b, (idx, feed) in enumerate(source.indexed_batches(batch_size, samples)):
            if cancel is not None:
                cancel.check()
            ref = refs[b] if refs is not None else run_rows(float_sess, names, feed, float_what)
            for r, q in zip(ref, run_rows(sess, names, feed, f"{_VARIANTS[k]}{quant_label}"), strict=True):
                r, q = np.asarray(r), np.asarray(q)
                ok = np.isfinite(r) & np.isfinite(q)
                if not ok.all():  # NaN / Inf left out, as evaluate does
                    r, q = r[ok], q[ok]
                acc.update(r, q)
            done += len(idx)
            tick(len(idx), _PASSES[k + 1])
        del sess
        figures.append(acc.figures()[0])
    return NoiseSplit(*figures, samples=done, unmatched=unmatched, runtime=describe_runtime(False),
                      corrected=corrected)


#: What each pass runs, as the start of an error message (followed by the quantized model's label).
_VARIANTS = ("", "the weights-only variant of ", "the activations-only variant of ")
#: The progress message of each pass: the float model's, then those of :data:`_VARIANTS`.
_PASSES = ("the float model", "the model as written", "the weights-only variant", "the activations-only variant")


def split_steps(rows: int) -> int:
    """The progress steps of :func:`noise_split` on ``rows`` rows: the rows of its four passes (the float model,
    the model as written, its two variants) and the sessions of the last three, one step each."""
    return 4 * rows + 3


def _float_outputs(sess, names: list[str], batches, what: str, cancel: CancelToken | None,
                   tick: Callable[[int], None] = lambda rows: None) -> list | None:
    """The float model's outputs ``names`` on each batch of ``(indices, feed)``, or None as soon as
    they pass :data:`REF_BUDGET` bytes (the float model then runs beside each pass); ``tick(rows)`` after
    each batch."""
    refs, held = [], 0
    for idx, feed in batches:
        if cancel is not None:
            cancel.check()
        refs.append(run_rows(sess, names, feed, what))
        tick(len(idx))
        held += sum(np.asarray(r).nbytes for r in refs[-1])
        if held > REF_BUDGET:
            return None
    return refs


def _pass_session(k: int, qp: onnx.ModelProto, fp: onnx.ModelProto, unmatched: list[str], what: str,
                  written: Callable[[], onnx.ModelProto | None] = lambda: None,
                  corrected: list[BiasChange] | None = None):
    """The onnxruntime session of pass ``k``: 0 the model as written, 1 its weights-only variant, 2 its
    activations-only variant (float sources found in ``fp``, or else in ``written()``; the constants
    left quantized appended to ``unmatched``, the biases matched with a change to ``corrected``). A variant's
    large weights reach onnxruntime as buffers of their bytes (:class:`_Buffers`), never as a second
    protobuf copy of the model (MX models, whose DequantizeLinear onnxruntime runs as float
    initializers computed from the elements, are copied).

    Raises
    ------
    ModelError
        onnxruntime refuses the model (the message names it as ``what``).
    """
    if k == 0:
        return make_session(qp, optimize=False, arena=False)
    if k == 1:
        replace, added = _weights_only_parts(qp, fp)
    else:
        replace, added, missing, changed = _activations_only_parts(qp, fp, written)
        unmatched.extend(missing)
        if corrected is not None:
            corrected.extend(changed)
    buffers = _Buffers()
    proto = _assemble(qp, replace, added, _copied if has_mx(qp) else buffers)
    return _session(proto, buffers.sources, what)


class _Buffers:
    """Makes a variant's initializers: one of at least :data:`BUFFER_TENSOR_BYTES` bytes of
    ``raw_data`` becomes an external-data reference to an alias, and its bytes (one copy, read in
    place by onnxruntime) are kept in ``sources``; any other is copied (a lazy tensor's copy is its
    reference to the data file)."""

    def __init__(self) -> None:
        self.sources: dict[str, bytes] = {}

    def __call__(self, t: TensorProto, name: str) -> TensorProto:
        if t.data_location == TensorProto.EXTERNAL or not t.HasField("raw_data") \
                or tensor_nbytes(t) < BUFFER_TENSOR_BYTES:
            return _copied(t, name)
        alias = f"noise_split_{len(self.sources)}.data"
        raw = self.sources[alias] = t.raw_data
        ref = TensorProto(name=name, data_type=t.data_type, dims=t.dims, data_location=TensorProto.EXTERNAL)
        for key, value in (("location", alias), ("offset", "0"), ("length", str(len(raw)))):
            ref.external_data.add(key=key, value=value)
        return ref


def _session(proto: onnx.ModelProto, buffers: dict[str, bytes], what: str) -> ort.InferenceSession:
    """A session of ``proto`` (its references to ``buffers`` read in place, its lazy tensors from
    their data files) with the options of :func:`make_session` ``(optimize=False, arena=False)``.

    Raises
    ------
    ModelError
        onnxruntime refuses the model, or a lazy tensor's data file changed.
    """
    proto = simulation_proto(proto)
    so = ort.SessionOptions()
    so.log_severity_level = QUIET_LOG
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.enable_cpu_mem_arena = False
    lean, files = session_sources(proto)
    try:
        return proto_session(proto, so, split=(lean, {**files, **buffers}))
    except WorkbenchError:
        raise
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
        raise ModelError(f"onnxruntime cannot load {what}: {' '.join(str(exc).split())[:300]}",
                         hint="Check the quantized file with `workbench-cli inspect`, or leave the weights vs "
                              "activations split out (--split-samples 0).") from None


def fixed_batch(sess) -> int:
    """Rows an onnxruntime session takes per run: the fixed axis-0 size its inputs share (1 for a
    model exported with a batch of 1), 0 when that axis is dynamic (or the inputs disagree, or have
    no axis)."""
    sizes = {i.shape[0] for i in sess.get_inputs() if i.shape and isinstance(i.shape[0], int) and i.shape[0] > 0}
    return sizes.pop() if len(sizes) == 1 else 0


def run_rows(sess, names: list[str], feed: dict[str, np.ndarray], what: str) -> list[np.ndarray]:
    """``sess.run(names, feed)`` with the feed cut to the session's inputs; a session whose inputs
    have axis 0 fixed to ``k`` (:func:`fixed_batch`) is fed ``k`` rows at a time when the feed holds
    a multiple of ``k`` other than ``k`` (its outputs joined on axis 0). ``what`` names the model.

    Raises
    ------
    ModelError
        onnxruntime cannot run the model on the feed: one line with ``what``, the feed's shapes and
        onnxruntime's reason.
    """
    wanted = {i.name for i in sess.get_inputs()}
    feed = {k: v for k, v in feed.items() if k in wanted}
    k = fixed_batch(sess)
    rows = {len(v) for v in feed.values() if np.ndim(v)}
    n = rows.pop() if len(rows) == 1 else 0
    try:
        if not k or n == k or n % k:
            return sess.run(names, feed)
        parts = [sess.run(names, {x: v[i:i + k] if np.ndim(v) else v for x, v in feed.items()}) for i in range(0, n, k)]
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own types
        shapes = ", ".join(f"{x} {list(np.shape(v))}" for x, v in feed.items())
        raise ModelError(f"onnxruntime cannot run {what} on the data ({shapes}): {runtime_reason(exc, 300)}",
                         hint="Give data the quantized file's inputs accept (check them with `workbench-cli inspect`), "
                              "or leave the weights vs activations split out (--split-samples 0).") from None
    return [np.concatenate(p, axis=0) if np.ndim(p[0]) else np.stack(p) for p in zip(*parts, strict=True)]
