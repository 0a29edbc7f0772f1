"""The canvas's accumulated SQNR colours every node of a unit by the unit's figure; grey only where no figure is.

ppocr_mobile_v2_cls (cpu-u8s8, 8 calibration rows, the bare preset): its Add + Clip, Add + Relu and Conv +
Relu units are one quantized unit each, with one SQNR row (keyed by the unit's first node), yet only that
first node (Add, Conv) was coloured: the Clip and Relu of each stayed grey, as if float, beside it. The
HardSigmoid nodes whose outputs are quantized only as the next unit's input have no row of their own: they
stay grey, and the legend says so.
"""

from __future__ import annotations

from workbench.qt.canvas.legend import legend_entries
from workbench.qt.error_rank import SQNR_NOTES


def test_every_node_of_a_unit_takes_its_accumulated_sqnr_colour(window, fused_units):
    win = window
    win.errors.set_rank("accumulated")  # the button colours the canvas by the accumulated SQNR
    win.errors.color_button.click()
    assert win.canvas.color_mode() == "error" and win.canvas.error_label() == "SQNR (dB)"
    assert fused_units({r.node: r.sqnr_db for r in win.doc.errors}) >= 30  # the Clips and Relus of fused units
    assert legend_entries(win.canvas)[2][0] == SQNR_NOTES[0]
