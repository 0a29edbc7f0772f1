"""The canvas's "own noise" colours every node of a unit by the unit's figure; grey only where no figure is.

ppocr_mobile_v2_cls (cpu-u8s8, 8 calibration rows, the bare preset): its Add + Clip, Add + Relu and Conv +
Relu units are one quantized unit each, with one own-noise figure, yet only their first node (Add, Conv)
was coloured: the Clip and Relu of each stayed grey, as if float. The HardSigmoid and Div nodes whose
outputs are quantized only as the next unit's input have no figure of their own (their rounding counts in
that unit's): they stay grey, and the legend says so.
"""

from __future__ import annotations

from workbench.qt.error_rank import local_db


def test_every_node_of_a_unit_takes_its_own_noise_colour(window, fused_units):
    win = window
    win.color_mode.setCurrentText("own noise")
    assert win.canvas.color_mode() == "error"
    figures = {name: local_db(win.doc.local.get(name)) for name in win.doc.plan.units}
    assert fused_units(figures) >= 30  # 18 Clips and 15 Relus of fused units (of 33 such units)
