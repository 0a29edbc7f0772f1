"""A collapsed box's second line (the kernel inside, "13 · ConvInteger u8/u8") fits the rectangle it is drawn
in, or ends in "…" with the whole line in the box's tooltip.

The line was elided to the box's width less 16 px but drawn in its width less 18 px: a line in between was
kept whole and its last glyph cut at the box's edge ("ConvInteger u8/u"). The blocks are those of
test_quant_block_boxes (onnxruntime's dynamic quantization of three Convs, as ddddocr_common_old_int8).
"""

from __future__ import annotations

from PySide6.QtGui import QFontMetricsF
from test_quant_block_boxes import _open, dynamic_model

from workbench.core.inspection.quant_summary import summarize_quantization
from workbench.qt.canvas.groups_item import INFO_LEFT, INFO_RIGHT, _Fonts


def test_the_kernel_line_fits_its_rectangle_or_elides_with_the_tooltip(qtbot, make_canvas):
    proto = dynamic_model()
    canvas = make_canvas(1200, 900)
    _open(qtbot, canvas, proto, compute=summarize_quantization(proto).compute)
    d = canvas._state.data
    g = next(g for g in d.group_ids if g in d.placement.collapsed)
    line = canvas._state.group_texts[g]
    assert line == "ConvInteger u8/u8"
    _Fonts.ensure()
    metrics = QFontMetricsF(_Fonts.info)
    short = f"13 \u00b7 {line}"
    need = metrics.horizontalAdvance(short)
    for width in (need + 17, need + 18, need + INFO_LEFT + INFO_RIGHT + 0.5, need + 40):
        _title, info = canvas._groups_item.box_texts(g, width)
        drawn = width - INFO_LEFT - INFO_RIGHT  # the rectangle the line is drawn in
        assert metrics.horizontalAdvance(info) <= drawn - 2, (width, info)
        assert info in (short, f"13 nodes \u00b7 {line}") or info.endswith("\u2026"), (width, info)
    assert canvas._groups_item.box_texts(g, need + 40)[1] == short  # room: whole
    assert line in canvas._group_tooltip(g)  # cut: the whole line in the tooltip
