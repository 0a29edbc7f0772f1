"""Node colours of the graph canvas: by op type (stable palette), by dtype, by error (SQNR colour map)."""

from __future__ import annotations

import hashlib
from collections import Counter

from PySide6.QtGui import QColor

from workbench.core.api import SQNR_NO_VALUE, SQNR_STOPS, sqnr_hex

#: Fill of nodes that have no value in the current mode (no dtype assigned, no SQNR measured).
NO_VALUE = QColor(SQNR_NO_VALUE)
SELECTION = QColor("#1f6feb")

#: Distinct op colours: every pair is at least 15 apart in CIE76 (Lab) colour difference, so the
#: op types a model uses most (:func:`op_palette`) never look alike. Mid-light: black text reads on each.
SLOTS: dict[str, str] = {
    "blue": "#6fa8dc", "navy": "#8e9be8", "red": "#e06666", "orange": "#f6a04d", "green": "#93c47d",
    "lime": "#d5e86b", "teal": "#45b5aa", "yellow": "#ffd966", "purple": "#b4a7d6", "pink": "#f4a6c8",
    "sky": "#9fe0f5", "tan": "#c9a27e", "grey": "#b7b7b7", "mauve": "#d98ee0", "white": "#eeeeee",
}
_SLOT_ORDER = list(SLOTS)
#: slots only their own families take (Relu / Clip red, Sigmoid / Tanh orange): red and orange read as
#: errors and warnings (the Problems dock, the SQNR colours), so an op type whose slot is taken never falls to them
RESERVED = ("red", "orange")
_FALLBACK = [s for s in _SLOT_ORDER if s not in RESERVED]
#: Colours for the op types past the free slots (a legend lists every op type: nudenet_320n's 21, its Resize
#: drew in MaxPool's purple): soft, hues 56-316 deg (no red or orange), each >= 16.8 CIE76 from every slot, from
#: each other and from both themes' canvas backgrounds; chosen greedily for the largest smallest difference.
EXTRA = ("#8c8738", "#738c69", "#79f2ca", "#5c8d99", "#33f1ff", "#d3d9ad", "#36996b", "#18c7f2", "#b374a2",
         "#ccc670", "#ace6d2", "#f2bfff", "#ccdaff", "#7c85a6", "#86b3a7", "#9ea66c", "#9c7cbf", "#7cbf97",
         "#b38fa7", "#39adbf")

# The slot an op family gets when it is free (op types of a family share it); others hash to one.
_HOME = {
    "blue": ("Conv", "ConvTranspose", "ConvInteger", "QLinearConv"),
    "navy": ("MatMul", "Gemm", "MatMulInteger", "QLinearMatMul", "MatMulNBits", "Attention", "QGemm"),
    "red": ("Relu", "Clip", "LeakyRelu", "PRelu", "HardSwish"),
    "orange": ("Sigmoid", "HardSigmoid", "Tanh", "Gelu", "Erf", "QuantizeLinear"),
    "green": ("Add", "Sub", "Sum", "QLinearAdd"),
    "lime": ("Mul", "QLinearMul"),
    "teal": ("Div", "Pow", "Sqrt", "Reciprocal", "Exp", "Log"),
    "yellow": ("Concat", "Softmax", "Split", "DequantizeLinear"),
    "purple": ("MaxPool", "AveragePool", "GlobalAveragePool", "Resize", "Upsample"),
    "pink": ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ArgMax"),
    "sky": ("LayerNormalization", "BatchNormalization", "InstanceNormalization", "GroupNormalization"),
    "tan": ("Cast", "Gather", "Shape", "Slice", "Where", "Equal", "Expand", "Range", "ConstantOfShape"),
    "grey": ("Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze"),
    "mauve": ("If", "Loop", "Scan", "LSTM", "GRU", "RNN"),
    "white": ("Constant", "Identity"),
}
_HOME_OF = {op: slot for slot, ops in _HOME.items() for op in ops}


def _home(op_type: str) -> str:
    """The slot of ``op_type``'s family, or one from md5(op_type) (stable between runs and machines)."""
    if op_type in _HOME_OF:
        return _HOME_OF[op_type]
    return _SLOT_ORDER[hashlib.md5(op_type.encode("utf-8")).digest()[0] % len(_SLOT_ORDER)]


def op_palette(op_types) -> dict[str, QColor]:
    """Fill colour of each op type of a model, the most frequent ones clearly apart.

    ``op_types`` has one entry per drawn node. In order of frequency (ties by name), each op type
    takes its family's slot (:data:`SLOTS`; Conv blue, MatMul navy, Add green ...) when no more
    frequent op type took it, else the first free slot that is not :data:`RESERVED` (red, orange: minilm_l6_v2's
    Transpose fell to red and read as an error), one no other op type of the model calls its family's when there
    is one (so that the family keeps it): at least the 13 most frequent op types get pairwise distinct colours
    (CIE76 difference >= 15). Once every slot is taken, the next op types get the :data:`EXTRA` colours in
    order, so up to 33 op types are all apart, as the legend of a picture lists them (nudenet_320n's 21: its
    Resize was drawn in the purple of the MaxPool row); the rest get their family colour.
    """
    counts = Counter(op_types)
    order = sorted(counts, key=lambda o: (-counts[o], o))
    taken: set[str] = set()
    out: dict[str, QColor] = {}
    homes = {_home(op) for op in order}
    extra = iter(EXTRA)
    for op in order:
        home = _home(op)
        free = [s for s in _FALLBACK if s not in taken]
        if home in taken and not free:  # every slot is taken: an extra colour while there is one
            out[op] = QColor(next(extra, SLOTS[home]))
            continue
        slot = home if home not in taken else next((s for s in free if s not in homes), free[0])
        taken.add(slot)
        out[op] = QColor(SLOTS[slot])
    return out


def op_color(op_type: str) -> QColor:
    """Fill colour of an op type on its own (its family's slot of :data:`SLOTS`); the canvas colours a
    model's nodes with :func:`op_palette`, which moves the less frequent of two same-slot ops away."""
    return QColor(SLOTS[_home(op_type)])


_DTYPE_COLORS = {
    "float": "#eceff1", "float16": "#b3e5fc", "bfloat16": "#81d4fa", "double": "#dfe6ea",
    "int8": "#ffb74d", "uint8": "#ffd54f", "int16": "#ba68c8", "uint16": "#ce93d8",
    "int4": "#e57373", "uint4": "#f06292",
    "float8e4m3fn": "#4db6ac", "float8e5m2": "#26a69a",
    # shape and index math (Shape -> Gather -> Concat -> Reshape), masks: calm greys, never a warning colour
    "int32": "#90a4ae", "int64": "#b0bec5", "uint32": "#a3b5bf", "uint64": "#c5d0d6", "bool": "#bcaaa4",
}
#: dtypes of shape / index computation and masks (int64 Shape outputs, Gather indices, bool Where conditions)
INDEX_DTYPES = frozenset({"int32", "int64", "uint32", "uint64", "bool"})
#: hues (degrees) a dtype without a colour of its own may take: clear of red, orange and yellow (0 - 70 and
#: 330 - 360), which read as errors and warnings (int64 hashed to 358, a bright red)
_FREE_HUES = (75, 320)
_DTYPE_ALIASES = {"float32": "float", "fp32": "float", "f32": "float", "float64": "double", "fp64": "double",
                  "fp16": "float16", "half": "float16", "bf16": "bfloat16", "i8": "int8", "u8": "uint8", "i16": "int16", "u16": "uint16",
                  "i4": "int4", "u4": "uint4", "fp8": "float8e4m3fn", "float8e4m3": "float8e4m3fn",
                  "f8e4m3": "float8e4m3fn", "f8e5m2": "float8e5m2", "i32": "int32", "i64": "int64"}
#: the SQNR (dB) the app gives the canvas for +inf (bit-exact, no noise; -INF_DB for -inf, all noise), as the
#: Errors bars draw it (``error_view.INF_SQNR_DB``); group boxes say what it stands for
INF_DB = 100.0
#: fill of the "INT" mark on integer kernels
KERNEL_MARK = QColor("#a5d6a7")
#: the bar under the op type that stands for the "INT" mark where the view is too far out for its text
KERNEL_BAND = QColor("#1b5e20")
#: the dashed outline of a node the recipe keeps float (excluded: the inspector, the recipe choice or the
#: latency check), drawn in every colour mode; the op legend names it
FLOAT_MARK = QColor("#0d47a1")
#: the same outline on a dark canvas: the dark blue was barely seen on the dark theme's #333336 group frames
FLOAT_MARK_DARK = QColor("#90caf9")

#: SQNR (dB) -> colour stops of the error colour map, red (bad) to green (good): the core's
#: :data:`workbench.core.report.sqnr_bands.SQNR_STOPS`, which the HTML report draws with too
ERROR_STOPS: list[tuple[float, QColor]] = [(db, QColor(hex_colour)) for db, hex_colour in SQNR_STOPS]


def normalize_dtype(name: str) -> str:
    key = name.strip().lower().replace("_", "")
    return _DTYPE_ALIASES.get(key, key)


def dtype_color(name: str | None) -> QColor:
    """Fill colour of a dtype name (``"int8"``, ``"float"``, aliases such as ``"u8"``): quantized dtypes
    in strong colours, float types pale blues, shape / index dtypes (:data:`INDEX_DTYPES`) calm greys; any
    other a stable hue from md5 of its name, outside the red-orange-yellow range."""
    if not name:
        return QColor(NO_VALUE)
    key = normalize_dtype(name)
    if key in _DTYPE_COLORS:
        return QColor(_DTYPE_COLORS[key])
    digest = hashlib.md5(key.encode("utf-8")).digest()
    lo, hi = _FREE_HUES
    return QColor.fromHsv(lo + digest[0] * (hi - lo) // 256, 120, 220)


def badge_color(text: str) -> QColor:
    """Fill of a collapsed Q/DQ badge (``"u8"``, ``"i8 u8"``): the colour of its last dtype."""
    last = text.split()[-1] if text.split() else ""
    return dtype_color(last.split(":")[-1]) if last else QColor("#ffcc80")


def error_color(sqnr_db: float | None) -> QColor:
    """Colour of a signal-to-quantization-noise ratio in dB: <= 5 dB red, >= 45 dB green.

    Piecewise-linear RGB interpolation between :data:`ERROR_STOPS`
    (:func:`workbench.core.report.sqnr_bands.sqnr_hex`, the report's colours too). ``+inf`` (exact) is
    green, NaN or None is :data:`NO_VALUE`.
    """
    return QColor(sqnr_hex(sqnr_db))


def text_color(fill: QColor) -> QColor:
    """Black or white, whichever reads better on ``fill`` (relative luminance, ITU-R BT.709)."""
    lum = 0.2126 * fill.redF() + 0.7152 * fill.greenF() + 0.0722 * fill.blueF()
    return QColor("#111111") if lum > 0.45 else QColor("#ffffff")


def float_mark(dark: bool) -> QColor:
    """The kept-float outline's colour on a dark (``True``) or a light canvas."""
    return QColor(FLOAT_MARK_DARK if dark else FLOAT_MARK)
