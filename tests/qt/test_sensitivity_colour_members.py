"""The canvas's sensitivity colours every node of a swept unit by the unit's figure; grey only where no figure is.

digits_cnn (its three Conv + Relu units, swept): the sweep has one row per unit, keyed by its first node,
and only that node (the Conv) was coloured: the Relu of each stayed grey, as if float, beside it.
"""

from __future__ import annotations

import math

from workbench.qt.canvas.colors import NO_VALUE, error_color
from workbench.qt.canvas.legend import legend_entries


def test_every_node_of_a_swept_unit_takes_its_sensitivity_colour(qtbot, window, open_file, corpus):
    win = window
    open_file(win, corpus / "digits_cnn/model_opset17.onnx")
    with qtbot.waitSignal(win.runs.finished, timeout=300_000):
        win.act_sensitivity.trigger()
    assert win.doc.sensitivity is not None, win.status_label.text()
    win.color_by_sensitivity()
    assert win.canvas.color_mode() == "error" and win.canvas.error_label().startswith("Sensitivity")
    ops = {n.name: n.op_type for n in win.doc.model.proto.graph.node}
    values = win.sensitivity.canvas_values()
    figure = win.sensitivity.current_figure()
    members = 0
    for name, unit in win.doc.plan.units.items():
        if name not in values or len(unit.nodes) < 2:
            continue
        want = error_color(round(values[name] * 4) / 4)
        real = next(getattr(r, figure) for r in win.doc.sensitivity.rows if r.node == name)
        for node in unit.nodes:
            assert win.canvas.node_color(node) == want, (name, node, ops[node])
            assert f"{real:.1f} dB" in win.canvas.tooltip_text(node), (name, node)
        members += len(unit.nodes) - 1
    relus = [n for n in ops if ops[n] == "Relu"]
    assert members == len(relus) == 3  # each Relu in its Conv's unit
    assert all(win.canvas.node_color(n) != NO_VALUE for n in relus)
    assert not math.isnan(sum(values.values()))
    _title, rows, notes = legend_entries(win.canvas)
    assert rows[-1] == ("no value", NO_VALUE)
    assert any(n.startswith("no value (grey): float nodes; units not swept") for n in notes)
