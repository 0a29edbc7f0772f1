"""Where the error comes from: the Errors bars rank by each unit's own noise (local SQNR) or by its accumulated
SQNR, both figures on every bar; the canvas's "own noise" colours; the choice kept with the project.

The model: a MatMul chain whose first MatMul (mm0) reads an input with one outlier, so mm0's coarse 8-bit
input grid makes all the output noise. Accumulated, every MatMul sits at about 12 dB and mm0 comes LAST
(12.18 dB, mm5 first at 12.10 dB); by its own noise mm0 comes first (12.2 dB; the others add 32 dB or less
noise)."""

from __future__ import annotations

import math

from latency_fakes import quantized_faster
from outlier_chain import outlier_chain
from test_app_stale_results import calibrated

from workbench.core import api
from workbench.qt.canvas.colors import error_color
from workbench.qt.canvas.legend import legend_entries
from workbench.qt.error_rank import LOCAL_LABEL, LOCAL_NOTES, SQNR_NOTES
from workbench.qt.error_view import INF_SQNR_DB


def _chain(qtbot, window, open_file, tmp_path, monkeypatch):
    quantized_faster(monkeypatch)  # nothing kept float by a timing on a loaded machine
    path = outlier_chain(tmp_path)
    res = calibrated(qtbot, window, open_file, path, samples=40, choose=False)  # the bare preset: mm0 quantized
    return window, path, res


def _local_of(model_path, recipe) -> dict[str, float]:
    """The local SQNR the core computes for the same model, recipe and rows (40 calibration, 8 analysis)."""
    model = api.open_model(model_path)
    result = api.quantize(model, recipe, data=str(model_path.parent / "calib.npz"), samples=40)
    rows = api.analyze(model, result, str(model_path.parent / "calib.npz"), samples=8)
    return {s.node: s.local_sqnr_db for s in api.local_sensitivity(result.plan, rows, graph=model.proto.graph)}


def test_bars_rank_by_accumulated_or_own_noise_and_show_both_figures(qtbot, window, open_file, tmp_path, monkeypatch):
    win, path, _res = _chain(qtbot, window, open_file, tmp_path, monkeypatch)
    view = win.errors
    local = _local_of(path, win.doc.recipe)
    acc = {r.node: r.sqnr_db for r in win.doc.errors}
    assert min(acc, key=acc.get) != "mm0"  # accumulated, the unit that makes the noise is not the worst bar

    # the bars start ranked by accumulated SQNR (every unit has one; many have no own-noise figure)
    assert view.rank_box.currentData() == "accumulated" and view.shown_rank() == "accumulated"
    assert [r.node for r in view.rows] == sorted(acc, key=lambda n: (acc[n], n))
    # own noise: the first bar is mm0, its length its local SQNR, its tick the accumulated figure
    view.rank_box.setCurrentIndex(view.rank_box.findData("local"))
    assert view.shown_rank() == "local"
    assert view.rows[0].node == "mm0"
    order = sorted(local, key=lambda n: (local[n], acc[n], n))  # ties by accumulated
    assert [r.node for r in view.rows] == order
    assert view.bar_values() == [INF_SQNR_DB if local[n] == math.inf else local[n] for n in order]
    assert view.tick_values() == [acc[n] for n in order]
    assert view.bar_values()[0] == local["mm0"] and view.tick_values()[0] == acc["mm0"]
    colours = [b.color().name() for b in view._bars.opts["brushes"]]
    assert colours[0] == error_color(local["mm0"]).name()
    assert colours[-1] == error_color(local[order[-1]]).name()  # measured on float inputs: none reads "inf"
    assert all(math.isfinite(v) for v in local.values())
    assert f"most own noise mm0 at {local['mm0']:.1f} dB local SQNR ({acc['mm0']:.1f} dB accumulated)" \
        in view.summary.text()
    assert "tick: accumulated SQNR" in view.bar_legend.text()
    assert view.bars_plot.getAxis("bottom").labelText == "own noise: local SQNR"
    assert view.bar_tooltip(0).startswith(f"mm0 (MatMul): output SQNR {acc['mm0']:.1f} dB; its own noise " \
                                  f"{local['mm0']:.1f} dB (local SQNR); weight ")
    assert view.color_button.text() == "Colour canvas by own noise"

    # switched: accumulated SQNR, mm0 last, its tick its own noise
    view.rank_box.setCurrentIndex(view.rank_box.findData("accumulated"))
    by_acc = sorted(acc, key=lambda n: (acc[n], n))
    assert [r.node for r in view.rows] == by_acc and view.rows[-1].node == "mm0"
    assert view.bar_values() == [acc[n] for n in by_acc]
    assert view.tick_values()[-1] == local["mm0"]
    worst = by_acc[0]
    assert f"worst {worst} at {acc[worst]:.1f} dB (its own noise {local[worst]:.1f} dB)" in view.summary.text()
    assert "tick: own noise: local SQNR" in view.bar_legend.text()
    assert view.color_button.text() == "Colour canvas by SQNR"


def test_the_canvas_colours_by_own_noise_with_its_legend(qtbot, window, open_file, tmp_path, monkeypatch):
    win, path, _res = _chain(qtbot, window, open_file, tmp_path, monkeypatch)
    local = _local_of(path, win.doc.recipe)
    acc = {r.node: r.sqnr_db for r in win.doc.errors}
    win.errors.set_rank("local")
    win.errors.color_button.click()  # ranked by own noise: the canvas by own noise
    assert win.color_mode.currentText() == "own noise" and win.canvas.color_mode() == "error"
    assert win.canvas.node_color("mm0") == error_color(round(local["mm0"] * 4) / 4)  # red-orange: the source
    assert win.canvas.node_color("mm4") == error_color(round(local["mm4"] * 4) / 4)  # 50 dB: green
    assert win.canvas.node_color("mm6") == error_color(round(local["mm6"] * 4) / 4)  # it read "inf", derived
    assert win.canvas.node_color("mm4") != win.canvas.node_color("mm0")
    title, rows, notes = legend_entries(win.canvas)
    assert title == LOCAL_LABEL and notes == LOCAL_NOTES
    assert f"Own noise, local SQNR: {local['mm4']:.1f} dB" in win.canvas.tooltip_text("mm4")
    assert [label for label, _c in rows] == ["<= 5 dB", "15 dB", "25 dB", "35 dB", ">= 45 dB", "no value"]

    win.color_mode.setCurrentText("error")  # back to the accumulated SQNR: mm4 as noisy as mm0
    assert win.canvas.error_label() == "SQNR (dB)"
    assert win.canvas.node_color("mm4") == error_color(round(acc["mm4"] * 4) / 4)
    assert legend_entries(win.canvas)[2] == SQNR_NOTES
    assert f"SQNR: {acc['mm4']:.1f} dB" in win.canvas.tooltip_text("mm4")
    win.color_mode.setCurrentText("own noise")  # chosen in the colour box
    assert win.canvas.error_label() == LOCAL_LABEL
    assert win.canvas.node_color("mm4") == error_color(round(local["mm4"] * 4) / 4)


def test_the_ranking_and_own_noise_colours_come_back_with_the_project(qtbot, window, open_file, tmp_path,
                                                                       monkeypatch):
    win, path, _res = _chain(qtbot, window, open_file, tmp_path, monkeypatch)
    win.errors.set_rank("accumulated")
    win.color_by_local()
    project = win.save_project_to(tmp_path / "chain.wbproj")
    open_file(win, path)  # the model alone: no results
    win.errors.set_rank("local")
    assert win.color_mode.currentText() == "op"
    open_file(win, project)
    qtbot.waitUntil(lambda: bool(win.errors.rows), timeout=60_000)
    assert win.errors.rank_box.currentData() == "accumulated" and win.errors.rows[-1].node == "mm0"
    assert win.color_mode.currentText() == "own noise" and win.canvas.error_label() == LOCAL_LABEL

    win.errors.set_rank("local")
    win.color_by_sqnr()
    win.save_project_to(project)
    open_file(win, path)
    open_file(win, project)
    qtbot.waitUntil(lambda: bool(win.errors.rows), timeout=60_000)
    assert win.errors.rank_box.currentData() == "local" and win.errors.rows[0].node == "mm0"
    assert win.color_mode.currentText() == "error" and win.canvas.error_label() == "SQNR (dB)"

