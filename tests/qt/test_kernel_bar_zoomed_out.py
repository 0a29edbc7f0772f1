"""Zoomed out past the "INT" pill's readable size (view scale below TEXT_SCALE, 0.55) an integer kernel's node keeps a
mark: a dark green bar under its op type, drawn by the node item (0.3 to 0.55) and, in one batch per paint, by the
overview (below 0.3); a quantized file opened zoomed out read as float there, its nodes showing their op type alone.
A node that is no kernel has no bar, nor has any node once the file's kernels are cleared. The legend names the bar
instead of the pill. Pixels of the viewport, offscreen."""

from __future__ import annotations

import pytest
from test_int4_qdq_as_run import int4_qdq_model

pytest.importorskip("PySide6")


from workbench.core.inspection.quant_summary import summarize_quantization  # noqa: E402
from workbench.qt.canvas.colors import KERNEL_BAND  # noqa: E402
from workbench.qt.canvas.group_labels import MARK_PX  # noqa: E402
from workbench.qt.canvas.items import NODE_H, TEXT_SCALE  # noqa: E402
from workbench.qt.canvas.legend import INT_NOTE, KERNEL_BAND_NOTE, legend_entries  # noqa: E402
from workbench.qt.quant_tab import quant_info  # noqa: E402


def _open(qtbot, canvas, proto, kernels: bool) -> None:
    summary = summarize_quantization(proto)
    info = quant_info(summary, [], proto)
    if not kernels:
        info = (info[0], {}, *info[2:])
    canvas.set_quant_info(*info)
    with qtbot.waitSignal(canvas.layoutReady, timeout=300_000):
        canvas.set_model(proto, collapse_qdq=True, depth=9)  # every group open: the MatMuls drawn
    canvas.set_node_values(dtypes=summary.node_dtypes)
    canvas.set_color_mode("dtype")


def _zoom(view, scale: float, name: str) -> None:
    """View scale ``scale`` with node ``name`` at the viewport's centre (the canvas shows the items of that scale)."""
    view._zoom(scale / view.transform().m11(), view.viewport().rect().center(), view.node_scene_rect(name).center())
    assert abs(view.transform().m11() - scale) < 1e-9


def _bar_pixels(image, view, name: str) -> int:
    """How many viewport pixels inside node ``name``'s box, or in the MARK_PX + 1 rows under it, have the kernel bar's
    colour exactly (where the op type's screen-size chip is as high as the box, its bar lies under the glyphs, so
    partly under the box: test_kernel_mark_under_text)."""
    box = view.viewportTransform().mapRect(view.node_scene_rect(name)).toAlignedRect().adjusted(0, 0, 0, MARK_PX + 1)
    band = KERNEL_BAND.rgb()
    return sum(image.pixel(x, y) == band for x in range(max(box.left(), 0), min(box.right() + 1, image.width()))
               for y in range(max(box.top(), 0), min(box.bottom() + 1, image.height())))


@pytest.mark.parametrize("scale", [0.2, 0.45])
@pytest.mark.parametrize("kernels", [True, False])
def test_integer_kernels_keep_a_bar_zoomed_out(qtbot, make_canvas, scale, kernels):
    proto = int4_qdq_model(2)  # two MatMuls onnxruntime fuses into MatMulNBits: "INT" when zoomed in
    canvas = make_canvas(900, 900)
    _open(qtbot, canvas, proto, kernels)
    mms = ["blk0/mm0", "blk0/mm1"]
    assert set(canvas.node_names()) >= set(mms)
    _zoom(canvas, scale, mms[0])
    assert canvas.overview_visible() == (scale < 0.3)
    image = canvas.viewport().grab().toImage()
    for name in mms:
        box = canvas.node_scene_rect(name)
        assert box.height() == NODE_H
        # the bar: NODE_W - 12 by 14 scene pixels (at 0.2: 27 x 2.8 px; its op type's screen-size chip, drawn over
        # the box there, has a 3 px bar under its text instead)
        bar = _bar_pixels(image, canvas, name)
        assert (bar >= 40) if kernels else bar == 0, (name, bar)
    notes = legend_entries(canvas)[2]
    assert (KERNEL_BAND_NOTE in notes) == kernels and INT_NOTE not in notes


def test_the_pill_not_the_bar_zoomed_in(qtbot, make_canvas):
    proto = int4_qdq_model(2)
    canvas = make_canvas(900, 900)
    _open(qtbot, canvas, proto, True)
    for scale in (TEXT_SCALE + 0.02, 1.0):  # the pill from TEXT_SCALE up (as large as the op type at first)
        _zoom(canvas, scale, "blk0/mm0")
        image = canvas.viewport().grab().toImage()
        assert _bar_pixels(image, canvas, "blk0/mm0") == 0
        notes = legend_entries(canvas)[2]
        assert INT_NOTE in notes and KERNEL_BAND_NOTE not in notes
