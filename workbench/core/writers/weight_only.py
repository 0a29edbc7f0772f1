"""Weight-only writer (the ``w4-block`` preset): ``DQ(int4 weight, block_size) -> MatMul``.

Activations stay float. onnxruntime's ``DQMatMulToMatMulNBits`` fusion turns each
``DequantizeLinear(int4/uint4, axis=0, block_size) -> MatMul`` with a constant 2-D weight into a
``MatMulNBits`` kernel when ``block_size`` is a power of two >= 16 (opset 21). Units that will
not fuse still run correctly (DQ + float op); each one is reported as an issue.

The fused kernel's ``accuracy_level`` is not in the file: onnxruntime takes it from the session
option ``session.qdq_matmulnbits_accuracy_level`` (default 4, ``onnxruntime_session_options_config_keys.h``),
and level 4 quantizes the activations to int8 per block inside MatMulNBits, so the fused output
differs from the graph as written (0.93 % relative L2 on three chained 256 x 256 MatMuls, 0.47 % with
Relus between them, onnxruntime 1.32, x86_64 with AVX512-VNNI, 2 cores); level 1 computes in float32
and matches it to 5e-7. The writer
records this in ``metadata_props`` (:data:`ACCURACY_KEY`) and as a ``matmulnbits-accuracy`` note.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from workbench.core.graph.index import attrs_of
from workbench.core.issues import IssueCode, PlanIssue
from workbench.core.planning.kernels import relu_after_bias
from workbench.core.planning.plan import NodeUnit, QuantPlan, UnitInput
from workbench.core.wording import count
from workbench.core.writers import common as C
from workbench.core.writers.qdq import QdqResult, QdqWriter


def _fusion_blocker(unit, dims: list[int]) -> str | None:
    spec = unit.quant_inputs[0].spec
    if unit.op_type != "MatMul":
        return f"{unit.op_type} is not fused into MatMulNBits (only MatMul, and Gemm with alpha = beta = 1, " \
               "no transA, int4 blocks)"
    if len(dims) != 2:
        return f"weight has rank {len(dims)}; MatMulNBits needs a 2-D weight"
    if spec.dtype not in ("int4", "uint4"):
        return f"weight dtype {spec.dtype}; MatMulNBits needs int4/uint4"
    bs = spec.block_size or 0
    if spec.granularity != "per_block" or spec.axis != 0 or bs < 16 or bs & (bs - 1):
        return "MatMulNBits needs per_block along axis 0 with a power-of-two block_size >= 16"
    return None


def write_weight_only(model, plan: QuantPlan, act_qparams: dict | None = None, *, check: bool = True) -> QdqResult:
    """Write a weight-only model of ``plan`` (no calibration needed).

    Raises
    ------
    ExportError
        If the opset upgrade the plan needs (21 for int4) fails.
    """
    writer = _WeightOnlyWriter(model, plan, {}, check=check)
    inits = {i.name: list(i.dims) for i in model.proto.graph.initializer}
    relu_after = relu_after_bias(model.proto.graph)
    fused: list[str] = []
    for unit in plan.units.values():
        if unit.excluded or not unit.quant_inputs:
            continue
        gemm = unit.op_type == "Gemm" and _gemm_as_matmul(unit) is not None  # written as MatMul (+ Add)
        why = None if gemm else _fusion_blocker(unit, inits.get(unit.weight or "", []))
        if why is None and unit.node in relu_after:
            why = ("its bias Add and the Relu after it make onnxruntime fuse a float FusedGemm before "
                   "MatMulNBits can take the MatMul")
        if why:
            writer.issues.append(PlanIssue(unit.node, "info", f"{why}; runs as DequantizeLinear + "
                                           f"float {unit.op_type}.", code=IssueCode.NO_MATMULNBITS))
        else:
            fused.append(unit.node)
    result = writer.write()
    if fused:
        C.record_nbits_accuracy(result, fused, f"{count(len(fused), 'int4 DequantizeLinear + MatMul unit')}",
                                "activations are quantized to int8 per block inside the kernel, so outputs differ "
                                "from the graph as written by about 0.5-1 %")
    return result


def _gemm_as_matmul(unit: NodeUnit) -> UnitInput | None:
    """The weight input of a Gemm unit that can be written as MatMul (+ Add) for MatMulNBits."""
    spec = unit.quant_inputs[0].spec
    if spec.dtype not in ("int4", "uint4") or spec.granularity != "per_block":
        return None
    bs = spec.block_size or 0
    if bs < 16 or bs & (bs - 1):
        return None
    return unit.quant_inputs[0]


class _WeightOnlyWriter(QdqWriter):
    """Writes ``Gemm(A, B, C)`` with alpha = beta = 1 and no transA as ``MatMul(A, DQ(B^T or B)) + C``
    so that onnxruntime's MatMulNBits fusion applies (it only matches MatMul)."""

    def emit_unit(self, node: onnx.NodeProto, unit: NodeUnit, main: bool):
        a = attrs_of(node)
        wi = _gemm_as_matmul(unit) if node.op_type == "Gemm" else None
        if wi is None or a.get("transA", 0) or a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0:
            return super().emit_unit(node, unit, main)
        w = self.const(wi.tensor)
        if a.get("transB", 0):
            w = np.ascontiguousarray(w.T)
        spec = wi.spec.model_copy(update={"axis": 0})
        wq = C.weight_qparams(w, spec)
        qname, sname, zname = self._int_init(f"{wi.tensor}_kn", w, wq)
        w_out = self.alloc.new(f"{wi.tensor}_dequantized")
        pre = [helper.make_node("DequantizeLinear", [qname, sname, zname], [w_out], axis=0,
                                block_size=int(wq.block_size), name=self.alloc.new(f"{wi.tensor}_DequantizeLinear"))]
        self.tensor_map.setdefault(wi.tensor, w_out)
        self.record_table(wi.tensor, [qname, sname, zname], {"axis": 0, "block_size": int(wq.block_size)}, node.name,
                          transposed=bool(a.get("transB", 0)))
        bias = node.input[2] if len(node.input) > 2 and node.input[2] else None
        y = node.output[0]
        mm_out = self.alloc.new(f"{node.name}_matmul") if bias else y
        matmul = helper.make_node("MatMul", [node.input[0], w_out], [mm_out], name=node.name)
        if not bias:
            return pre, matmul
        pre.append(matmul)
        return pre, helper.make_node("Add", [mm_out, bias], [y], name=self.alloc.new(f"{node.name}_bias"))
