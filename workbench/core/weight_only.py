"""Weight-only writer (the ``w4-block`` preset): ``DQ(int4 weight, block_size) -> MatMul``.

Activations stay float. onnxruntime's ``DQMatMulToMatMulNBits`` fusion turns each
``DequantizeLinear(int4/uint4, axis=0, block_size) -> MatMul`` with a constant 2-D weight into a
``MatMulNBits`` kernel when ``block_size`` is a power of two >= 16 (opset 21). Units that will
not fuse still run correctly (DQ + float op); each one is reported as an issue.
"""

from __future__ import annotations

import onnx

from workbench.core.plan import PlanIssue, QuantPlan
from workbench.core.qdq_writer import QdqResult, QdqWriter


def _fusion_blocker(unit, dims: list[int]) -> str | None:
    spec = unit.quant_inputs[0].spec
    if unit.op_type != "MatMul":
        return f"{unit.op_type} is not fused into MatMulNBits (only MatMul is)"
    if len(dims) != 2:
        return f"weight has rank {len(dims)}; MatMulNBits needs a 2-D weight"
    if spec.dtype not in ("int4", "uint4"):
        return f"weight dtype {spec.dtype}; MatMulNBits needs int4/uint4"
    bs = spec.block_size or 0
    if spec.granularity != "per_block" or spec.axis != 0 or bs < 16 or bs & (bs - 1):
        return "MatMulNBits needs per_block along axis 0 with a power-of-two block_size >= 16"
    return None


def write_weight_only(model, plan: QuantPlan) -> QdqResult:
    """Write a weight-only model of ``plan`` (no calibration needed).

    Raises
    ------
    ExportError
        If the opset upgrade the plan needs (21 for int4) fails.
    """
    writer = QdqWriter(model, plan, {})
    inits = {i.name: list(i.dims) for i in model.proto.graph.initializer}
    for unit in plan.units.values():
        if unit.excluded or not unit.quant_inputs:
            continue
        why = _fusion_blocker(unit, inits.get(unit.weight or "", []))
        if why:
            writer.issues.append(PlanIssue(unit.node, "info", f"{why}; runs as DequantizeLinear + "
                                           f"float {unit.op_type}."))
    return writer.write()


def count_matmulnbits_candidates(proto: onnx.ModelProto) -> int:
    """Number of ``DequantizeLinear -> MatMul`` pairs with a block_size attribute (for reports)."""
    dq_out = {n.output[0] for n in proto.graph.node if n.op_type == "DequantizeLinear"
              and any(a.name == "block_size" for a in n.attribute)}
    return sum(1 for n in proto.graph.node if n.op_type == "MatMul" and len(n.input) > 1 and n.input[1] in dq_out)
