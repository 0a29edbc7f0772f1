"""A collapsed group of a file the app exported that runs an integer kernel is filled with that kernel's dtype, and
the legend says what the fill and the box's "N% quantized" mean (pytest-qt, offscreen).

The Exported tab of ppocrv4_rec (cpu-u8s8) drew its blocks "Conv.1 - Add.6: 7 nodes · 14% quantized" float-white,
though each runs its Conv as a QLinearConv (INT-marked when opened): the fill followed the share of the nodes
quantized (under half: float), so no collapsed box told the integer blocks from the float ones, and the legend named
no rule for the boxes. ``workbench-cli render`` of the same file filled them uint8."""

from __future__ import annotations

from test_quant_block_boxes import _open, boxes, dynamic_model

from workbench.qt.canvas import colors
from workbench.qt.canvas.legend import FRACTION_BOX_NOTE, legend_entries


def _fills(canvas) -> list[str]:
    d = canvas._state.data
    rows = sorted((d.gy0[k], g) for k, g in enumerate(d.group_ids) if g in d.placement.collapsed)
    return [canvas._state.group_fills[g].name() for _, g in rows]


def test_box_holding_an_integer_kernel_takes_its_dtype(qtbot, make_canvas):
    canvas = make_canvas(1200, 900)
    _open(qtbot, canvas, dynamic_model())  # as the Exported tab: the file's kernels, no compute dtypes
    assert [info for _, info in boxes(canvas)] == ["13 nodes \u00b7 8% quantized"] * 3  # the text stays
    kernel = canvas._state.kernels
    assert len(kernel) == 3 and all("ConvInteger" in k for k in kernel.values())
    dtype = {i: key for i, key in enumerate(canvas._state.fill_keys) if i in kernel}
    assert set(dtype.values()) == {"uint8"}, dtype
    # was float-white (#eceff1-like) for 1 quantized node of 13
    assert _fills(canvas) == [colors.dtype_color("uint8").name()] * 3
    assert colors.dtype_color("uint8").name() != colors.dtype_color("float").name()


def test_legend_explains_the_box_fill_and_share(qtbot, make_canvas):
    canvas = make_canvas(1200, 900)
    _open(qtbot, canvas, dynamic_model())
    title, _rows, notes = legend_entries(canvas)
    assert title.startswith("dtype in the file")
    assert FRACTION_BOX_NOTE in notes
    canvas.expand_all()  # no collapsed box shown: no note on boxes
    qtbot.waitUntil(lambda: not canvas._state.data.placement.collapsed, timeout=60_000)
    assert FRACTION_BOX_NOTE not in legend_entries(canvas)[2]


def test_plan_without_kernels_keeps_the_share_rule(qtbot, make_canvas):
    """No integer kernel known (the Graph tab's recipe): the fill still follows the share quantized."""
    from workbench.qt.canvas.group_figures import group_figures

    canvas = make_canvas(1200, 900)
    _open(qtbot, canvas, dynamic_model())
    s = canvas._state
    groups = [g for g in s.data.group_ids if g in s.data.placement.collapsed]
    fills, _ = group_figures(
        s.data.hierarchy, groups, "dtype", canvas._state.fill_keys, ops=s.data.structure.op_types
    )
    assert {c.name() for c in fills.values()} == {colors.dtype_color("float").name()}
