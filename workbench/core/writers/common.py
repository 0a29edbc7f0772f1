"""Pieces shared by the QDQ, dynamic and weight-only writers.

Weight qparams (MinMax over the whole tensor, each channel or each block), quantized
initializers (int4 packed two per byte, low nibble first, as the ONNX spec stores INT4/UINT4),
the opset upgrade, metadata stamping and the removal of float initializers nobody reads.
"""

from __future__ import annotations

import json
import logging

import numpy as np
import onnx
from onnx import TensorProto

import workbench
from workbench.core.errors import ExportError
from workbench.core.formats.numerics import compute_qparams
from workbench.core.formats.qparams import QParams
from workbench.core.formats.qtypes import QType
from workbench.core.issues import IssueCode, PlanIssue
from workbench.core.model import load as model_mod
from workbench.core.planning.kernels import ACCURACY_OPTION, ORT_ACCURACY_LEVEL
from workbench.core.recipe.spec import Granularity, QuantSpec

log = logging.getLogger(__name__)


def _blocked_minmax(w: np.ndarray, axis: int, block: int) -> tuple[np.ndarray, np.ndarray]:
    n = w.shape[axis]
    nb = -(-n // block)
    pad = nb * block - n
    moved = np.moveaxis(w, axis, 0)
    if pad:
        edge = np.repeat(moved[-1:], pad, axis=0)  # repeat the last slice: does not widen the range
        moved = np.concatenate([moved, edge], axis=0)
    blocks = moved.reshape((nb, block) + moved.shape[1:])
    return (np.moveaxis(blocks.min(axis=1), 0, axis), np.moveaxis(blocks.max(axis=1), 0, axis))


def weight_qparams(w: np.ndarray, spec: QuantSpec) -> QParams:
    """MinMax qparams of a constant tensor for ``spec`` (axis already resolved).

    Parameters
    ----------
    w : numpy.ndarray, float32, any shape
    spec : QuantSpec
        per_tensor, per_channel (``spec.axis``) or per_block (``spec.axis``, ``spec.block_size``).

    Returns
    -------
    QParams
        Scale shape ``()``, ``(w.shape[axis],)`` or the blocked shape of ONNX QuantizeLinear-21.
    """
    w = np.asarray(w, dtype=np.float32)
    kw = dict(symmetric=spec.symmetric, reduce_range=spec.reduce_range, power_of_two=spec.power_of_two)
    if spec.granularity == Granularity.per_channel and w.ndim > 0:
        axis = spec.axis or 0
        red = tuple(i for i in range(w.ndim) if i != axis)
        return compute_qparams(w.min(axis=red), w.max(axis=red), spec.dtype, axis=axis, **kw)
    if spec.granularity == Granularity.per_block and w.ndim > 0:
        axis = spec.axis or 0
        lo, hi = _blocked_minmax(w, axis, spec.block_size)
        return compute_qparams(lo, hi, spec.dtype, axis=axis, block_size=spec.block_size, **kw)
    lo, hi = (float(w.min()), float(w.max())) if w.size else (0.0, 0.0)
    return compute_qparams(lo, hi, spec.dtype, **kw)


def quantized_initializer(name: str, q: np.ndarray, qt: QType) -> TensorProto:
    """Initializer holding ``q`` (storage dtype of ``qt``) as ONNX ``qt.onnx_type``."""
    t = TensorProto()
    t.name = name
    t.data_type = qt.onnx_type
    t.dims.extend(q.shape)
    if qt.bits == 4:
        nib = q.astype(np.int8).ravel().view(np.uint8) & 0x0F
        if nib.size % 2:
            nib = np.concatenate([nib, np.zeros(1, np.uint8)])
        t.raw_data = (nib[0::2] | (nib[1::2] << 4)).astype(np.uint8).tobytes()
    else:
        t.raw_data = np.ascontiguousarray(q, dtype=qt.storage.newbyteorder("<")).tobytes()  # one copy at most
    return t


def float_initializer(name: str, x: np.ndarray) -> TensorProto:
    return onnx.numpy_helper.from_array(np.asarray(x, dtype=np.float32), name)


def default_opset(proto: onnx.ModelProto) -> int:
    for o in proto.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return 0


def upgrade_opset(proto: onnx.ModelProto, target: int, held: dict | None = None) -> onnx.ModelProto:
    """Return ``proto`` converted to default-domain opset ``target`` (a new proto when upgraded).

    Uses ``workbench.core.model.load.upgrade_opset`` when it exists, else ``onnx.version_converter``.
    ``held``: initializers left out of ``proto`` (``tensor_bytes.lean_copy``); they stand in as
    typed graph inputs during the conversion (the converter rejects undefined inputs), and are
    not in the result either.

    Raises
    ------
    ExportError
        If the conversion fails; the message names both opsets.
    """
    current = default_opset(proto)
    if current >= target:
        return proto

    stand_in = {n for n in (held or {}) if n not in {i.name for i in proto.graph.input}}
    if stand_in:
        proto.graph.input.extend(onnx.helper.make_tensor_value_info(n, held[n].data_type, list(held[n].dims))
                                 for n in sorted(stand_in))
    try:
        out = model_mod.upgrade_opset(proto, target)
    except Exception as exc:  # noqa: BLE001 - the converter raises many types
        raise ExportError(f"The plan needs opset {target} but the model is opset {current} and the "
                          f"conversion failed ({exc.__class__.__name__}: {str(exc)[:200]}).",
                          hint="Pick dtypes available at the model's opset (int8/uint8), or convert "
                               "the model to a newer opset first.") from None
    finally:
        _drop_inputs(proto, stand_in)
    _drop_inputs(out, stand_in)
    return out


def _drop_inputs(proto: onnx.ModelProto, names: set[str]) -> None:
    if names:
        keep = [i for i in proto.graph.input if i.name not in names]
        del proto.graph.input[:]
        proto.graph.input.extend(keep)


def fix_ir_version(proto: onnx.ModelProto) -> None:
    """Raise ``ir_version`` to what the opset and int4 / float8 initializers need."""
    opset = default_opset(proto)
    need = 10 if opset >= 21 else 9 if opset >= 19 else 8 if opset >= 15 else 7
    proto.ir_version = max(proto.ir_version, need)


def keep_declared_value_info(proto: onnx.ModelProto, declared: frozenset[str] | None) -> None:
    """Keep in ``proto``'s main graph only the ``value_info`` of the tensors in ``declared`` (the
    float model's own declarations, ``PreparedModel.declared_value_info``; None keeps every one).

    Preparation infers every shape with data propagation, further than onnxruntime's own inference
    at load. onnxruntime fuses on those shapes: with them it turns each residual Add +
    LayerNormalization of a transformer into SkipLayerNormalization, which its CPU kernel runs slower
    than the two ops (minilm_l6_v2, batch 1 x 32 tokens, 1 thread: 12 SkipLayerNormalization take
    0.90 ms per run, the Adds and LayerNormalizations they replace 0.3 ms), while the float model,
    which declares no shapes, is not fused. Written models declare what the input declared, so
    onnxruntime optimizes the float and the quantized model alike.
    """
    if declared is None:
        return
    keep = [vi for vi in proto.graph.value_info if vi.name in declared]
    if len(keep) != len(proto.graph.value_info):
        del proto.graph.value_info[:]
        proto.graph.value_info.extend(keep)


def stamp_metadata(proto: onnx.ModelProto, plan) -> None:
    """Record the recipe JSON, the mode and the tool version in ``metadata_props``."""
    props = {
        "workbench.version": workbench.__version__,
        "workbench.mode": plan.mode,
        "workbench.recipe": plan.recipe.to_json(),
        "workbench.issues": json.dumps([i.record() for i in plan.issues])[:100000],
    }
    keep = [p for p in proto.metadata_props if p.key not in props]
    del proto.metadata_props[:]
    proto.metadata_props.extend(keep)
    for k, v in props.items():
        proto.metadata_props.add(key=k, value=v)


#: metadata_props key recording the accuracy level onnxruntime fuses MatMulNBits with
ACCURACY_KEY = "workbench.matmulnbits_accuracy_level"


def record_nbits_accuracy(result, fused: list[str], what: str, effect: str) -> None:
    """Stamp what onnxruntime does with units it fuses into MatMulNBits (``fused``, node names) into
    ``result``'s model (``metadata_props`` :data:`ACCURACY_KEY`) and its notes (one
    ``matmulnbits-accuracy`` issue: ``what`` names the units, ``effect`` what accuracy level 4 does)."""
    text = (f"{what}: those onnxruntime fuses into MatMulNBits at load run with accuracy_level {ORT_ACCURACY_LEVEL} "
            f"(its default; session option {ACCURACY_OPTION}): {effect}; set {ACCURACY_OPTION}=1 in the deploying "
            "session for float32 compute")
    meta = {p.key: p for p in result.proto.metadata_props}
    entry = meta.get(ACCURACY_KEY) or result.proto.metadata_props.add()
    entry.key, entry.value = ACCURACY_KEY, f"{ORT_ACCURACY_LEVEL} (onnxruntime default; {ACCURACY_OPTION})"
    result.issues.append(PlanIssue(fused[0], "info", text, code=IssueCode.MATMULNBITS_ACCURACY))
