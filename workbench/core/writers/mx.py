"""Writing MX block-format weights as standard QDQ (ONNX opset 24+).

Each MX weight becomes ``DequantizeLinear(x, x_scale, axis=a, block_size=32)`` with

* ``x``: the elements in their ONNX type (FLOAT8E4M3FN, FLOAT8E5M2, FLOAT4E2M1, INT8; MXFP6 in a
  FLOAT8E4M3FN container, exact, since ONNX has no 6-bit float),
* ``x_scale``: FLOAT8E8M0, one per block (DequantizeLinear-24 type constraint T2),
* no zero point (optional input; 0 for these types).

onnxruntime's CPU provider may not implement DequantizeLinear with float8e8m0 scales or
float4e2m1 elements yet; :func:`runtime_issues` tries to create a session and reports that as a
:class:`~workbench.core.planning.plan.PlanIssue` instead of failing (the model is then checked with
``onnx.reference``).
"""

from __future__ import annotations

import logging

import ml_dtypes
import numpy as np
import onnx
from onnx import numpy_helper

from workbench.core.formats.mx import e8m0_bits, mx_format
from workbench.core.formats.numerics import mx_quantize
from workbench.core.formats.qparams import QParams
from workbench.core.io.ort_session import QUIET_LOG, proto_session
from workbench.core.issues import IssueCode, PlanIssue
from workbench.core.runtime.mx_simulation import has_mx

log = logging.getLogger(__name__)

ORT_CANNOT_RUN = "onnxruntime cannot run MX QDQ on CPU yet; the model is checked with onnx.reference"


def mx_tensors(qp: QParams, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The stored element array (container dtype) and the E8M0 scale array of ``x`` under ``qp``."""
    fmt = mx_format(qp.qtype)
    q = mx_quantize(x, qp)
    elements = q.astype(fmt.container) if fmt.container != fmt.storage else q
    scale = e8m0_bits(qp.scale).view(ml_dtypes.float8_e8m0fnu)
    return elements, scale


def add_initializers(writer, base: str, x: np.ndarray, qp: QParams) -> tuple[str, str, str]:
    """Add the element and scale initializers of an MX weight to ``writer`` (a QdqWriter).

    Returns ``(elements_name, scale_name, "")``: the empty zero point name means "no input".
    """
    elements, scale = mx_tensors(qp, x)
    qname, sname = writer.alloc.new(f"{base}_quantized"), writer.alloc.new(f"{base}_scale")
    writer.new_inits += [numpy_helper.from_array(elements, qname), numpy_helper.from_array(scale, sname)]
    fmt = mx_format(qp.qtype)
    if fmt.container != fmt.storage and fmt.bits == 6:
        writer.issues.append(PlanIssue("", "info", f"{base}: ONNX has no 6-bit float type; the {fmt.element} "
                                       "elements are stored (exactly) as float8e4m3fn.", code=IssueCode.MX_ELEMENT_STORAGE))
    return qname, sname, ""




def ort_can_run(proto: onnx.ModelProto) -> tuple[bool, str]:
    """Try to create an onnxruntime CPU session; ``(ok, reason)``. Never raises."""
    try:
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.log_severity_level = QUIET_LOG
        proto_session(proto, so)  # large weights handed over in place, not serialised
        return True, ""
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
        return False, f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"


def runtime_issues(proto: onnx.ModelProto) -> list[PlanIssue]:
    """One warning when ``proto`` holds MX weights that onnxruntime's CPU provider cannot load."""
    if not has_mx(proto):
        return []
    ok, why = ort_can_run(proto)
    if ok:
        return []
    log.info("onnxruntime rejected the MX model: %s", why)
    return [PlanIssue("", "warning", f"{ORT_CANNOT_RUN} (onnxruntime said: {why}).", code=IssueCode.ORT_CANNOT_RUN)]


