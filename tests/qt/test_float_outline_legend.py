"""The dashed outline of nodes kept float is explained in every colour mode's legend, since it is drawn in every mode
(pytest-qt, offscreen).

docs/pictures/nudenet_320n_fit_sqnr.png drew model.0 - model.4 and model.22 with the dashed blue outline of nodes the
recipe keeps float, and its SQNR legend did not say what the outline was: only the op colouring's legend had the note
("dashed dark blue outline: kept float (N nodes)"); the dtype colouring drew it unexplained too."""

from __future__ import annotations

import pytest
from graph_models import blocks_model
from PySide6.QtGui import QColor

from workbench.qt.canvas.legend import legend_entries

KEPT = ["/blk0/Relu_0", "/blk0/Relu_1", "/blk0/Relu_2", "/blk2/Relu_1"]


def _outlined(canvas) -> int:
    """Collapsed boxes drawn with the dashed outline (the canvas's own record of what it draws)."""
    return len(canvas._groups_item.float_boxes())


@pytest.mark.parametrize("mode", ["op", "dtype", "error"])
def test_every_mode_explains_the_kept_float_outline(qtbot, make_canvas, mode):
    canvas = make_canvas(900, 700)
    with qtbot.waitSignal(canvas.layoutReady, timeout=300_000):
        canvas.set_model(blocks_model(3, 3), depth=0)
    names = [f"/blk{b}/Relu_{i}" for b in range(3) for i in range(3)]
    canvas.set_node_values(
        dtypes={n: "uint8" for n in names if n not in KEPT}, errors={n: 30.0 for n in names if n not in KEPT}
    )
    canvas.set_color_mode(mode)
    canvas.set_float_nodes(KEPT)
    assert _outlined(canvas) == 2  # blk0 and blk2 drawn dashed in this mode
    assert canvas._state.float_mark != QColor()
    notes = legend_entries(canvas)[2]
    assert "dashed dark blue outline: kept float (4 nodes)" in notes, notes  # was only in the op mode
    canvas.set_float_nodes([])
    assert not any("dashed" in n for n in legend_entries(canvas)[2])
