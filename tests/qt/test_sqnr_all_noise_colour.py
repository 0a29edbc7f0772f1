"""A unit whose accumulated SQNR is -inf (all noise, no signal left) is the worst a unit can be: the app's canvas
drew it grey ("no value", as if float or not measured) while ``workbench-cli render --colour sqnr`` draws it red
at -100 dB (commit 9a5877d). Now the app draws it red too, and the SQNR legend says so."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

from latency_fakes import quantized_faster
from outlier_chain import outlier_chain
from test_app_stale_results import calibrated

from workbench.cli_sqnr_colours import node_sqnr
from workbench.qt.canvas import colors
from workbench.qt.canvas.colors import error_color
from workbench.qt.canvas.legend import legend_entries
from workbench.qt.error_rank import SQNR_NOTES, canvas_sqnr
from workbench.qt.error_view import INF_SQNR_DB

RED = colors.ERROR_STOPS[0][1].name()


def _row(node: str, db: float):
    return SimpleNamespace(node=node, sqnr_db=db)


def test_canvas_sqnr_draws_all_noise_red_as_render_does():
    units = {"conv": SimpleNamespace(nodes=["conv", "relu"]), "gemm": SimpleNamespace(nodes=["gemm"])}
    rows = [_row("conv", -math.inf), _row("gemm", math.inf), _row("pool", 12.5), _row("mm", math.nan)]
    values = canvas_sqnr(rows, INF_SQNR_DB, units)
    assert values == {"conv": -100.0, "relu": -100.0, "gemm": 100.0, "pool": 12.5}  # NaN: left out (grey)
    assert values == node_sqnr(rows, units)  # the figures render colours by
    assert error_color(values["conv"]).name() == RED  # the worst band, not grey
    assert error_color(values["conv"]).name() != colors.NO_VALUE.name()
    assert SQNR_NOTES[0] == "linear between the stops; bit-exact shown as 100 dB, all noise (-inf) as -100 dB (red)"


def test_a_unit_with_no_signal_left_is_red_on_the_canvas(qtbot, window, open_file, tmp_path, monkeypatch):
    quantized_faster(monkeypatch)  # nothing kept float by a timing on a loaded machine
    calibrated(qtbot, window, open_file, outlier_chain(tmp_path), samples=40, choose=False)
    win = window
    worst = win.doc.errors[0].node
    win.doc.errors = [dataclasses.replace(r, sqnr_db=-math.inf) if r.node == worst else r for r in win.doc.errors]
    win.errors.set_rank("accumulated")
    win.color_by_sqnr()
    assert win.canvas.color_mode() == "error"
    assert win.canvas.node_color(worst).name() == RED  # was NO_VALUE grey
    others = [r for r in win.doc.errors if r.node != worst and math.isfinite(r.sqnr_db)]
    assert others and all(win.canvas.node_color(r.node) == error_color(round(r.sqnr_db * 4) / 4) for r in others)
    title, rows, notes = legend_entries(win.canvas)
    assert title == "SQNR (dB)" and notes == SQNR_NOTES
    assert rows[0][0] == "<= 5 dB" and rows[0][1].name() == RED
    assert "all noise (-inf) as -100 dB (red)" in notes[0]
