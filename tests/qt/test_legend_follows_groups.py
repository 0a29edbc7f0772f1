"""The live dtype legend explains edge badges, node tags and INT marks only where the view draws them: with every
group of an exported file collapsed (nudenet_320n's Exported tab) it explained INT marks no node showed, as a
rendered picture already did not. It now follows the groups opened and closed and the zoom (below the scale that
keeps the marks readable none is drawn, and the bar that stands for an INT mark is explained instead)."""

from __future__ import annotations

from test_quant_block_boxes import _open, dynamic_model

from workbench.core.inspection.quant_summary import summarize_quantization
from workbench.qt.canvas.items import TEXT_SCALE
from workbench.qt.canvas.legend import GROUP_KERNELS_NOTE, marks_drawn

INT32 = "int32: quantized biases and integer accumulators, or indices (grey)"
EDGES = "edges coloured by the dtype they carry; grey: float"
INT = "INT: integer kernel (or a QDQ unit fused into one)"
BAND = "dark green bar under the op type: integer kernel (INT when zoomed in)"
COLLAPSED = ["dtype in the file", "float", "int32", "uint8", INT32, GROUP_KERNELS_NOTE]
ONE_OPEN = ["dtype in the file", "float", "int32", "uint8", INT32, EDGES, INT, GROUP_KERNELS_NOTE]


def _lines(canvas) -> list[str]:
    return canvas.legend_overlay.text().splitlines()


def test_legend_follows_groups_opened_and_closed(qtbot, make_canvas):
    proto = dynamic_model()  # three ConvInteger units, each a group of 13 nodes
    canvas = make_canvas(1200, 900)
    _open(qtbot, canvas, proto, compute=summarize_quantization(proto).compute)
    assert canvas.expanded_groups() == [] and marks_drawn(canvas)  # all collapsed, at a scale that draws marks
    assert _lines(canvas) == COLLAPSED  # it said "INT: integer kernel ..." with every kernel inside a box
    first = canvas.groups()[0]
    canvas.expand_group(first)
    assert canvas.expanded_groups() == [first]
    assert _lines(canvas) == ONE_OPEN  # its ConvInteger drawn with its INT mark: explained
    canvas.collapse_group(first)
    assert _lines(canvas) == COLLAPSED


def test_legend_follows_the_zoom_past_the_marks(qtbot, make_canvas):
    proto = dynamic_model()
    canvas = make_canvas(1200, 900)
    _open(qtbot, canvas, proto, compute=summarize_quantization(proto).compute)
    canvas.expand_group(canvas.groups()[0])
    assert _lines(canvas) == ONE_OPEN
    while canvas.transform().m11() >= TEXT_SCALE:  # zoomed out until no mark is drawn
        canvas.zoom_out()
    assert not marks_drawn(canvas)
    # the kernel's bar stands for its INT pill there, and is explained instead
    assert INT not in _lines(canvas) and _lines(canvas) == [BAND if line == INT else line for line in ONE_OPEN]
    while not marks_drawn(canvas):
        canvas.zoom_in()
    assert _lines(canvas) == ONE_OPEN
