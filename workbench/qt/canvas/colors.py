"""Node colours of the graph canvas: by op type (stable palette), by dtype, by error (SQNR colour map)."""

from __future__ import annotations

import hashlib
import math

from PySide6.QtGui import QColor

#: Fill of nodes that have no value in the current mode (no dtype assigned, no SQNR measured).
NO_VALUE = QColor("#d9d9d9")
SELECTION = QColor("#1f6feb")

# Hand-picked colours for the ops a quantization user meets most; others get a hashed hue.
_OP_COLORS = {
    "Conv": "#8fb8de", "ConvTranspose": "#8fb8de", "MatMul": "#a3c4f3", "Gemm": "#a3c4f3",
    "Relu": "#f4a6a6", "Clip": "#f4a6a6", "Sigmoid": "#f7b7a3", "Tanh": "#f7b7a3", "Gelu": "#f7b7a3",
    "Softmax": "#f9c784", "Add": "#c5e1a5", "Mul": "#c5e1a5", "Sub": "#c5e1a5", "Div": "#c5e1a5",
    "MaxPool": "#b39ddb", "AveragePool": "#b39ddb", "GlobalAveragePool": "#b39ddb",
    "Concat": "#ffe082", "Reshape": "#e0e0e0", "Transpose": "#e0e0e0", "Flatten": "#e0e0e0",
    "Squeeze": "#e0e0e0", "Unsqueeze": "#e0e0e0", "Gather": "#d7ccc8", "Shape": "#eeeeee",
    "Constant": "#f5f5f5", "LayerNormalization": "#80cbc4", "BatchNormalization": "#80cbc4",
    "QuantizeLinear": "#ffcc80", "DequantizeLinear": "#ffe0b2", "If": "#ce93d8", "Loop": "#ce93d8",
    "Scan": "#ce93d8",
}

_DTYPE_COLORS = {
    "float": "#eceff1", "float16": "#b3e5fc", "bfloat16": "#81d4fa",
    "int8": "#ffb74d", "uint8": "#ffd54f", "int16": "#ba68c8", "uint16": "#ce93d8",
    "int4": "#e57373", "uint4": "#f06292", "int32": "#90a4ae",
    "float8e4m3fn": "#4db6ac", "float8e5m2": "#26a69a",
}
_DTYPE_ALIASES = {"float32": "float", "fp32": "float", "f32": "float", "fp16": "float16", "half": "float16",
                  "bf16": "bfloat16", "i8": "int8", "u8": "uint8", "i16": "int16", "u16": "uint16",
                  "i4": "int4", "u4": "uint4", "fp8": "float8e4m3fn", "float8e4m3": "float8e4m3fn",
                  "f8e4m3": "float8e4m3fn", "f8e5m2": "float8e5m2", "i32": "int32"}
#: fill of the "INT" mark on integer kernels
KERNEL_MARK = QColor("#a5d6a7")

#: SQNR (dB) -> colour stops of the error colour map, red (bad) to green (good).
ERROR_STOPS: list[tuple[float, QColor]] = [
    (5.0, QColor("#d73027")), (15.0, QColor("#fc8d59")), (25.0, QColor("#fee08b")),
    (35.0, QColor("#91cf60")), (45.0, QColor("#1a9850")),
]


def op_color(op_type: str) -> QColor:
    """Fill colour of an op type: a fixed colour for common ops, otherwise a hue from md5(op_type).

    md5 (not ``hash``) keeps the colour stable between runs and machines.
    """
    if op_type in _OP_COLORS:
        return QColor(_OP_COLORS[op_type])
    digest = hashlib.md5(op_type.encode("utf-8")).digest()
    return QColor.fromHsv(digest[0] * 360 // 256, 70 + digest[1] % 40, 235)


def normalize_dtype(name: str) -> str:
    key = name.strip().lower().replace("_", "")
    return _DTYPE_ALIASES.get(key, key)


def dtype_color(name: str | None) -> QColor:
    """Fill colour of an activation dtype name (``"int8"``, ``"float"``, aliases such as ``"u8"``)."""
    if not name:
        return QColor(NO_VALUE)
    key = normalize_dtype(name)
    if key in _DTYPE_COLORS:
        return QColor(_DTYPE_COLORS[key])
    digest = hashlib.md5(key.encode("utf-8")).digest()
    return QColor.fromHsv(digest[0] * 360 // 256, 120, 220)


def badge_color(text: str) -> QColor:
    """Fill of a collapsed Q/DQ badge (``"u8"``, ``"i8 u8"``): the colour of its last dtype."""
    last = text.split()[-1] if text.split() else ""
    return dtype_color(last.split(":")[-1]) if last else QColor("#ffcc80")


def error_color(sqnr_db: float | None) -> QColor:
    """Colour of a signal-to-quantization-noise ratio in dB: <= 5 dB red, >= 45 dB green.

    Piecewise-linear RGB interpolation between :data:`ERROR_STOPS`. ``+inf`` (exact) is green,
    NaN or None is :data:`NO_VALUE`.
    """
    if sqnr_db is None or math.isnan(sqnr_db):
        return QColor(NO_VALUE)
    if sqnr_db <= ERROR_STOPS[0][0]:
        return QColor(ERROR_STOPS[0][1])
    for (x0, c0), (x1, c1) in zip(ERROR_STOPS, ERROR_STOPS[1:], strict=False):
        if sqnr_db <= x1:
            t = (sqnr_db - x0) / (x1 - x0)
            return QColor(round(c0.red() + t * (c1.red() - c0.red())),
                          round(c0.green() + t * (c1.green() - c0.green())),
                          round(c0.blue() + t * (c1.blue() - c0.blue())))
    return QColor(ERROR_STOPS[-1][1])


def text_color(fill: QColor) -> QColor:
    """Black or white, whichever reads better on ``fill`` (relative luminance, ITU-R BT.709)."""
    lum = 0.2126 * fill.redF() + 0.7152 * fill.greenF() + 0.0722 * fill.blueF()
    return QColor("#111111") if lum > 0.45 else QColor("#ffffff")
