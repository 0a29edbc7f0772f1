"""Static QDQ writer: QuantizeLinear / DequantizeLinear pairs placed as the plan says.

Layout (what onnxruntime's QDQ fusion expects, ``qdq_selector_action_transformer.cc``):

* one ``Q -> DQ`` pair per quantized activation tensor, shared by all its consumers; a graph
  output keeps its name (the producer writes ``<name>_prequant``, the DQ writes ``<name>``);
* per consumer, ``DQ(weight_int, scale, zero_point)`` feeding the op (integer initializers are
  shared when the qparams are equal, the DQ node is not);
* int32 bias ``DQ(bias_int32, input_scale * weight_scale, 0, axis=0)`` (:mod:`workbench.core.writers.int32_bias`);
* aliases (pass-through outputs) reuse the scale / zero_point initializers of their source.

Every generated name is unique against all names of the model (case 01).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper

from workbench.core.calibration.observers import make_observer
from workbench.core.errors import ExportError, RecipeError, WorkbenchError, checker_line
from workbench.core.formats.mx import is_mx
from workbench.core.formats.numerics import quantize
from workbench.core.formats.qparams import QParams
from workbench.core.formats.qtypes import get_qtype
from workbench.core.graph.index import NameAllocator, all_names, attrs_of, iter_graphs, subgraphs
from workbench.core.graph.prune import drop_unused_initializers
from workbench.core.io.external import checkable, tensor_array
from workbench.core.io.tensor_bytes import append_copies, lean_copy, model_tensor_bytes, restore_held
from workbench.core.issues import IssueCode, PlanIssue
from workbench.core.planning.kernels import readers, unit_activation, unit_kernel_kind
from workbench.core.planning.plan import NodeUnit, QuantPlan, UnitInput
from workbench.core.wording import count
from workbench.core.writers import common as C
from workbench.core.writers import mx as mx_writer
from workbench.core.writers.int32_bias import (
    DEAD_CHANNEL,
    BiasSlot,
    all_dead,
    coarse_error,
    quantize_bias,
    raised_scales,
)
from workbench.core.writers.ort_rewrites import guard
from workbench.core.writers.shared_tables import TableCopy, share_tables, size_issue
from workbench.core.writers.weight_mse import mse_applies, mse_weight_qparams

log = logging.getLogger(__name__)


@dataclass
class QdqResult:
    """Output of a writer: ``proto`` (new model), ``tensor_map`` (float tensor name -> its
    dequantized tensor in ``proto``), ``issues`` (found while writing; the plan's own issues
    stay in ``plan.issues``), ``biases`` (each int32 bias written, :class:`~workbench.core.writers.int32_bias.BiasSlot`)
    and ``value_info`` (the main graph's value_info before the writer kept only the declared ones; None when it
    kept every one): what :mod:`~workbench.core.writers.bias_patch` needs to put corrected biases into ``proto``."""

    proto: onnx.ModelProto
    tensor_map: dict[str, str]
    issues: list[PlanIssue]
    biases: list[BiasSlot] = field(default_factory=list)
    value_info: list[onnx.ValueInfoProto] | None = None


@dataclass
class _Pair:
    src: str          # tensor the Q reads (the producer's output)
    dq_out: str       # tensor the consumers read
    scale: str
    zero_point: str
    qp: QParams
    q_out: str = ""   # the QuantizeLinear output (read by DQs inside If branches too)


def write_qdq(model, plan: QuantPlan, act_qparams: dict[str, QParams], *, check: bool = True,
              weights: dict | None = None) -> QdqResult:
    """Write the static QDQ model of ``plan``.

    Parameters
    ----------
    model : PreparedModel
        Not modified.
    plan : QuantPlan
        From :func:`workbench.core.planning.plan.build_plan`.
    act_qparams : dict of str to QParams
        Per-tensor qparams of every tensor in ``plan.activations`` (from calibration).
    check : bool
        Run onnx.checker on the result (False: a caller that only loads it into onnxruntime, which
        validates the graph itself).
    weights : dict, optional
        A memo of quantized weights kept between writes of the same ``model.proto`` (unchanged), filled in
        here (:class:`QdqWriter`): the recipe choice writes one model 8-9 times with the same weight settings.

    Raises
    ------
    ExportError
        A planned activation has no qparams or a non-finite / non-positive scale, or the opset
        upgrade the plan needs fails.
    """
    result = QdqWriter(model, plan, act_qparams, check=check, weights=weights).write()
    _note_nbits(plan, result, model.proto.graph)
    return result


def _note_nbits(plan: QuantPlan, result: QdqResult, graph: onnx.GraphProto) -> None:
    """MatMul units whose integer weight sits beside a wider activation (a16w8): onnxruntime fuses the
    weight's DequantizeLinear and the MatMul into MatMulNBits (:mod:`workbench.core.planning.kernels`),
    whose default accuracy level computes the activation at int8."""
    n_readers = readers(graph)
    fused = [u.node for u in plan.units.values() if not u.excluded and u.config.activation is not None
             and unit_kernel_kind(plan, u, n_readers, set()) == "nbits"]
    if fused:
        bits = "/".join(map(str, sorted({unit_activation(plan, plan.units[n]).qtype.bits for n in fused})))
        C.record_nbits_accuracy(result, fused, f"{count(len(fused), 'MatMul unit')} with integer weights beside "
                                f"{bits}-bit activations",
                                "the activation is quantized to int8 per block inside the kernel, so its "
                                f"{bits} bits are computed at 8 there")




def _spec_key(spec) -> tuple:
    """The weight memo's key of ``spec`` (a QuantSpec): its class and each field's name, type and value, the
    ``observer_args`` items sorted by name (with their types). Two specs get one key only when every field holds an
    equal value of the same type, so they compute the same qparams. ``model_dump_json``, which the memo keyed on
    before, took 10-21 us a lookup (nudenet_320n's and minilm_l6_v2's weight specs), this 1.6-2.9 us."""
    return (type(spec), *((name, type(v), tuple(sorted((k, type(x), x) for k, x in v.items())))
                          if isinstance(v, dict) else (name, type(v), v) for name, v in spec.__dict__.items()))


class QdqWriter:
    """Rewrites a copy of the model; subclasses change how a unit is emitted.

    ``weights``: a memo kept between writers of the same, unchanged ``model.proto`` (the caller's to tie to it):
    each weight's qparams by its name and spec (MinMax and MSE observers), and each integer initializer's type,
    dims and bytes by the weight's name and its qparams, so a later write copies them instead of computing them
    again (the same bytes). The recipe choice writes nudenet_320n 8 times: 0.18 s of CPU in ``_weight_qp`` and
    ``_int_init``, of which the memo leaves the first write's."""

    def __init__(self, model, plan: QuantPlan, act_qparams: dict[str, QParams], *, check: bool = True,
                 weights: dict | None = None):
        self.check = check
        self._weights = weights
        # large float weights are not copied: read from model.proto, put back only if still used
        proto, self._held = lean_copy(model.proto)
        self.issues: list[PlanIssue] = []
        self.max_opset = 10**6
        try:
            self.proto = C.upgrade_opset(proto, plan.min_opset, held=self._held)
        except ExportError as exc:
            self.max_opset = C.default_opset(proto)
            if self.max_opset < 10:
                raise
            self.proto = proto
            self.issues.append(PlanIssue("", "warning", f"{exc.message} Units that need a newer opset stay "
                                         "in float (listed per node).", code=IssueCode.OPSET_UPGRADE_FAILED))
        C.fix_ir_version(self.proto)
        self.plan = plan
        self.alloc = NameAllocator(all_names(self.proto))
        self.consts = {i.name: i for g in iter_graphs(self.proto.graph) for i in g.initializer}
        self.consts.update((n, t) for n, t in self._held.items() if n not in self.consts)
        self._skipped = self._units_beyond_opset()
        self.tensor_map: dict[str, str] = {}
        self.pairs: dict[str, _Pair] = {}
        self.new_inits: list[onnx.TensorProto] = []
        self._int_cache: dict[tuple, tuple[str, str, str]] = {}
        self._graph_key = 0
        self._act_qparams = act_qparams
        self._float_proto = model.proto
        self._declared = getattr(model, "declared_value_info", None)
        #: float weight -> its first integer copy in the main graph (:mod:`~workbench.core.writers.shared_tables`)
        self.table_copies: dict[str, TableCopy] = {}
        #: each int32 bias written (:class:`~workbench.core.writers.int32_bias.BiasSlot`)
        self.bias_slots: list[BiasSlot] = []

    # -- opset fallback ----------------------------------------------------------------------
    def _spec_ok(self, spec) -> bool:
        need = spec.qtype.min_opset
        if spec.granularity == "per_channel":
            need = max(need, 13)
        elif spec.granularity == "per_block":
            need = max(need, 21)
        return need <= self.max_opset

    def _units_beyond_opset(self) -> set[str]:
        """Units whose specs the model's opset cannot express (when the upgrade failed)."""
        skipped = set()
        for name, unit in self.plan.units.items():
            specs = [q.spec for q in unit.quant_inputs] + [self.plan.activations[t] for t in unit.outputs
                                                           if t in self.plan.activations]
            if not unit.excluded and not all(self._spec_ok(sp) for sp in specs):
                skipped.add(name)
                self.issues.append(PlanIssue(name, "warning", f"left in float: its quantization needs a newer "
                                             f"opset than the model's {self.max_opset} (upgrade failed).", code=IssueCode.NEEDS_NEWER_OPSET))
        return skipped

    # -- driver ------------------------------------------------------------------------------
    def write(self) -> QdqResult:
        self._make_pairs()
        for unit in self.plan.units.values():  # kept float: the same tensor in both models
            self.tensor_map.update((t, t) for t in unit.float_outputs if t not in self.tensor_map)
        self._rewrite(self.proto.graph, main=True)
        self.issues += share_tables(self.proto, self.table_copies, self.alloc, set(self.plan.units))
        append_copies(self.proto.graph.initializer, self.new_inits)
        restore_held(self.proto, self._held)
        drop_unused_initializers(self.proto)
        value_info = self._undeclared_value_info()
        C.keep_declared_value_info(self.proto, self._declared)
        C.stamp_metadata(self.proto, self.plan)
        if self.check:
            self._check()
        self.issues += mx_writer.runtime_issues(self.proto)
        self.issues += size_issue(self.proto, self._float_proto)
        return QdqResult(self.proto, self.tensor_map, self.issues, self.bias_slots, value_info)

    def _undeclared_value_info(self) -> list[onnx.ValueInfoProto] | None:
        """Copies of the main graph's value_info when :func:`~workbench.core.writers.common.keep_declared_value_info`
        is about to drop some of it (a model that counts more as declared, a bias-corrected copy, keeps more), else None."""
        vis = self.proto.graph.value_info
        if self._declared is None or all(vi.name in self._declared for vi in vis):
            return None
        out = []
        for vi in vis:
            out.append(onnx.ValueInfoProto())
            out[-1].CopyFrom(vi)
        return out

    def _check(self) -> None:
        if model_tensor_bytes(self.proto) > 2**31 - 2**24:
            return  # onnx.checker cannot serialise > 2 GiB in memory: io.save.save_model checks the file on disk
        try:
            onnx.checker.check_model(checkable(self.proto))  # weights kept on disk: checked as inputs
        except onnx.checker.ValidationError as exc:
            raise ExportError(f"The written model fails onnx.checker: {checker_line(str(exc))}",
                              hint="Report this as a Workbench bug with the model and recipe.",
                              details=str(exc).strip()) from None

    # -- activation pairs ---------------------------------------------------------------------
    def _act_qp(self, t: str) -> QParams:
        qp = self._act_qparams.get(t)
        if qp is None:
            raise ExportError(f"Activation tensor {t!r} has no calibrated qparams.",
                              hint="Run calibration with the current plan before exporting.")
        scale = np.asarray(qp.scale, np.float32).reshape(())
        if not np.isfinite(scale) or scale <= 0:
            raise ExportError(f"Activation tensor {t!r} has scale {float(scale)} (must be finite and > 0).",
                              hint="Re-run calibration; check the data for NaN/Inf.")
        zp = np.asarray(qp.zero_point).reshape(()).astype(get_qtype(qp.qtype).storage)
        return QParams(scale, zp, qp.qtype, None, None)

    def _make_pairs(self) -> None:
        outputs = {o.name for o in self.proto.graph.output}
        inputs = {i.name for i in self.proto.graph.input}
        roots: dict[str, tuple[str, str, QParams]] = {}
        for t in self.plan.qdq_tensors():
            root = self.plan.aliases.get(t, t)
            while root in self.plan.aliases:
                root = self.plan.aliases[root]
            if not self._spec_ok(self.plan.activations[root]):
                continue
            if root not in roots:
                qp = self._act_qp(root)
                s, z = self._scale_zp(root, qp)
                roots[root] = (s, z, qp)
            s, z, qp = roots[root]
            if t in outputs and t not in inputs:
                pair = _Pair(self.alloc.new(f"{t}_prequant"), t, s, z, qp)
            else:
                pair = _Pair(t, self.alloc.new(f"{t}_dequantized"), s, z, qp)
            pair.q_out = self.alloc.new(f"{t}_quantized")
            self.pairs[t] = pair
            self.tensor_map[t] = pair.dq_out

    def _scale_zp(self, base: str, qp: QParams) -> tuple[str, str]:
        s = self.alloc.new(f"{base}_scale")
        z = self.alloc.new(f"{base}_zero_point")
        self.new_inits.append(C.float_initializer(s, qp.scale))
        self.new_inits.append(C.quantized_initializer(z, np.asarray(qp.zero_point), qp.qt))
        return s, z

    def _pair_nodes(self, t: str) -> list[onnx.NodeProto]:
        p = self.pairs[t]
        return [helper.make_node("QuantizeLinear", [p.src, p.scale, p.zero_point], [p.q_out],
                                 name=self.alloc.new(f"{t}_QuantizeLinear")),
                helper.make_node("DequantizeLinear", [p.q_out, p.scale, p.zero_point], [p.dq_out],
                                 name=self.alloc.new(f"{t}_DequantizeLinear"))]

    # -- If-branch boundary units (plan.proxies) ----------------------------------------------
    def _local_scale_zp(self, p: _Pair) -> tuple[str, str]:
        """Copies of a pair's scale / zero point in the current subgraph (onnxruntime's QDQ
        selectors want them as initializers of the graph that holds the DQ)."""
        s, z = self.alloc.new(f"{p.scale}_local"), self.alloc.new(f"{p.zero_point}_local")
        self.new_inits += [C.float_initializer(s, p.qp.scale),
                           C.quantized_initializer(z, np.asarray(p.qp.zero_point), p.qp.qt)]
        return s, z

    def _branch_io(self, node: onnx.NodeProto, unit: NodeUnit) -> tuple[list, list]:
        """DQ of the main-graph Q output for the input; Q -> DQ (the If output's qparams) for the output."""
        x, y = unit.inputs[0], unit.outputs[0]
        px, py = self.pairs.get(x), self.pairs.get(self.plan.proxies.get(y, ""))
        if px is None or py is None:
            return [], []
        s, z = self._local_scale_zp(px)
        x_dq = self.alloc.new(f"{x}_dequantized")
        pre = [helper.make_node("DequantizeLinear", [px.q_out, s, z], [x_dq],
                                name=self.alloc.new(f"{x}_DequantizeLinear"))]
        node.input[0] = x_dq
        s, z = self._local_scale_zp(py)
        y_pre, y_q = self.alloc.new(f"{y}_prequant"), self.alloc.new(f"{y}_quantized")
        node.output[0] = y_pre
        post = [helper.make_node("QuantizeLinear", [y_pre, s, z], [y_q], name=self.alloc.new(f"{y}_QuantizeLinear")),
                helper.make_node("DequantizeLinear", [y_q, s, z], [y], name=self.alloc.new(f"{y}_DequantizeLinear"))]
        return pre, post

    # -- graph rewrite ------------------------------------------------------------------------
    def _rewrite(self, graph: onnx.GraphProto, main: bool) -> None:
        if not main:  # a subgraph keeps its own quantized initializers (onnxruntime's fusions look there)
            outer, outer_key = self.new_inits, self._graph_key
            self.new_inits, self._graph_key = [], id(graph)
            self._rewrite_nodes(graph, main)
            append_copies(graph.initializer, self.new_inits)
            self.new_inits, self._graph_key = outer, outer_key
            return
        self._rewrite_nodes(graph, main)

    def _rewrite_nodes(self, graph: onnx.GraphProto, main: bool) -> None:
        new: list[onnx.NodeProto] = []
        if main:
            for t in self.proto.graph.input:
                if t.name in self.pairs:
                    new += self._pair_nodes(t.name)
        for node in graph.node:
            for sub in subgraphs(node):
                self._rewrite(sub, main=False)
            unit = self.plan.units.get(node.name)
            pre: list[onnx.NodeProto] = []
            post: list[onnx.NodeProto] = []
            if unit is not None and not unit.excluded and unit.node not in self._skipped and \
                    unit.op_type == node.op_type and (unit.graph == "") == main:
                pre, node = self.emit_unit(node, unit, main)
                if not main and unit.inputs:
                    pre_x, post = self._branch_io(node, unit)
                    pre += pre_x
            outs = list(node.output)
            if main and node.op_type in ("Relu", "Clip") and outs[0] in self.pairs:
                pre += guard(node, self.pairs[outs[0]].qp, self)
            if main:
                self._rewire(node)
            new += pre + [node] + post
            if main:
                for o in outs:
                    if o in self.pairs:
                        new += self._pair_nodes(o)
        del graph.node[:]
        graph.node.extend(new)

    def _rewire(self, node: onnx.NodeProto) -> None:
        for i, name in enumerate(node.input):
            if name in self.pairs:
                node.input[i] = self.pairs[name].dq_out
        for k, name in enumerate(node.output):
            if name in self.pairs and self.pairs[name].src != name:
                node.output[k] = self.pairs[name].src

    # -- one unit -----------------------------------------------------------------------------
    def emit_unit(self, node: onnx.NodeProto, unit: NodeUnit, main: bool):
        """DequantizeLinear nodes for the unit's weight, bias and constants; returns (pre, node)."""
        by_role = {r: [q for q in unit.quant_inputs if q.role == r] for r in ("weight", "bias", "const")}
        pre: list[onnx.NodeProto] = []
        wq = None
        if by_role["weight"]:
            wi = by_role["weight"][0]
            wq = self._weight_qp(node, wi.tensor, wi.spec)
        if by_role["bias"] and wq is not None:
            pre_b, wq = self._bias(node, unit, by_role["bias"][0], wq)
            pre += pre_b
        elif wq is not None:
            wq = self._fit_float_bias(node, wq)
        if wq is not None:
            wi = by_role["weight"][0]
            pre.append(self._dq_const(node, wi, self.const(wi.tensor), wq))
            if by_role["bias"] and self.bias_slots and self.bias_slots[-1].node == node.name:
                self.bias_slots[-1].weight, self.bias_slots[-1].weight_inits = wi.tensor, tuple(pre[-1].input)
        for ci in by_role["const"]:
            x = self.const(ci.tensor)
            cq = C.weight_qparams(x, ci.spec.model_copy(update={"axis": None}))
            pre.append(self._dq_const(node, ci, x, cq))
        return pre, node

    def _weight_qp(self, node, name: str, spec) -> QParams:
        """Weight qparams with the recipe's observer (MinMax directly, MSE by an exact search over the weight's
        values (:mod:`~workbench.core.writers.weight_mse`), others via the registry)."""
        key = ("qparams", name, _spec_key(spec))
        if self._weights is not None and key in self._weights:
            return self._weights[key]
        w = self.const(name)
        if spec.observer == "minmax" or (spec.observer == "mse" and mse_applies(spec)):
            qp = C.weight_qparams(w, spec) if spec.observer == "minmax" else mse_weight_qparams(w, spec)
            if self._weights is not None:
                self._weights[key] = qp
            return qp

        try:
            obs = make_observer(spec, axis=spec.axis, name=name)
            obs.update(w)
            return obs.qparams()
        except WorkbenchError as exc:
            self.issues.append(PlanIssue(node.name, "warning", f"weight {name!r}: observer {spec.observer} "
                                         f"failed ({exc.message}); MinMax used instead.", code=IssueCode.WEIGHT_OBSERVER))
            return C.weight_qparams(w, spec)

    def const(self, name: str) -> np.ndarray:
        x = tensor_array(self.consts[name]).astype(np.float32, copy=False)  # memory-mapped if kept on disk
        if not np.isfinite(x).all():  # no scale can hold NaN/Inf: refuse naming the weight (issue 16)
            raise RecipeError(f"weight {name!r} holds {count(int(np.size(x) - np.isfinite(x).sum()), 'NaN/Inf value')}; "
                              "it cannot be quantized.", hint="Fix the weight in the model, or keep its node "
                                                              "float with --exclude NODE.")
        return x

    def _dq_const(self, node, ui: UnitInput, x: np.ndarray, qp: QParams) -> onnx.NodeProto:
        qname, sname, zname = self._int_init(ui.tensor, x, qp)
        out = self.alloc.new(f"{ui.tensor}_dequantized")
        kw = {}
        if qp.axis is not None and np.ndim(qp.scale) > 0:
            kw["axis"] = int(qp.axis)
            if qp.block_size:
                kw["block_size"] = int(qp.block_size)
        if is_mx(qp.qtype):  # E8M0 scales: the output type must be given (else it is the scale's type)
            kw["output_dtype"] = onnx.TensorProto.FLOAT
        dq = helper.make_node("DequantizeLinear", [qname, sname] + ([zname] if zname else []), [out],
                              name=self.alloc.new(f"{ui.tensor}_DequantizeLinear"), **kw)
        node.input[ui.index] = out
        self.tensor_map.setdefault(ui.tensor, out)
        self.record_table(ui.tensor, [qname, sname, zname or ""], kw, node.name)
        return dq

    def record_table(self, name: str, inputs: list[str], attrs: dict, unit: str, transposed: bool = False) -> None:
        """Remember the first integer copy of main-graph weight ``name`` (DequantizeLinear inputs and
        attributes) so float nodes still reading it read the copy instead (tied embeddings)."""
        if self._graph_key == 0:
            self.table_copies.setdefault(name, TableCopy(list(inputs), dict(attrs), transposed, unit))

    def _int_init(self, base: str, x: np.ndarray, qp: QParams) -> tuple[str, str, str]:
        key = (self._graph_key, base, qp.qtype, qp.axis, qp.block_size, qp.scale.tobytes(), np.asarray(qp.zero_point).tobytes())
        if key not in self._int_cache and is_mx(qp.qtype):  # MX: element weights, E8M0 scales, no zero point
            self._int_cache[key] = mx_writer.add_initializers(self, base, x, qp)
        if key not in self._int_cache:
            names = (self.alloc.new(f"{base}_quantized"), self.alloc.new(f"{base}_scale"),
                     self.alloc.new(f"{base}_zero_point"))
            self.new_inits += [self._quantized(names[0], base, x, qp),
                               C.float_initializer(names[1], qp.scale),
                               C.quantized_initializer(names[2], np.asarray(qp.zero_point), qp.qt)]
            self._int_cache[key] = names
        return self._int_cache[key]

    def _quantized(self, name: str, base: str, x: np.ndarray, qp: QParams) -> onnx.TensorProto:
        """Initializer ``name`` holding ``x`` (weight ``base``) quantized on ``qp``, copied from the memo when an
        earlier write of the model quantized ``base`` on the same qparams (scale and zero point bytes and shapes)."""
        if self._weights is None:
            return C.quantized_initializer(name, quantize(x, qp), qp.qt)
        key = ("quantized", base, qp.qtype, qp.axis, qp.block_size, np.shape(qp.scale), np.asarray(qp.scale).tobytes(),
               np.asarray(qp.zero_point).tobytes())
        kept = self._weights.get(key)
        if kept is None:
            kept = self._weights[key] = C.quantized_initializer("", quantize(x, qp), qp.qt)
        out = onnx.TensorProto()
        out.CopyFrom(kept)
        out.name = name
        return out

    def _coarse_bias(self, unit: NodeUnit, b: np.ndarray, res) -> float | None:
        """Largest bias rounding error if it exceeds half the unit's output LSB, else None.

        Happens when the input scale is far too large for the data, e.g. the scale 1 given to an
        all-zero tensor (case 03): the int32 bias is then the whole output and must be exact.
        """
        return coarse_error(b, res, self._out_scale(unit))

    def _out_scale(self, unit: NodeUnit) -> float | None:
        """The scale of the unit's first output grid (None when it has none)."""
        out = self.pairs.get(unit.outputs[0]) if unit.outputs else None
        return None if out is None else float(out.qp.scale)

    def _fit_float_bias(self, node, wq: QParams) -> QParams:
        """Weight qparams under which a float bias still fits int32 when onnxruntime quantizes it.

        onnxruntime's ``BiasQuantization`` transformer (basic optimisation level) gives a Conv / Gemm
        whose input and weight are DequantizeLinear outputs and whose bias is a float 1-D initializer
        an int32 bias at ``input_scale * weight_scale``, by a cast that does not clip: with tiny weights
        and an O(1) bias (case 07 under float8) every output became the int32 minimum. The weight scale
        is raised as for a bias we quantize ourselves (:func:`quantize_bias`).
        """
        x = self.pairs.get(node.input[0]) if node.input else None
        if (node.op_type not in ("Conv", "Gemm") or len(node.input) < 3 or node.input[2] not in self.consts
                or x is None or np.size(x.qp.scale) != 1):
            return wq
        b = self.const(node.input[2])
        if b.ndim != 1:
            return wq
        res = quantize_bias(b, x.qp.scale, wq, node.op_type, self.const(node.input[1]),
                            int(attrs_of(node).get("group", 1)))
        if res is None or not res.raised:
            return wq
        self.issues.append(PlanIssue(node.name, "warning", f"float bias {node.input[2]!r} would overflow the "
                                     "int32 bias onnxruntime makes of it at load (scale input_scale * "
                                     f"weight_scale): the scale of weight {node.input[1]!r} was raised so it fits "
                                     f"({raised_scales(wq, res, node.op_type, _group(node))}); those channels' "
                                     "weights round more coarsely.", code=IssueCode.BIAS_OVERFLOW))
        return res.weight_qparams

    def _bias(self, node, unit: NodeUnit, bi: UnitInput, wq: QParams):
        x_name = self.pairs.get(node.input[0])
        if x_name is None:
            self.issues.append(PlanIssue(node.name, "info", "bias left in float: input is not quantized.", code=IssueCode.BIAS_FLOAT))
            return [], wq
        b = self.const(bi.tensor)
        w = self.const(node.input[1])
        res = quantize_bias(b, x_name.qp.scale, wq, node.op_type, w, int(attrs_of(node).get("group", 1)))
        if res is None:
            self.issues.append(PlanIssue(node.name, "warning", "bias left in float: the weight scale does "
                                         "not map onto output channels (per_block or custom axis).", code=IssueCode.BIAS_FLOAT))
            return [], wq
        coarse = self._coarse_bias(unit, b, res)
        if coarse is not None:
            self.issues.append(PlanIssue(node.name, "warning", f"bias {bi.tensor!r} kept in float: its int32 "
                                         f"scale (input_scale * weight_scale) would round it by up to "
                                         f"{coarse:.3g}, more than half the output LSB; {node.op_type} will "
                                         "not fuse into an integer kernel.", code=IssueCode.BIAS_FLOAT))
            return [], wq
        raise_text = raised_scales(wq, res, node.op_type, _group(node))
        if res.raised and all_dead(wq, res.raised, b.size, node.op_type, _group(node)):
            self.issues.append(PlanIssue(node.name, "info", f"weight {node.input[1]!r} is near zero on output "
                                         f"channels {res.raised[:16]} (at most {DEAD_CHANNEL:g} of the layer's "
                                         "largest: those channels output their bias alone), so their weight scale "
                                         f"was too small to hold bias {bi.tensor!r} in int32 (bias scale = input "
                                         "scale x weight scale); it was raised to the smallest scale that holds "
                                         f"the bias ({raise_text}). The bias is kept, not clipped.",
                                         code=IssueCode.BIAS_OVERFLOW))
        elif res.raised:
            self.issues.append(PlanIssue(node.name, "warning", f"int32 bias {bi.tensor!r} would overflow on "
                                         f"output channels {res.raised[:16]} (bias scale = input scale x weight "
                                         f"scale): the scale of weight {node.input[1]!r} was raised so the bias "
                                         f"fits ({raise_text}); those channels' weights round more coarsely.",
                                         code=IssueCode.BIAS_OVERFLOW))
        qname = self.alloc.new(f"{bi.tensor}_quantized")
        sname = self.alloc.new(f"{bi.tensor}_scale")
        zname = self.alloc.new(f"{bi.tensor}_zero_point")
        self.bias_slots.append(BiasSlot(node.name, bi.tensor, qname, np.asarray(x_name.qp.scale), wq, node.op_type,
                                        int(attrs_of(node).get("group", 1)), self._out_scale(unit), list(res.raised),
                                        raise_text, self._graph_key == 0, sname))
        self.new_inits += [C.quantized_initializer(qname, res.q, get_qtype("int32")),
                           C.float_initializer(sname, res.qparams.scale),
                           C.quantized_initializer(zname, res.qparams.zero_point, get_qtype("int32"))]
        out = self.alloc.new(f"{bi.tensor}_dequantized")
        kw = {"axis": 0} if res.qparams.scale.ndim == 1 else {}
        dq = helper.make_node("DequantizeLinear", [qname, sname, zname], [out],
                              name=self.alloc.new(f"{bi.tensor}_DequantizeLinear"), **kw)
        node.input[bi.index] = out
        return [dq], res.weight_qparams


def _group(node: onnx.NodeProto) -> int:
    """A Conv / ConvTranspose's ``group`` attribute (1 when absent)."""
    return int(attrs_of(node).get("group", 1))


from workbench.core.io.save import save_model  # noqa: E402,F401 - part of this module's interface
