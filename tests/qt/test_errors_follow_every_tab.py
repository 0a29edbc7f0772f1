"""The Errors dock follows every kind of tab, not only the Graph and diff tabs: showing the exported file, a subgraph
body or Netron left it outlining the Graph tab's selection (a graph not shown), and nothing in those tabs moved it.

Now (workbench.qt.diff_errors.shown_view): the exported file's tab (the open model's export, the float nodes' names
kept) shows every bar and outlines the unit of its own selection; a subgraph tab shows the bars of its nodes' units,
or says it has none; Netron (the open model or its export) every bar, none outlined. Offscreen, quantized measured
faster (latency_fakes.quantized_faster: no unit kept float).
"""

from __future__ import annotations

from pathlib import Path

from bundled_example import EXAMPLE, EXAMPLE_MODEL
from cli_projects import run_ok
from diff_app import open_exported_tab, outlined, settle
from latency_fakes import quantized_faster
from shared_paths import CASES

from workbench.qt.diff_errors import NO_SUBGRAPH_FIGURES

CASE20 = CASES / "20_if_subgraph_matmul"  # If (then_mm / else_mm bodies) -> relu


def _calibrate(qtbot, win, data: Path, samples: int) -> None:
    win.calibration.set_data_spec({"kind": "npz", "path": str(data)}, samples)
    win._on_spec_changed()
    run_ok(qtbot, win, win.act_calibrate.trigger)
    qtbot.waitUntil(lambda: bool(win.errors._given), timeout=60_000)
    settle()


def _show(win, widget) -> None:
    win.tabs.setCurrentWidget(widget)
    settle()


def _histogram_of(qtbot, win, unit: str | None) -> None:
    """Wait until the Errors dock's histogram is of ``unit`` (None: no histogram, the caption says to select one)."""
    if unit is None:
        qtbot.waitUntil(
            lambda: win.errors.hist is None and win.errors.hist_title.text().startswith("No node selected"),
            timeout=30_000,
        )
    else:
        qtbot.waitUntil(lambda: (win.errors.hist or {}).get("unit") == unit, timeout=60_000)


def _bars(win) -> list[str]:
    return sorted(r.node for r in win.errors.rows)


def test_the_exported_tab_and_netron_drive_the_dock(qtbot, window, open_file, example_qdq_file, monkeypatch):
    quantized_faster(monkeypatch)
    win = window
    open_file(win, EXAMPLE_MODEL)
    _calibrate(qtbot, win, EXAMPLE / "digits_cnn_calib.npz", 16)
    units = ["/f/f.0/Conv", "/f/f.3/Conv", "/f/f.7/Conv", "/f/f.9/AveragePool", "/head/head.2/Gemm"]
    assert _bars(win) == units
    win.canvas.select_nodes(["/f/f.0/Conv"], center=True)
    settle()
    assert outlined(win.errors) == "/f/f.0/Conv"
    _histogram_of(qtbot, win, "/f/f.0/Conv")
    # the exported file (our QDQ export of this model): every bar, the outline follows its own selection
    tab = open_exported_tab(qtbot, win, example_qdq_file)
    assert win.tabs.currentWidget() is tab and tab.canvas.selected_nodes() == []
    assert _bars(win) == units and win.errors.selected is None  # was /f/f.0/Conv: the Graph tab's
    _histogram_of(qtbot, win, None)  # nor its histogram
    tab.canvas.select_nodes(["/head/head.2/Gemm"], center=True)
    settle()
    assert outlined(win.errors) == "/head/head.2/Gemm"
    _histogram_of(qtbot, win, "/head/head.2/Gemm")
    tab.canvas.select_nodes(["/f/f.8/Relu"], center=True)  # folded into /f/f.7/Conv's unit
    settle()
    assert outlined(win.errors) == "/f/f.7/Conv"
    _histogram_of(qtbot, win, "/f/f.7/Conv")
    _show(win, win.canvas)
    assert outlined(win.errors) == "/f/f.0/Conv"
    _histogram_of(qtbot, win, "/f/f.0/Conv")
    _show(win, tab)
    assert outlined(win.errors) == "/f/f.7/Conv"
    # Netron shows the open model or its export: every bar, none outlined (its selection does not reach the app)
    win.open_in_netron()
    settle()
    assert win.tabs.currentWidget() is win.netron
    assert _bars(win) == units and win.errors.selected is None
    _histogram_of(qtbot, win, None)
    _show(win, win.canvas)
    assert outlined(win.errors) == "/f/f.0/Conv"


def test_a_subgraph_tab_shows_its_own_units(qtbot, window, open_file, monkeypatch, cases):
    quantized_faster(monkeypatch)
    win = window
    open_file(win, CASE20.with_suffix(".onnx"))
    _calibrate(qtbot, win, CASE20.with_suffix(".npz"), 8)
    assert _bars(win) == ["relu"]  # then_mm / else_mm, inside the If's bodies, are not measured per unit
    assert {"then_mm", "else_mm"} <= set(win.doc.plan.units)
    win.canvas.select_nodes(["relu"], center=True)
    settle()
    assert outlined(win.errors) == "relu"
    titles = win.open_subgraphs("branch")
    assert titles == ["branch: else_branch", "branch: then_branch"]
    body = win.tabs.currentWidget()
    with qtbot.waitSignal(body.layoutReady, timeout=120_000):
        pass
    settle()
    assert body.node_names() == ["then_mm"]
    # no bar of this body's units: none shown, the summary says why (the Graph tab's relu bar was shown)
    assert _bars(win) == [] and win.errors.selected is None
    assert win.errors.summary.text() == NO_SUBGRAPH_FIGURES
    body.select_nodes(["then_mm"])
    settle()
    assert win.errors.selected is None
    _show(win, win.canvas)
    assert _bars(win) == ["relu"] and outlined(win.errors) == "relu"
    assert win.errors.summary.text() != NO_SUBGRAPH_FIGURES
