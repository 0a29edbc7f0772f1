"""Quantization parameters: :class:`QParams` (scale, zero_point, qtype, axis, block_size).

The affine mapping of the ONNX QuantizeLinear / DequantizeLinear operators: ``r = (q - zero_point) * scale``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.core.formats.qtypes import QType, get_qtype


@dataclass
class QParams:
    """Quantization parameters of one tensor.

    Attributes
    ----------
    scale : numpy.ndarray, float32
        Shape ``()`` per-tensor, ``(C,)`` per-channel along ``axis``, or the tensor's shape with
        ``shape[axis]`` replaced by ``ceil(shape[axis] / block_size)`` per-block.
    zero_point : numpy.ndarray
        Same shape as ``scale``, dtype ``qtype.storage`` (always 0 for float8).
    qtype : str
        Name of the quantized dtype (see :mod:`workbench.core.formats.qtypes`).
    axis : int or None
        Channel / block axis; None for per-tensor.
    block_size : int or None
        Block length along ``axis`` for per-block; None otherwise.
    """

    scale: np.ndarray
    zero_point: np.ndarray
    qtype: str
    axis: int | None = None
    block_size: int | None = None

    @property
    def qt(self) -> QType:
        return get_qtype(self.qtype)

    def to_json(self) -> dict:
        """JSON-friendly dict (lists of floats / ints)."""
        zp = self.zero_point.astype(np.float64) if self.qt.is_float else self.zero_point.astype(np.int64)
        return {
            "scale": self.scale.astype(np.float32).tolist(),
            "zero_point": zp.tolist(),
            "qtype": self.qtype,
            "axis": self.axis,
            "block_size": self.block_size,
            "shape": list(self.scale.shape),
        }

    @classmethod
    def from_json(cls, d: dict) -> QParams:
        qt = get_qtype(d["qtype"])
        shape = tuple(d.get("shape", ()))
        scale = np.asarray(d["scale"], dtype=np.float32).reshape(shape)
        zp = np.asarray(d["zero_point"], dtype=np.float64).reshape(shape).astype(qt.storage)
        return cls(scale, zp, d["qtype"], d.get("axis"), d.get("block_size"))


