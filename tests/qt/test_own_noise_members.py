"""The canvas's "own noise" colours every node of a unit by the unit's figure; grey only where no figure is.

ppocr_mobile_v2_cls (cpu-u8s8, 8 calibration rows, the bare preset): its Add + Clip, Add + Relu and Conv +
Relu units are one quantized unit each, with one own-noise figure, yet only their first node (Add, Conv)
was coloured: the Clip and Relu of each stayed grey, as if float. The HardSigmoid and Div nodes whose
outputs are quantized only as the next unit's input have no figure of their own (their rounding counts in
that unit's): they stay grey, and the legend says so.
"""

from __future__ import annotations

from latency_fakes import quantized_faster
from test_app_stale_results import calibrated

from workbench.qt.canvas.colors import NO_VALUE, error_color
from workbench.qt.canvas.legend import legend_entries
from workbench.qt.error_rank import local_db
from workbench.qt.error_view import INF_SQNR_DB


def test_every_node_of_a_unit_takes_its_own_noise_colour(qtbot, window, open_file, corpus, monkeypatch):
    quantized_faster(monkeypatch)  # nothing kept float by a timing on a loaded machine
    win = window
    calibrated(qtbot, win, open_file, corpus / "ppocr_mobile_v2_cls/model.onnx", samples=8, choose=False)
    win.color_mode.setCurrentText("own noise")
    assert win.canvas.color_mode() == "error"
    ops = {n.name: n.op_type for n in win.doc.model.proto.graph.node}
    members = 0
    for name, unit in win.doc.plan.units.items():
        value = local_db(win.doc.local.get(name))
        if value != value or len(unit.nodes) < 2:
            continue
        want = error_color(round(min(value, INF_SQNR_DB) * 4) / 4)
        for node in unit.nodes:
            assert win.canvas.node_color(node) == want, (name, node, ops[node], value)
        members += len(unit.nodes) - 1
    assert members >= 30  # 18 Clips and 15 Relus of fused units (of 33 such units)
    clips = [n for n in win.canvas.node_names() if ops[n] == "Clip"]
    assert clips and all(win.canvas.node_color(n) != NO_VALUE for n in clips)
    # grey: nodes with no figure of their own (the HardSigmoids), and the legend says what grey is
    hard = [n for n in win.canvas.node_names() if ops[n] == "HardSigmoid"]
    assert hard and all(win.canvas.node_color(n) == NO_VALUE for n in hard)
    _title, rows, notes = legend_entries(win.canvas)
    assert rows[-1] == ("no value", NO_VALUE)
    assert any(n.startswith("no value (grey): float nodes") and "another unit's input" in n for n in notes)
