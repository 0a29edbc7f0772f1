"""Group boxes and node tooltips under the sensitivity colouring name the sweep's figure, not its
colour rank (pytest-qt, offscreen, ppocr_mobile_v2_cls).

The canvas draws a sweep figure as ranks stretched over the SQNR colours (most sensitive unit at
5 dB, least at 45 dB); group boxes showed that rank as a figure ("worst 5.0 dB" beside a legend of
67.1-109.5 dB) and boxes holding no swept unit kept the plain box fill, a colour the legend does not
have.
"""

from __future__ import annotations

import math

import pytest

from workbench.qt.canvas import colors

MODEL = "ppocr_mobile_v2_cls/model.onnx"


@pytest.mark.slow
def test_groups_name_the_most_sensitive_figure(qtbot, window, open_file, corpus):
    open_file(window, corpus / MODEL)
    with qtbot.waitSignal(window.runs.finished, timeout=540_000):
        window.act_sensitivity.trigger()
    assert window.doc.sensitivity is not None, window.status_label.text()
    window.color_by_sensitivity()
    canvas = window.canvas
    # an SQNR figure is coloured by its value on the app's SQNR bands (no scale of its own, not by rank)
    assert canvas.color_mode() == "error" and canvas.error_scale is None
    figure = window.sensitivity.current_figure()
    real = {r.node: getattr(r, figure) for r in window.doc.sensitivity.rows if not math.isnan(getattr(r, figure))}
    lo = min(real.values())

    canvas.expand_all()  # every group and sub-group drawn, as a frame with its figure in the title
    state = canvas._state
    h = state.data.hierarchy
    names = state.data.structure.names
    with_value = without = 0
    for g in state.data.group_ids:
        swept = [real[names[i]] for i in h.members(g).tolist() if names[i] in real]
        if swept:  # the figure of its most sensitive unit (the lowest: "only quantized" is worse when lower)
            assert state.group_texts[g] == f"most sensitive {min(swept):.1f} dB", h.paths[g]
            with_value += 1
        else:  # no unit of it was swept: drawn as the legend's "no value", and said so
            assert state.group_texts[g] == "no value", h.paths[g]
            assert state.group_fills[g] == colors.NO_VALUE, h.paths[g]
            without += 1
    assert with_value >= 20 and without >= 10  # 32 of its 135 units are swept (the top 32 by own error)
    worst_group = min((g for g in state.data.group_ids if g in state.group_texts and state.group_texts[g] != "no value"),
                      key=lambda g: float(state.group_texts[g].split()[2]))
    assert state.group_texts[worst_group] == f"most sensitive {lo:.1f} dB"
    assert state.group_fills[worst_group] == colors.error_color(lo)  # its value's colour on the bands

    # the most sensitive node's tooltip names its figure too
    worst = window.doc.sensitivity.rows[0].node
    tip = canvas.tooltip_text(worst)
    assert f"Sensitivity: Only quantized: {real[worst]:.1f} dB" in tip and "SQNR" not in tip
