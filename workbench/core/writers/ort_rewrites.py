"""Rewrites that keep onnxruntime's QDQ clean-up passes from breaking our models.

* ``ReluQuantTransformer`` (relu_quantizelinear.cc) removes a Relu followed by QuantizeLinear
  unless the zero point is an int8 != -128 or a uint8 != 0; for float8 and 16-bit types it
  therefore also removes Relus the Q does not clamp (zero point above qmin), which changes the
  result. We write such a Relu as ``Max(x, 0)``.
* ``ClipQuantFusion`` (clip_quantizelinear.cc) throws "Unexpected data type for QuantizeLinear
  input y_zero_point" at session creation for a Clip followed by a float8 QuantizeLinear. We write
  Clips before non-8-bit-integer Qs as ``Min(Max(x, lo), hi)``.

Both rewrites are exact (same values, NaN aside) and are reported as issues.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from workbench.core.formats.qparams import QParams
from workbench.core.graph.index import attrs_of
from workbench.core.issues import IssueCode, PlanIssue
from workbench.core.writers import common as C


def needs_guard(op_type: str, qp: QParams) -> bool:
    """True if ``op_type`` (Relu / Clip) right before a Q with ``qp`` must be rewritten."""
    qt = qp.qt
    if qt.name in ("int8", "uint8"):
        return False
    if op_type == "Relu":
        return qt.is_float or float(qp.zero_point) != qt.qmin
    return op_type == "Clip"


def guard(node: onnx.NodeProto, qp: QParams, writer) -> list[onnx.NodeProto]:
    """Rewrite ``node`` in place if needed; returns nodes to insert before it.

    ``writer`` provides ``alloc`` (NameAllocator), ``new_inits`` and ``issues``.
    """
    if not needs_guard(node.op_type, qp):
        return []
    if node.op_type == "Relu":
        zero = writer.alloc.new(f"{node.name}_zero")
        writer.new_inits.append(C.float_initializer(zero, np.float32(0)))
        node.op_type = "Max"
        node.input.append(zero)
        writer.issues.append(PlanIssue(node.name, "info", f"Relu written as Max(x, 0): onnxruntime would "
                                       f"drop a Relu before a {qp.qtype} QuantizeLinear with zero_point > qmin.", code=IssueCode.RELU_REWRITTEN))
        return []
    return _clip_as_min_max(node, qp, writer)


def _clip_bounds(node: onnx.NodeProto, writer) -> tuple[str, str]:
    a = attrs_of(node)
    if "min" in a or "max" in a:  # opset < 11: bounds are attributes
        names = []
        for key, default in (("min", None), ("max", None)):
            if key in a and a[key] is not default:
                n = writer.alloc.new(f"{node.name}_{key}")
                writer.new_inits.append(C.float_initializer(n, np.float32(a[key])))
                names.append(n)
            else:
                names.append("")
        return names[0], names[1]
    lo = node.input[1] if len(node.input) > 1 else ""
    hi = node.input[2] if len(node.input) > 2 else ""
    return lo, hi


def _clip_as_min_max(node: onnx.NodeProto, qp: QParams, writer) -> list[onnx.NodeProto]:
    lo, hi = _clip_bounds(node, writer)
    x = node.input[0]
    pre: list[onnx.NodeProto] = []
    if lo and hi:
        mid = writer.alloc.new(f"{node.name}_lower")
        pre.append(helper.make_node("Max", [x, lo], [mid], name=writer.alloc.new(f"{node.name}_Max")))
        op, inputs = "Min", [mid, hi]
    elif lo:
        op, inputs = "Max", [x, lo]
    elif hi:
        op, inputs = "Min", [x, hi]
    else:
        op, inputs = "Identity", [x]
    del node.attribute[:]
    del node.input[:]
    node.input.extend(inputs)
    node.op_type = op
    writer.issues.append(PlanIssue(node.name, "info", f"Clip written as Min(Max(x, lo), hi): onnxruntime's "
                                   f"ClipQuantFusion fails on a {qp.qtype} QuantizeLinear.", code=IssueCode.CLIP_REWRITTEN))
    return pre
