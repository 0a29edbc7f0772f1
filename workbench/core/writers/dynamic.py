"""Dynamic writer (the ``dynamic-u8`` preset): int8 weights offline, uint8 activations at run time.

The pattern is the one onnxruntime's ``quantize_dynamic`` emits, which its optimizer fuses into
``DynamicQuantizeMatMul`` / ``MatMulIntegerToFloat`` (MatMul, Gemm) and keeps as ``ConvInteger``::

    DynamicQuantizeLinear(X) -> X_q, X_scale, X_zero_point      (one per input tensor)
    MatMulInteger(X_q, W_q, X_zero_point, W_zero_point) | ConvInteger(...)  -> int32
    Cast(to=FLOAT) -> Mul(X_scale * W_scale [* alpha]) [-> Add(bias)]

Units inside subgraphs get ``DQ(weight) -> op`` like the static writer. No calibration.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from workbench.core.formats.numerics import quantize
from workbench.core.formats.qparams import QParams
from workbench.core.graph.index import attrs_of
from workbench.core.issues import IssueCode, PlanIssue
from workbench.core.planning.plan import NodeUnit, QuantPlan
from workbench.core.writers import common as C
from workbench.core.writers.qdq import QdqResult, QdqWriter


def write_dynamic(model, plan: QuantPlan, act_qparams: dict | None = None, *, check: bool = True) -> QdqResult:
    """Write the dynamic-quantization model of ``plan``.

    Raises
    ------
    ExportError
        If the opset upgrade fails or the result fails onnx.checker.
    """
    return _DynamicWriter(model, plan, check=check).write()


class _DynamicWriter(QdqWriter):
    def __init__(self, model, plan: QuantPlan, *, check: bool = True):
        super().__init__(model, plan, {}, check=check)
        self._dql: dict[str, tuple[str, str, str]] = {}
        self._weight_cache: dict[tuple, tuple[str, str, str]] = {}

    def emit_unit(self, node: onnx.NodeProto, unit: NodeUnit, main: bool):
        if not main:
            return super().emit_unit(node, unit, main)
        a = attrs_of(node)
        if node.op_type == "Gemm" and a.get("transA", 0):
            self.issues.append(PlanIssue(node.name, "info", "Gemm with transA: weight-only DQ instead of "
                                         "dynamic quantization.", code=IssueCode.GEMM_TRANS_A))
            return super().emit_unit(node, unit, main)
        if node.op_type not in ("MatMul", "Gemm", "Conv"):
            return super().emit_unit(node, unit, main)
        wi = unit.quant_inputs[0]
        w = self.const(wi.tensor)
        if node.op_type == "Gemm" and a.get("transB", 0):
            w = np.ascontiguousarray(w.T)
        spec = wi.spec
        if node.op_type == "Gemm" and spec.axis is not None:
            spec = spec.model_copy(update={"axis": 1})
        wq = C.weight_qparams(w, spec)
        zp = np.asarray(wq.zero_point)
        if node.op_type == "Conv" and zp.ndim and np.any(zp != zp.ravel()[0]):
            self.issues.append(PlanIssue(node.name, "info", "ConvInteger accepts one weight zero_point only; "
                                         "asymmetric per-channel weights written as DQ(weight) + float Conv.", code=IssueCode.ONE_ZERO_POINT))
            return super().emit_unit(node, unit, main)
        return self._pattern(node, unit, w, wq, a)

    def _dynamic_quantize(self, x: str) -> tuple[list[onnx.NodeProto], tuple[str, str, str]]:
        if x in self._dql:
            return [], self._dql[x]
        outs = (self.alloc.new(f"{x}_quantized"), self.alloc.new(f"{x}_scale"), self.alloc.new(f"{x}_zero_point"))
        self._dql[x] = outs
        return [helper.make_node("DynamicQuantizeLinear", [x], list(outs),
                                 name=self.alloc.new(f"{x}_DynamicQuantizeLinear"))], outs

    def _pattern(self, node, unit: NodeUnit, w: np.ndarray, wq: QParams, a: dict):
        x = node.input[0]
        nodes, (xq, xs, xz) = self._dynamic_quantize(x)
        base = unit.weight or node.name
        alpha = float(a.get("alpha", 1.0)) if node.op_type == "Gemm" else 1.0
        qname, sname, zname = self._weight_inits(base, w, wq, node.op_type, alpha)
        acc = self.alloc.new(f"{node.name}_int32")
        if node.op_type == "Conv":
            nodes.append(helper.make_node("ConvInteger", [xq, qname, xz, zname], [acc],
                                          name=self.alloc.new(f"{node.name}_ConvInteger"),
                                          **{k: v for k, v in a.items()}))
        else:
            nodes.append(helper.make_node("MatMulInteger", [xq, qname, xz, zname], [acc],
                                          name=self.alloc.new(f"{node.name}_MatMulInteger")))
        cast = self.alloc.new(f"{node.name}_float")
        nodes.append(helper.make_node("Cast", [acc], [cast], to=TensorProto.FLOAT,
                                      name=self.alloc.new(f"{node.name}_Cast")))
        scale = self.alloc.new(f"{node.name}_scale")
        nodes.append(helper.make_node("Mul", [xs, sname], [scale], name=self.alloc.new(f"{node.name}_ScaleMul")))
        bias = self._bias_name(node, a)
        y = node.output[0]
        mul_out = self.alloc.new(f"{node.name}_scaled") if bias else y
        last = helper.make_node("Mul", [cast, scale], [mul_out], name=self.alloc.new(f"{node.name}_Mul"))
        if bias:
            nodes.append(last)
            last = helper.make_node("Add", [mul_out, bias], [y], name=self.alloc.new(f"{node.name}_BiasAdd"))
        self.tensor_map.setdefault(unit.weight or "", qname)
        if unit.weight and node.op_type != "Conv" and alpha == 1.0:  # the stored scale is the weight's own
            self.record_table(unit.weight, [qname, sname, zname], {"axis": int(wq.axis)} if np.ndim(wq.scale) else {},
                              node.name, transposed=node.op_type == "Gemm" and bool(a.get("transB", 0)))
        return nodes, last

    def _weight_inits(self, base: str, w: np.ndarray, wq: QParams, op: str,
                      alpha: float = 1.0) -> tuple[str, str, str]:
        """Integer weight, scale and zero point initializers; one set per distinct (weight, layout,
        qparams, alpha), so a weight read by two units with the same parameters is stored once."""
        key = (base, op, w.shape, wq.qtype, np.asarray(wq.scale).tobytes(), np.asarray(wq.zero_point).tobytes(), alpha)
        if key not in self._weight_cache:
            self._weight_cache[key] = self._new_weight_inits(base, w, wq, op, alpha)
        return self._weight_cache[key]

    def _new_weight_inits(self, base: str, w: np.ndarray, wq: QParams, op: str, alpha: float) -> tuple[str, str, str]:
        q = quantize(w, wq)
        names = (self.alloc.new(f"{base}_quantized"), self.alloc.new(f"{base}_scale"),
                 self.alloc.new(f"{base}_zero_point"))
        scale = (wq.scale * np.float32(alpha)).astype(np.float32)
        if op == "Conv" and scale.ndim == 1:
            scale = scale.reshape((-1,) + (1,) * (w.ndim - 2))
        zp = np.asarray(wq.zero_point)
        if op == "Conv" and zp.ndim:  # ConvInteger: a single weight zero point (all equal, checked above)
            zp = zp.ravel()[:1].reshape(())
        self.new_inits += [C.quantized_initializer(names[0], q, wq.qt), C.float_initializer(names[1], scale),
                           C.quantized_initializer(names[2], zp, wq.qt)]
        return names

    def _bias_name(self, node, a: dict) -> str | None:
        if node.op_type not in ("Gemm", "Conv") or len(node.input) < 3 or not node.input[2]:
            return None
        b = node.input[2]
        beta = float(a.get("beta", 1.0)) if node.op_type == "Gemm" else 1.0
        if b in self.consts:
            x = self.const(b) * np.float32(beta)
            if node.op_type == "Conv":
                x = x.reshape((-1,) + (1,) * (len(self._conv_spatial(node))))
            name = self.alloc.new(f"{b}_bias")
            self.new_inits.append(C.float_initializer(name, x))
            return name
        if beta != 1.0 or node.op_type == "Conv":
            self.issues.append(PlanIssue(node.name, "warning", "non-constant bias with beta != 1 or on "
                                         "Conv is not supported in dynamic mode; bias ignored.", code=IssueCode.BIAS_FLOAT))
            return None
        return b

    def _conv_spatial(self, node) -> list[int]:
        w = self.consts[node.input[1]]
        return list(w.dims[2:])
