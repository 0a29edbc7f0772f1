"""Inference cost per node: MACs, bit operations and weight memory, float vs quantized.

MACs (multiply-accumulates) of the compute ops, from the inferred shapes (bias additions are
not MACs and are not counted):

* ``Conv``:           ``numel(Y) * (C_in / group) * prod(kernel)`` with ``W`` of shape
  ``(C_out, C_in / group, k1, k2, ...)`` (ONNX Conv).
* ``ConvTranspose``:  ``numel(X) * (C_out / group) * prod(kernel)`` with ``W`` of shape
  ``(C_in, C_out / group, k1, ...)``: every input element is multiplied by one kernel slice.
* ``MatMul``:         ``numel(Y) * K``, ``K = A.shape[-1]`` (numpy matmul broadcasting, 1-D
  operands included).
* ``Gemm``:           ``M * N * K`` = ``numel(Y) * K``, ``K = A.shape[0 if transA else 1]``.
* ``LSTM`` / ``GRU`` / ``RNN``: ``num_directions * seq_length * batch * gates * hidden * (input_size + hidden)``,
  gates 4 / 3 / 1 (the products ``X_t W`` and ``H_{t-1} R`` of every step, :func:`_recurrent_macs`).
* the integer kernels of an already-quantized file (:data:`KERNEL_MAC_OPS`, inputs as the ONNX and onnxruntime
  contrib op definitions give them) like the float op they compute: ``ConvInteger``, ``QLinearConv`` as Conv,
  ``MatMulInteger``, ``MatMulIntegerToFloat``, ``QLinearMatMul``, ``DynamicQuantizeMatMul``, ``MatMulNBits``
  as MatMul, ``QGemm`` as Gemm, the float ``FusedMatMul`` of an onnxruntime-optimized file as MatMul (``K`` from
  ``A.shape[-2]`` with ``transA``; unknown with ``transBatchA`` / ``transBatchB``); ``DynamicQuantizeLSTM``
  as LSTM.
  Shape inference sees the contrib ops as standard stand-ins
  (:func:`workbench.core.graph.contrib_stand_ins.stand_in_contrib_ops`).

A node whose shapes stay unknown (a dynamic size neither the data nor ``input_shapes`` fixes) has ``macs``
None; the totals leave it out and :attr:`CostReport.unknown` names it.

Bit operations follow Baskin et al. 2018 ("UNIQ") and van Baalen et al. 2020 ("Bayesian Bits"):
``BOPs = MACs * b_activation * b_weight``; float32 counts as 32 x 32. A plan's bits (:func:`plan_bits`) are
those the file its writer writes reads each input at (the grid of each activation tensor), so a plan and the
file it writes count the same. ``bops_kernel`` counts the same at
the widths onnxruntime's CPU provider computes at (:func:`workbench.core.planning.kernels.unit_kernel_bits`:
integer kernels only for 8-bit integer Conv / MatMul / Gemm, MatMulNBits for integer MatMul weights
beside a float or 16-bit activation; a ConvTranspose, 16-bit activations or float8 run
DequantizeLinear and a float kernel, 32 x 32), the figure that tracks latency. Memory is the size of the
node's constant weights and bias in bits: float32 before quantization; ``weight bits`` for the
weight and 32 bits (int32) for the bias after.

Shapes: symbolic input dimensions take the shapes of the calibration data when given
(``input_shapes``, :func:`data_input_shapes`: one sample's feed), else ``batch`` (1). Shape inference
runs on a skeleton of the model (weights of more than :data:`FOLD_MAX_ELEMENTS` elements become typed
graph inputs, so a 90 MB model is not copied), with the shape arithmetic folded
(:func:`workbench.core.graph.static_shapes.fold_fixed_nodes`) and QONNX quantizers seen as Identity.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from workbench.core.data.loader import open_data_source
from workbench.core.errors import AlreadyQuantizedError, DataError, ModelError
from workbench.core.graph.index import attrs_of, iter_graphs
from workbench.core.graph.op_equivalents import EQUIVALENTS
from workbench.core.graph.quantized_ops import QONNX_DOMAINS
from workbench.core.graph.skeleton import shape_skeleton
from workbench.core.graph.static_shapes import fold_fixed_nodes, inline_fixed_ifs
from workbench.core.model.shapes import shared_dim_name
from workbench.core.planning.kernels import (
    float_reader_bits,
    readers,
    relu_after_bias,
    unit_bits,
    unit_kernel_bits,
)
from workbench.core.wording import count

log = logging.getLogger(__name__)

MAC_OPS = ("Conv", "ConvTranspose", "MatMul", "Gemm")
#: recurrent ops (ONNX LSTM / GRU / RNN, onnxruntime's DynamicQuantizeLSTM as LSTM) -> gates per step
RECURRENT_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
#: compute kernels of :data:`~workbench.core.graph.op_equivalents.EQUIVALENTS` cost does not count (yet): a
#: MatMulBnb4's packed weight would need its element count from the attributes, as MatMulNBits's has
_NOT_COUNTED = ("QLinearConvTranspose", "MatMulBnb4")
#: integer kernels of an already-quantized file, onnxruntime's FusedMatMul (their equivalents) and the recurrent
#: ops (ONNX: X, W, R, B) -> (the op they are counted as, activation, weight and bias input positions; None: no
#: such input)
KERNEL_MAC_OPS: dict[str, tuple[str, int, int, int | None]] = {
    **{name: (e.op, e.activation, e.weight, e.bias) for name, e in EQUIVALENTS.items()
       if (e.op in MAC_OPS or e.op in RECURRENT_GATES) and name not in _NOT_COUNTED},
    **{op: (op, 0, 1, 3) for op in RECURRENT_GATES},
}
FLOAT_BITS = 32
#: Fixed-value nodes (shape arithmetic) with outputs up to this many elements are folded before
#: shape inference; larger constant subgraphs (weights) are left as they are.
FOLD_MAX_ELEMENTS = 1024
#: Integer inputs of at most this many elements given in ``input_values`` count at their values
#: (a sample rate that selects an If branch); larger ones (token ids) only by their shapes.
FIXED_INPUT_ELEMENTS = 16
#: Rounds of folding and inlining Ifs with a fixed condition.
INLINE_ROUNDS = 4
#: ``metadata_props`` key every model ``workbench-cli quantize`` writes carries
#: (:func:`workbench.core.writers.common.stamp_metadata`)
WRITTEN_KEY = "workbench.recipe"


@dataclass
class NodeCost:
    """Cost of one compute node. ``macs`` is None when a shape could not be inferred."""

    node: str
    op_type: str
    macs: int | None
    weight_params: int
    bias_params: int
    weight_bits: int = FLOAT_BITS
    activation_bits: int = FLOAT_BITS
    note: str = ""
    #: (weight, activation) bits at which onnxruntime's CPU provider computes the node (:func:`plan_kernel_bits`)
    kernel_weight_bits: int = FLOAT_BITS
    kernel_activation_bits: int = FLOAT_BITS

    @property
    def bops_float(self) -> int | None:
        return None if self.macs is None else self.macs * FLOAT_BITS * FLOAT_BITS

    @property
    def bops(self) -> int | None:
        """Bit operations with this node's (weight, activation) bits."""
        return None if self.macs is None else self.macs * self.weight_bits * self.activation_bits

    @property
    def bops_kernel(self) -> int | None:
        """Bit operations at the precision onnxruntime computes the node (float kernels: 32 x 32)."""
        return None if self.macs is None else self.macs * self.kernel_weight_bits * self.kernel_activation_bits

    @property
    def memory_float_bits(self) -> int:
        return (self.weight_params + self.bias_params) * FLOAT_BITS

    @property
    def memory_bits(self) -> int:
        """Weight memory after quantization: weights at ``weight_bits``, bias at 32 (int32 or float)."""
        return self.weight_params * self.weight_bits + self.bias_params * FLOAT_BITS


@dataclass
class CostReport:
    """Per-node rows and totals (nodes with unknown shapes are left out of the MAC totals: :attr:`unknown`)."""

    rows: list[NodeCost] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def unknown(self) -> list[str]:
        """Names of the nodes whose MACs are unknown (left out of every BOPs and MACs total), graph order."""
        return [r.node for r in self.rows if r.macs is None]

    def _sum(self, attr: str) -> int:
        return sum(getattr(r, attr) or 0 for r in self.rows)

    @property
    def macs(self) -> int:
        return self._sum("macs")

    @property
    def bops_float(self) -> int:
        return self._sum("bops_float")

    @property
    def bops(self) -> int:
        return self._sum("bops")

    @property
    def bops_kernel(self) -> int:
        return self._sum("bops_kernel")

    @property
    def memory_float_bits(self) -> int:
        return self._sum("memory_float_bits")

    @property
    def memory_bits(self) -> int:
        return self._sum("memory_bits")

    def to_json(self) -> dict:
        return {
            "rows": [{"node": r.node, "op_type": r.op_type, "macs": r.macs, "weight_params": r.weight_params,
                      "bias_params": r.bias_params, "weight_bits": r.weight_bits,
                      "activation_bits": r.activation_bits, "bops": r.bops, "bops_float": r.bops_float,
                      "kernel_bits": [r.kernel_weight_bits, r.kernel_activation_bits], "bops_kernel": r.bops_kernel,
                      "memory_bits": r.memory_bits, "memory_float_bits": r.memory_float_bits,
                      "note": r.note} for r in self.rows],
            "totals": {"macs": self.macs, "bops": self.bops, "bops_float": self.bops_float,
                       "bops_kernel": self.bops_kernel,
                       "memory_bits": self.memory_bits, "memory_float_bits": self.memory_float_bits,
                       "macs_unknown": self.unknown},
            "notes": list(self.notes),
        }


def model_cost(proto: onnx.ModelProto, bits: dict[str, tuple[int, int]] | None = None, *,
               kernel: dict[str, tuple[int, int]] | None = None,
               batch: int = 1, input_shapes: dict[str, list[int]] | None = None,
               input_values: dict[str, np.ndarray] | None = None) -> CostReport:
    """Cost of every Conv / ConvTranspose / MatMul / Gemm node of ``proto`` and every integer kernel of
    :data:`KERNEL_MAC_OPS` (MACs None where a shape stays unknown: :attr:`CostReport.unknown`).

    Parameters
    ----------
    proto : onnx.ModelProto
        The float model (not modified; a copy gets the batch size and inferred shapes).
    bits : dict node name -> (weight bits, activation bits), optional
        Quantized widths per node; nodes not listed stay float32 (32, 32).
    kernel : dict node name -> (weight bits, activation bits), optional
        Widths onnxruntime computes each node at (:func:`plan_kernel_bits`); default ``bits``.
    batch : int
        Value for symbolic input dimensions (batch, sequence length ...) of inputs not in
        ``input_shapes``, default 1.
    input_shapes : dict input name -> dims, optional
        Shapes to count at, e.g. one calibration sample's (:func:`data_input_shapes`); static
        dimensions of the model must agree.
    input_values : dict input name -> array, optional
        One sample's feed (:func:`data_sample`): its shapes are used as ``input_shapes``, and its
        integer inputs of at most :data:`FIXED_INPUT_ELEMENTS` elements count at their values, so
        an ``If`` they decide is replaced by the branch taken (the other branch's nodes are not
        counted; a note says so).

    Returns
    -------
    CostReport
        Rows in graph order (subgraph nodes included), totals as properties.

    Raises
    ------
    ModelError
        If shape inference fails outright, or ``input_shapes`` disagrees with a static dimension.
    """
    bits = bits or {}
    values = dict(input_values or {})
    shapes_given = {**(input_shapes or {}), **{k: list(np.shape(v)) for k, v in values.items()}}
    sources = {k: "--input-shape" if k not in values else "the data" for k in shapes_given}
    work = shape_skeleton(proto, FOLD_MAX_ELEMENTS)
    notes = _fix_symbolic_dims(work, batch, shapes_given, sources)
    _fix_input_values(work, values)
    try:  # shape arithmetic folded first: data propagation alone leaves e.g. attention MatMuls unknown
        for _ in range(INLINE_ROUNDS):
            _, inferred = fold_fixed_nodes(work, max_elements=FOLD_MAX_ELEMENTS, opaque_domains=QONNX_DOMAINS,
                                           contrib=True)
            inlined = inline_fixed_ifs(work)
            notes += inlined
            if not inlined:
                break
        else:
            _, inferred = fold_fixed_nodes(work, max_elements=FOLD_MAX_ELEMENTS, opaque_domains=QONNX_DOMAINS,
                                           contrib=True)
    except Exception as exc:  # onnx raises several types (InferenceError, ValueError) here
        raise ModelError(f"{proto.graph.name or 'model'}: shape inference failed ({exc}).",
                         hint="Check the model with onnx.checker, or export it with static shapes.") from None
    shapes, consts = _shapes_and_consts(inferred)
    big = _big_initializers(proto)
    consts.update(big)
    shapes.update(big)
    # nodes as the file has them (the inferred copy holds standard stand-ins for contrib ops), shapes inferred
    rows = [_node_cost(node, shapes, consts) for graph in iter_graphs(work.graph) for node in graph.node
            if node.op_type in MAC_OPS or node.op_type in KERNEL_MAC_OPS]
    return CostReport(rows=with_bits(rows, bits, kernel), notes=notes)


def with_bits(rows: list[NodeCost], bits: dict[str, tuple[int, int]],
              kernel: dict[str, tuple[int, int]] | None = None) -> list[NodeCost]:
    """Copies of ``rows`` with their (weight, activation) widths from ``bits`` and the widths
    onnxruntime computes them at from ``kernel`` (default ``bits``); nodes not listed are float32."""
    kernel = bits if kernel is None else kernel
    out = []
    for r in rows:
        w, a = bits.get(r.node, (FLOAT_BITS, FLOAT_BITS))
        kw, ka = kernel.get(r.node, (FLOAT_BITS, FLOAT_BITS))
        out.append(replace(r, weight_bits=w, activation_bits=a, kernel_weight_bits=kw, kernel_activation_bits=ka))
    return out


def plan_bits(plan, graph: onnx.GraphProto | None = None) -> dict[str, tuple[int, int]]:
    """``{node: (weight bits, activation bits)}`` of a :class:`~workbench.core.planning.plan.QuantPlan` as the
    file its writer writes reads them; nodes not listed count as float32.

    A static plan counts each input of a non-excluded unit on the grid the QDQ writer writes for it
    (:func:`workbench.core.planning.kernels.unit_bits`), as ``cost`` of the written file reads it: an int16
    unit reading a tensor an 8-bit unit writes reads it at 8 bits, the second input of a MatMul of two
    activations counts at its grid's bits, not the unit's weight setting. With ``graph`` (the float model's
    main graph), a Conv / ConvTranspose / MatMul / Gemm kept float that reads a tensor with a Q/DQ pair counts
    that input at its grid's bits too (:func:`workbench.core.planning.kernels.float_reader_bits`: the file
    dequantizes it for every reader). Dynamic and weight-only plans (activations quantized at run time or
    not at all) count each non-excluded unit's own settings."""
    units = [u for u in plan.units.values() if not u.excluded]
    if str(plan.mode) != "static":
        return bits_from_configs({u.node: u.config for u in units})
    out = {u.node: unit_bits(plan, u) for u in units}
    for node in graph.node if graph is not None else ():
        if node.op_type in MAC_OPS and node.name not in out:
            read = float_reader_bits(plan, node)
            if read is not None:
                out[node.name] = read
    return out


def plan_kernel_bits(plan, graph: onnx.GraphProto | None = None) -> dict[str, tuple[int, int]]:
    """``{node: (weight bits, activation bits)}`` at which onnxruntime computes the planned,
    non-excluded units (:func:`workbench.core.planning.kernels.unit_kernel_bits`), with the pairs the
    writer gives each unit's inputs and outputs; ``graph`` (the float model's main graph) adds what
    depends on the neighbours: a signed int8 pair read by several nodes, a bias and Relu after a
    weight-only MatMul (without it those count as fusable)."""
    count = readers(graph) if graph is not None else {}
    relu = relu_after_bias(graph) if graph is not None else set()
    return {u.node: unit_kernel_bits(plan, u, count, relu) for u in plan.units.values() if not u.excluded}


def plan_cost(model, plan, data: Any = None, *, batch: int = 1,
              input_shapes: dict[str, list[int]] | None = None) -> CostReport:
    """:func:`model_cost` of ``model`` (a PreparedModel) with the bit widths of ``plan``, at the
    shapes of one sample of ``data`` (calibration data; any spec ``open_data`` takes) when given;
    ``input_shapes`` (input name -> dims, e.g. ``--input-shape``) win over the data's for their inputs.

    Raises AlreadyQuantizedError (``model`` already has quantized nodes: its BOPs under a recipe
    mean nothing), DataError (the data does not fit the model), ModelError (an ``input_shapes`` name
    that is not an input of the model, or dims that do not fit it) and what :func:`model_cost` raises."""
    graph = model.proto.graph
    return cost_at(model, plan_bits(plan, graph), plan_kernel_bits(plan, graph), data, batch, input_shapes)


def written_float(model) -> str | None:
    """Why ``model`` (a PreparedModel) computes in float although ``workbench-cli quantize`` wrote it
    (its ``metadata_props`` hold :data:`WRITTEN_KEY`, and it has no quantized node: the latency check or the
    recipe kept every unit float), as a sentence; None for any other model."""
    if getattr(model, "quantized", None) or not any(p.key == WRITTEN_KEY for p in model.proto.metadata_props):
        return None
    return (f"{model.name} was written by workbench-cli quantize with no unit quantized (the latency check or the "
            "recipe kept every unit float), so onnxruntime runs every node of it in float")


def file_cost(model, data: Any = None, *, batch: int = 1,
              input_shapes: dict[str, list[int]] | None = None) -> CostReport:
    """:func:`plan_cost` of ``model`` as the file is: every node counted float32 (32 x 32 bits, weights
    and bias at 32 bits), for a float file such as one :func:`written_float` describes. Same shapes,
    arguments and errors as :func:`plan_cost`."""
    return cost_at(model, {}, {}, data, batch, input_shapes)


def cost_at(model, bits: dict[str, tuple[int, int]], kernel: dict[str, tuple[int, int]], data: Any, batch: int,
            input_shapes: dict[str, list[int]] | None, *, as_written: bool = False) -> CostReport:
    """:func:`model_cost` of a float PreparedModel with ``bits`` / ``kernel`` at the shapes of ``data``'s
    first sample, ``input_shapes`` winning; errors as :func:`plan_cost` (``as_written``: a quantized model is
    counted with the widths given, not refused)."""
    if getattr(model, "quantized", None) and not as_written:
        kinds = sorted({q.op_type for q in model.quantized})
        raise AlreadyQuantizedError(
            f"{model.name} is already quantized: {count(len(model.quantized), 'quantized node')} ({', '.join(kinds)}); "
            "cost counts the BOPs and weight memory of a float model under a recipe.",
            hint=f"Run cost on the float model, or `workbench-cli inspect {model.path or model.name}` to see how "
                 "this one is quantized.")
    given = dict(input_shapes or {})
    weights = {t.name for t in model.proto.graph.initializer}
    inputs = [i.name for i in model.proto.graph.input if i.name not in weights]
    unknown = [name for name in given if name not in inputs]
    if unknown:
        raise ModelError(f"--input-shape {unknown[0]}: {model.name} has no input of that name "
                         f"(its inputs: {', '.join(inputs) or 'none'}).",
                         hint="Give NAME:DIMS with one of the model's input names.")
    sample = data_sample(model, data) if data is not None else {}
    sample = {k: v for k, v in sample.items() if k not in given}
    return model_cost(model.proto, bits, kernel=kernel, batch=batch, input_shapes=given, input_values=sample)


def unknown_dims(proto: onnx.ModelProto, input_shapes: dict[str, list[int]] | None = None) -> dict[str, list[str]]:
    """Input name -> the names (``?`` when unnamed) of its dimensions after the first that the model leaves
    unknown and ``input_shapes`` does not fix, neither for that input nor through a dimension name it shares
    with a given input. :func:`plan_cost` without data would count those at ``batch`` (1: a 1 x 1 image);
    the first dimension is taken as the batch. Inputs that are initializers are left out."""
    given = dict(input_shapes or {})
    weights = {t.name for t in proto.graph.initializer}
    fixed = {d.dim_param for vi in proto.graph.input if vi.name in given and vi.type.HasField("tensor_type")
             for d in vi.type.tensor_type.shape.dim if shared_dim_name(d.dim_param)}
    found: dict[str, list[str]] = {}
    for vi in proto.graph.input:
        if vi.name in given or vi.name in weights or not vi.type.HasField("tensor_type"):
            continue
        labels = [d.dim_param or "?" for d in list(vi.type.tensor_type.shape.dim)[1:]
                  if (not d.HasField("dim_value") or d.dim_value <= 0)
                  and not (shared_dim_name(d.dim_param) and d.dim_param in fixed)]
        if labels:
            found[vi.name] = labels
    return found


def data_input_shapes(model, data: Any) -> dict[str, list[int]]:
    """Input name -> dims of the first sample of ``data`` (see :func:`data_sample`)."""
    return {name: [int(d) for d in np.shape(value)] for name, value in data_sample(model, data).items()}


def data_sample(model, data: Any) -> dict[str, np.ndarray]:
    """The first sample of ``data`` as the model is fed it: input name -> array (batch axis 1 for
    batch-layout data, the whole row for stacked data).

    Raises
    ------
    DataError
        The data cannot be read, does not match the model, or has no sample.
    """
    source = open_data_source(data, model)
    feed = next(iter(source.samples(1)), None)
    if feed is None:
        raise DataError(f"{source.describe()}: no sample to take the input shapes from.",
                        hint="Choose calibration data with at least one sample.")
    return {name: np.asarray(value) for name, value in feed.items()}


def _fix_input_values(proto: onnx.ModelProto, values: dict[str, np.ndarray]) -> None:
    """Small integer inputs with a value in ``values`` become initializers of that value."""
    fixed = {k: v for k, v in values.items()
             if np.issubdtype(np.asarray(v).dtype, np.integer) and np.size(v) <= FIXED_INPUT_ELEMENTS}
    if not fixed:
        return
    kept = [vi for vi in proto.graph.input if vi.name not in fixed]
    names = {vi.name for vi in proto.graph.input} - {vi.name for vi in kept}
    del proto.graph.input[:]
    proto.graph.input.extend(kept)
    proto.graph.initializer.extend(numpy_helper.from_array(np.asarray(fixed[n]), n) for n in sorted(names))


def bits_from_configs(configs: dict) -> dict[str, tuple[int, int]]:
    """``{node: (weight bits, activation bits)}`` from ``{node: NodeConfig}`` (None role -> 32)."""
    out = {}
    for name, cfg in configs.items():
        w = cfg.weight.qtype.bits if cfg.weight is not None else FLOAT_BITS
        a = cfg.activation.qtype.bits if cfg.activation is not None else FLOAT_BITS
        out[name] = (w, a)
    return out


def _big_initializers(proto: onnx.ModelProto) -> dict[str, list[int]]:
    """Dims of the main graph's initializers of more than :data:`FOLD_MAX_ELEMENTS` elements."""
    return {i.name: list(i.dims) for i in proto.graph.initializer if math.prod(i.dims) > FOLD_MAX_ELEMENTS}


def _fix_symbolic_dims(proto: onnx.ModelProto, batch: int, given: dict[str, list[int]],
                       sources: dict[str, str]) -> list[str]:
    notes = []
    named = _named_dims(proto, given, sources)  # a dimension name the given shapes fix, for every input
    for vi in proto.graph.input:
        if not vi.type.HasField("tensor_type"):
            continue
        if vi.name in given:
            notes += _set_input_shape(vi, given[vi.name], sources.get(vi.name, "the data"))
            continue
        for k, d in enumerate(vi.type.tensor_type.shape.dim):
            if not d.HasField("dim_value") or d.dim_value < 0:  # -1: dynamic in some exporters
                label = d.dim_param or "?"
                value, source = named.get(d.dim_param, (batch, None)) if shared_dim_name(d.dim_param) \
                    else (batch, None)
                d.Clear()
                d.dim_value = value
                if source is not None:
                    notes.append(f"input {vi.name!r}: dimension {label} set to {value} (as in {source})")
                    continue
                notes.append(f"input {vi.name!r}: dimension {label} set to {batch}" + (
                    "" if k == 0 else f" (not a batch axis: give --data or --input-shape {vi.name}:DIMS "
                                      "to count at a real size)"))
    return notes


def _named_dims(proto: onnx.ModelProto, given: dict[str, list[int]],
                sources: dict[str, str]) -> dict[str, tuple[int, str]]:
    """Symbolic dimension name -> (value, "input NAME") fixed by the shapes in ``given``.

    Raises
    ------
    ModelError
        Two given shapes put different values on one dimension name (``sequence`` 128 and 64): the
        model could not run them together.
    """
    named: dict[str, tuple[int, str]] = {}
    for vi in proto.graph.input:
        dims = given.get(vi.name)
        if dims is None or not vi.type.HasField("tensor_type"):
            continue
        for d, v in zip(vi.type.tensor_type.shape.dim, dims, strict=False):
            if not shared_dim_name(d.dim_param):  # "?", "": an unknown of its own, not a shared name
                continue
            seen = named.setdefault(d.dim_param, (int(v), f"input {vi.name!r}"))
            if seen[0] != int(v):
                raise ModelError(f"input {vi.name!r}: dimension '{d.dim_param}' is {v} in the shape of "
                                 f"{sources.get(vi.name, 'the data')} but {seen[0]} in {seen[1]}; the model names "
                                 "both the same, so they must agree.",
                                 hint="Give every input the same value for that dimension.")
    return named


def _refuse_unfit(vi: onnx.ValueInfoProto, model_dims: list[int | None], dims: list[int], source: str) -> None:
    """Raise ModelError when ``dims`` (the shape ``source`` gives input ``vi``) has another rank than the model's
    ``model_dims`` (None: symbolic) or another value on a fixed dimension; the message names which, e.g. "input
    'images': the shape 1x3x384 of --input-shape has 3 dimensions; the model's input has 4 (batch x 3 x height x
    width)"."""
    named = [d.dim_param or "?" for d in vi.type.tensor_type.shape.dim]
    model = " x ".join(n if m is None else str(m) for n, m in zip(named, model_dims, strict=True))
    shape = "x".join(str(v) for v in dims)
    hint = "Count the cost at shapes the model accepts: other data, or --input-shape NAME:DIMS with the model's " \
           "fixed dims as they are."
    if len(model_dims) != len(dims):
        raise ModelError(f"input {vi.name!r}: the shape {shape} of {source} has {len(dims)} dimensions; the model's "
                         f"input has {len(model_dims)} ({model}).", hint=hint)
    for k, (m, v) in enumerate(zip(model_dims, dims, strict=True)):
        if m is not None and m != v:
            raise ModelError(f"input {vi.name!r}: dimension {k} of the shape {shape} of {source} is {v}; the model "
                             f"fixes it to {m} ({model}).", hint=hint)


def _set_input_shape(vi: onnx.ValueInfoProto, dims: list[int], source: str = "the data") -> list[str]:
    """Give input ``vi`` the shape ``dims`` (rank and static dims must agree; ``source`` names where
    the shape came from in messages); a note when it had symbolic dims."""
    t = vi.type.tensor_type
    if t.HasField("shape"):
        model_dims = [d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else None for d in t.shape.dim]
        _refuse_unfit(vi, model_dims, dims, source)
        symbolic = None in model_dims
    else:
        symbolic = True
    t.ClearField("shape")
    for v in dims:
        t.shape.dim.add().dim_value = int(v)
    return [f"input {vi.name!r}: shape {'x'.join(str(v) for v in dims)} from {source}"] if symbolic else []


def _shapes_and_consts(proto: onnx.ModelProto) -> tuple[dict[str, list[int | None]], dict[str, list[int]]]:
    shapes: dict[str, list[int | None]] = {}
    consts: dict[str, list[int]] = {}
    for g in iter_graphs(proto.graph):
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            t = vi.type.tensor_type
            if vi.type.HasField("tensor_type") and t.HasField("shape"):
                shapes[vi.name] = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        for init in g.initializer:
            consts[init.name] = list(init.dims)
            shapes[init.name] = list(init.dims)
        for node in g.node:
            if node.op_type == "Constant" and node.output:
                for a in node.attribute:
                    if a.name == "value":
                        consts[node.output[0]] = list(a.t.dims)
                        shapes[node.output[0]] = list(a.t.dims)
    return shapes, consts


def _numel(shape: list[int | None] | None) -> int | None:
    if shape is None or any(d is None or d < 0 for d in shape):  # negative: inference on too small a size
        return None
    return math.prod(shape)


def _node_cost(node: onnx.NodeProto, shapes: dict, consts: dict) -> NodeCost:
    op, ai, wi, bi = KERNEL_MAC_OPS.get(node.op_type, (node.op_type, 0, 1, 2))
    ins = list(node.input) + [""] * 9
    weight_name = ins[wi] if ins[wi] in consts else (ins[ai] if op in ("MatMul", "Gemm") and ins[ai] in consts else "")
    bias_name = ins[bi] if bi is not None and (op in ("Conv", "ConvTranspose", "Gemm") or op in RECURRENT_GATES) \
        and ins[bi] in consts else ""
    w_params = (_numel(consts.get(weight_name)) or 0) if weight_name else 0
    b_params = (_numel(consts.get(bias_name)) or 0) if bias_name else 0
    if op in RECURRENT_GATES:  # W and R (and B) by their shapes: an exporter may compute them (gate order)
        w_params, b_params = (sum(_numel(consts.get(n, shapes.get(n))) or 0 for n in ins[1:3] if n),
                              (_numel(consts.get(ins[3], shapes.get(ins[3]))) or 0) if ins[3] else 0)
    if node.op_type == "MatMulNBits":  # the weight is packed K x N: its element count is in the attributes
        a = attrs_of(node)
        w_params = int(a.get("K", 0)) * int(a.get("N", 0))
    macs = _macs(node, shapes)
    note = "" if macs is not None else "shape unknown"
    return NodeCost(node.name, node.op_type, macs, w_params, b_params, note=note)


def _macs(node: onnx.NodeProto, shapes: dict) -> int | None:
    op, ai, wi, _ = KERNEL_MAC_OPS.get(node.op_type, (node.op_type, 0, 1, None))
    a = shapes.get(node.input[ai]) if len(node.input) > ai else None
    w = shapes.get(node.input[wi]) if len(node.input) > wi else None
    y = shapes.get(node.output[0])
    if node.op_type == "MatMulNBits":  # K from the attributes: the packed weight's shape is not K x N
        n_out = _numel(y)
        k = int(attrs_of(node).get("K", 0))
        return None if n_out is None or not k else n_out * k
    if op == "Conv":
        n_out = _numel(y)
        return None if n_out is None or w is None or None in w else n_out * math.prod(w[1:])
    if op == "ConvTranspose":
        n_in = _numel(a)
        return None if n_in is None or w is None or None in w else n_in * math.prod(w[1:])
    if op == "MatMul":
        n_out, k = _numel(y), _matmul_k(node, a)
        return None if n_out is None or k is None else n_out * k
    if op == "Gemm":
        n_out = _numel(y)
        if n_out is None or not a or len(a) != 2:
            return None
        k = a[0] if attrs_of(node).get("transA", 0) else a[1]
        return None if k is None else n_out * k
    if op in RECURRENT_GATES:
        return _recurrent_macs(node, op, a, shapes.get(node.input[2]) if len(node.input) > 2 else None)
    return None


def _matmul_k(node: onnx.NodeProto, a: list[int | None] | None) -> int | None:
    """The summed dimension K of a MatMul-like node with input A of shape ``a``: ``a[-1]``, or ``a[-2]`` for a
    ``FusedMatMul`` with ``transA`` (onnxruntime's contrib op: ``alpha * op(A) op(B)``); None when unknown or
    when ``transBatchA`` / ``transBatchB`` move the batch axes."""
    if not a:
        return None
    if node.op_type != "FusedMatMul":
        return a[-1]
    fa = attrs_of(node)
    if fa.get("transBatchA", 0) or fa.get("transBatchB", 0) or len(a) < 2:
        return None
    return a[-2] if fa.get("transA", 0) else a[-1]


def _recurrent_macs(node: onnx.NodeProto, op: str, x: list[int | None] | None,
                    r: list[int | None] | None) -> int | None:
    """MACs of an ONNX ``LSTM`` / ``GRU`` / ``RNN`` or an onnxruntime ``DynamicQuantizeLSTM`` (``op``: the
    standard op it computes) with input ``X`` of shape ``[seq_length, batch, input_size]`` (``[batch, seq_length,
    input_size]`` with the standard ops' ``layout`` 1; ONNX operator and onnxruntime contrib op definitions): per
    direction, step and batch row each gate's two products ``X_t W`` (``input_size x hidden``) and ``H_{t-1} R``
    (``hidden x hidden``), so ``num_directions * seq_length * batch * gates * hidden * (input_size + hidden)``,
    gates 4 / 3 / 1 (:data:`RECURRENT_GATES`). Peephole, bias and reset-gate terms are elementwise, not counted.
    ``hidden``: the ``hidden_size`` attribute, else a standard op's R (``[num_directions, gates * hidden,
    hidden]``). None when a dimension of ``X`` or the hidden size is unknown."""
    a = attrs_of(node)
    hidden = int(a.get("hidden_size", 0)) or (r[-1] if node.domain in ("", "ai.onnx") and r and r[-1] else 0)
    if not hidden or _numel(x) is None or len(x) != 3:
        return None
    direction = a.get("direction", b"forward")
    directions = 2 if (direction.decode() if isinstance(direction, bytes) else direction) == "bidirectional" else 1
    seq, batch, size = (x[1], x[0], x[2]) if a.get("layout", 0) else x
    return directions * seq * batch * RECURRENT_GATES[op] * hidden * (size + hidden)
