"""The canvas's accumulated SQNR colours every node of a unit by the unit's figure; grey only where no figure is.

ppocr_mobile_v2_cls (cpu-u8s8, 8 calibration rows, the bare preset): its Add + Clip, Add + Relu and Conv +
Relu units are one quantized unit each, with one SQNR row (keyed by the unit's first node), yet only that
first node (Add, Conv) was coloured: the Clip and Relu of each stayed grey, as if float, beside it. The
HardSigmoid nodes whose outputs are quantized only as the next unit's input have no row of their own: they
stay grey, and the legend says so.
"""

from __future__ import annotations

import math

from latency_fakes import quantized_faster
from test_app_stale_results import calibrated

from workbench.qt.canvas.colors import NO_VALUE, error_color
from workbench.qt.canvas.legend import legend_entries
from workbench.qt.error_view import INF_SQNR_DB


def test_every_node_of_a_unit_takes_its_accumulated_sqnr_colour(qtbot, window, open_file, corpus, monkeypatch):
    quantized_faster(monkeypatch)  # nothing kept float by a timing on a loaded machine
    win = window
    calibrated(qtbot, win, open_file, corpus / "ppocr_mobile_v2_cls/model.onnx", samples=8, choose=False)
    win.errors.set_rank("accumulated")  # the button colours the canvas by the accumulated SQNR
    win.errors.color_button.click()
    assert win.canvas.color_mode() == "error" and win.canvas.error_label() == "SQNR (dB)"
    ops = {n.name: n.op_type for n in win.doc.model.proto.graph.node}
    sqnr = {r.node: r.sqnr_db for r in win.doc.errors}
    members = 0
    for name, unit in win.doc.plan.units.items():
        value = sqnr.get(name, math.nan)
        if value != value or len(unit.nodes) < 2:
            continue
        want = error_color(round(min(value, INF_SQNR_DB) * 4) / 4)
        for node in unit.nodes:
            assert win.canvas.node_color(node) == want, (name, node, ops[node], value)
        members += len(unit.nodes) - 1
    assert members >= 30  # the Clips and Relus of fused units
    clips = [n for n in win.canvas.node_names() if ops[n] == "Clip"]
    assert clips and all(win.canvas.node_color(n) != NO_VALUE for n in clips)
    hard = [n for n in win.canvas.node_names() if ops[n] == "HardSigmoid"]
    assert hard and all(win.canvas.node_color(n) == NO_VALUE for n in hard)
    _title, rows, notes = legend_entries(win.canvas)
    assert rows[-1] == ("no value", NO_VALUE)
    assert notes[0] == "linear between the stops; bit-exact shown as 100 dB"
    assert any(n.startswith("no value (grey): float nodes") and "another unit's input" in n for n in notes)
