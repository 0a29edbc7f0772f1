"""Which kernel onnxruntime's CPU provider runs for a quantized compute node.

onnxruntime (1.32, default graph optimizations) rewrites a QDQ unit into an integer kernel only for
some element types; everything else runs as written, DequantizeLinear then a float kernel. Measured
on this version's optimized graphs (``SessionOptions.optimized_model_filepath``; the tests rebuild
each case):

* Conv, MatMul and Gemm whose activation and weight (or second activation) are 8-bit integers:
  QLinearConv, QLinearMatMul / MatMulIntegerToFloat, QGemm (DynamicQuantizeMatMul / ConvInteger for
  dynamic recipes). ConvTranspose is not fused (it stays DequantizeLinear + float ConvTranspose).
* MatMul whose constant weight is a 4- or 8-bit integer per tensor, per output channel (axis 1) or in
  blocks along axis 0, and whose activation is float or a 16-bit integer: the weight's
  DequantizeLinear and the MatMul become MatMulNBits. At onnxruntime's default accuracy level 4
  (session option ``session.qdq_matmulnbits_accuracy_level``) that kernel quantizes the activation to
  int8 per block, so a 16-bit activation is computed at 8 bits there.
* 16-bit activations, float8 and MX formats: DequantizeLinear + float kernel.

Signed int8 activations (the s8s8 preset): onnxruntime on x86 turns an int8 Q/DQ pair uint8 (its
QDQS8ToU8Transformer) only when the QuantizeLinear's one output edge is the DequantizeLinear and one node
reads that; a unit with a shared int8 pair stays float. Not modelled before a model is written: a signed
pair that reaches the unit through a Transpose (digits_transformer's attention input MatMuls: counted
integer, run float); the marks of a written file (:mod:`workbench.core.inspection.quant_summary`) see it.
"""

from __future__ import annotations

import onnx

from workbench.core.formats.qtypes import QType
from workbench.core.graph.quantized_ops import (  # noqa: F401  (defined with the formats of quantized files)
    NBITS_INT8_LEVEL,
    nbits_runs_int8,
)

#: ops with integer kernels for 8-bit integer inputs
INTEGER_KERNEL_OPS = ("Conv", "MatMul", "Gemm")
#: onnxruntime's default accuracy level for MatMulNBits fused from DequantizeLinear + MatMul
ORT_ACCURACY_LEVEL = 4
#: the session option that changes it
ACCURACY_OPTION = "session.qdq_matmulnbits_accuracy_level"
FLOAT_BITS = 32


def is_int8(qtype: QType | None) -> bool:
    """An 8-bit integer element type (int8 / uint8): what onnxruntime's integer kernels take."""
    return qtype is not None and qtype.bits == 8 and not qtype.is_float and not qtype.qonnx_only


def integer_kernel(op_type: str, weight: QType | None, activation: QType | None) -> bool:
    """Whether onnxruntime runs the node on an integer kernel: ``op_type`` in :data:`INTEGER_KERNEL_OPS`
    with an 8-bit integer activation and an 8-bit integer weight (``weight`` None: a MatMul of two
    activations, both at ``activation``)."""
    return op_type in INTEGER_KERNEL_OPS and is_int8(activation) and (weight is None or is_int8(weight))


def nbits_layout(granularity: str, axis: int | None, block_size: int | None) -> bool:
    """A weight layout MatMulNBits takes: per tensor, per output channel of a 2-D weight (axis 1), or
    power-of-two blocks of at least 16 along axis 0."""
    if granularity == "per_tensor":
        return True
    if granularity == "per_channel":
        return axis == 1
    bs = block_size or 0
    return granularity == "per_block" and axis in (0, None) and bs >= 16 and not bs & (bs - 1)


def nbits_kernel(op_type: str, weight: QType | None, activation: QType | None, layout_ok: bool) -> bool:
    """Whether onnxruntime fuses the weight's DequantizeLinear and the MatMul into MatMulNBits: a
    MatMul with a 4- or 8-bit integer constant weight in a layout :func:`nbits_layout` accepts, whose
    activation is float or a 16-bit integer (8-bit takes the integer kernel; a 4-bit activation pair
    keeps the MatMul float)."""
    wide = activation is None or (activation.bits == 16 and not activation.is_float)
    return (op_type == "MatMul" and weight is not None and not weight.is_float and not weight.qonnx_only
            and weight.bits in (4, 8) and layout_ok and wide)


def kernel_kind(op_type: str, weight, activation, output=None) -> str:
    """The kernel onnxruntime runs for a node of ``op_type`` whose weight and activation are quantized
    as ``weight`` / ``activation`` (QuantSpec with the weight's axis resolved; None for float) and whose
    output pair is ``output`` (QuantSpec; None: a float output): ``"integer"``, ``"nbits"``
    (MatMulNBits) or ``"float"`` (DequantizeLinear + float kernel). A 16-bit output pair keeps an
    8-bit unit off its integer kernel; an 8-bit one keeps a MatMul from MatMulNBits."""
    wq = weight.qtype if weight is not None else None
    aq = activation.qtype if activation is not None else None
    oq = output.qtype if output is not None else None
    if integer_kernel(op_type, wq, aq):
        return "integer" if oq is None or is_int8(oq) else "float"
    if weight is None or (oq is not None and oq.bits == 8):
        return "float"
    axis = weight.axis
    if op_type == "Gemm" and aq is None and wq.bits == 4:
        op_type, axis = "MatMul", 0  # the weight-only writer writes it as MatMul (+ Add), blocks on axis 0
    layout = nbits_layout(weight.granularity, axis, weight.block_size)
    return "nbits" if nbits_kernel(op_type, wq, aq, layout) else "float"


def output_pair(plan, unit):
    """The QuantSpec of ``unit``'s output pair in ``plan`` (the widest when it has several outputs), None
    when its outputs stay float (a MatMul / Gemm whose reader is float writes float)."""
    specs = [plan.activations[t] for t in unit.outputs if t in plan.activations]  # float_outputs have no pair
    return max(specs, key=lambda s: s.qtype.bits, default=None)


def relu_after_bias(graph: onnx.GraphProto) -> set[str]:
    """MatMul / Gemm nodes of ``graph`` whose output, after a constant bias (a Gemm's own ``C`` or an Add
    of an initializer), is read only by a Relu: onnxruntime fuses those into FusedGemm (float)."""
    consts = {i.name for i in graph.initializer}
    users: dict[str, list[onnx.NodeProto]] = {}
    for n in graph.node:
        for i in n.input:
            users.setdefault(i, []).append(n)

    def only(tensor: str) -> onnx.NodeProto | None:
        found = users.get(tensor, [])
        return found[0] if len(found) == 1 else None

    out = set()
    for n in graph.node:
        if n.op_type == "Gemm" and len(n.input) > 2 and n.input[2]:
            after = only(n.output[0])
        elif n.op_type in ("MatMul", "Gemm"):
            add = only(n.output[0])
            after = only(add.output[0]) if add is not None and add.op_type == "Add" and consts & set(add.input) else None
        else:
            continue
        if after is not None and after.op_type == "Relu":
            out.add(n.name)
    return out


def readers(graph: onnx.GraphProto) -> dict[str, int]:
    """Tensor name -> number of nodes of ``graph`` (main graph) that read it."""
    out: dict[str, int] = {}
    for n in graph.node:
        for i in set(n.input):
            if i:
                out[i] = out.get(i, 0) + 1
    return out


def input_specs(plan, unit) -> dict[int, object]:
    """Node input position -> the QuantSpec ``unit``'s node reads that input on in the file the QDQ writer
    writes: an activation's is the grid the writer gives its tensor (:meth:`QuantPlan.grid_spec`: where the
    tensor's producer and a reader ask for different dtypes, the producer's; an aliased pass-through output,
    its root's), falling back to the unit's own request when the tensor gets no pair (dynamic plans); a
    weight's, a bias's or a constant's is its own spec. Inputs not listed are read in float."""
    out = {}
    for q in unit.quant_inputs:
        grid = plan.grid_spec(q.tensor) if q.role == "activation" else None
        out[q.index] = grid if grid is not None else q.spec
    return out


def unit_bits(plan, unit) -> tuple[int, int]:
    """(weight bits, activation bits) of ``unit`` as the written file reads them: the bits of its node's
    input 1 and input 0 (:func:`input_specs`; a MatMul of two activations reads its second on the other
    activation's grid), 32 for an input read in float."""
    specs = input_specs(plan, unit)
    w, a = specs.get(1), specs.get(0)
    return (w.qtype.bits if w is not None else FLOAT_BITS, a.qtype.bits if a is not None else FLOAT_BITS)


def float_reader_bits(plan, node: onnx.NodeProto) -> tuple[int, int] | None:
    """(weight bits, activation bits) of a compute node ``plan`` keeps float (an excluded unit, or none) as the
    written file reads it: the writer gives every reader of a tensor with a Q/DQ pair its DequantizeLinear's
    output, so a float MatMul beside quantized units reads the grids of its inputs 1 and 0
    (:meth:`QuantPlan.grid_spec`), 32 where an input has no pair; None when neither has one (32 x 32)."""
    grids = [plan.grid_spec(node.input[k]) if len(node.input) > k and node.input[k] else None for k in (1, 0)]
    if all(g is None for g in grids):
        return None
    w, a = (g.qtype.bits if g is not None else FLOAT_BITS for g in grids)
    return w, a


def unit_kernel_kind(plan, unit, count: dict[str, int], relu: set[str]) -> str:
    """:func:`kernel_kind` of a planned ``unit`` with the pairs the writer gives it: its input pairs
    (a shared grid may differ from the unit's own activation setting), its weight's spec (None for a
    MatMul of two activations, whose second input then plays the weight), its output pair. ``count``
    (:func:`readers`) and ``relu`` (:func:`relu_after_bias`) of the float graph add: a signed int8 pair
    read by more than one node stays int8 on x86 (float kernel); a weight-only MatMul followed by a bias
    and a Relu becomes a float FusedGemm. A unit inside a subgraph of a dynamic plan is written
    weight-only (float kernel)."""
    if str(plan.mode) == "dynamic" and unit.graph:
        return "float"
    acts = [plan.activations[t] for t in unit.inputs if t in plan.activations]
    weight = constant = _weight_spec(unit)
    activation = unit_activation(plan, unit)
    if weight is None and len(acts) > 1:
        weight = acts[1]
    if unit.node in relu and activation is None:
        return "float"
    if any(t in plan.activations and plan.activations[t].qtype.name == "int8" and count.get(t, 1) > 1
           for t in list(unit.inputs) + list(unit.outputs)):
        return "float"
    kind = kernel_kind(unit.op_type, weight, activation, output_pair(plan, unit))
    # MatMulNBits takes a constant weight: a MatMul of two activations on 16 and 8 bits runs a float kernel
    return "float" if kind == "nbits" and constant is None else kind


def unit_activation(plan, unit):
    """The QuantSpec of the activation ``unit``'s kernel reads: its first input's pair (a shared grid may
    differ from the unit's own setting), else the unit's own activation setting (a pair upstream of a
    MaxPool / Flatten); None for a float activation."""
    acts = [plan.activations[t] for t in unit.inputs if t in plan.activations]
    return acts[0] if acts else unit.config.activation


def unit_kernel_bits(plan, unit, count: dict[str, int], relu: set[str]) -> tuple[int, int]:
    """(weight bits, activation bits) onnxruntime computes ``unit`` at (:func:`unit_kernel_kind`): (8, 8)
    on integer kernels, (weight bits, 8) in MatMulNBits (accuracy level 4 quantizes the activation to
    int8 per block), (32, 32) on float kernels."""
    kind = unit_kernel_kind(plan, unit, count, relu)
    if kind == "integer":
        return 8, 8
    weight = _weight_spec(unit)
    return (weight.qtype.bits, 8) if kind == "nbits" and weight is not None else (FLOAT_BITS, FLOAT_BITS)


def _weight_spec(unit):
    """The QuantSpec of ``unit``'s constant weight (its axis resolved), None when it has none."""
    return next((q.spec for q in unit.quant_inputs if q.role == "weight"), None)
