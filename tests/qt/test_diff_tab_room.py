"""The diff tab at the window's default size: the panes get the room, nothing covers the node a row
centres, Fit graph fits both panes, a row shows its node in the Inspector, and the comparison runs on
the Analysis samples with its progress where the other jobs show theirs.

The quantized file is onnxruntime's own QDQ export (quantize_static on 4 calibration rows) of the
corpus digits_cnn, so the diff is another tool's file: its Relus are fused into the Convs' Q/DQ.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
import shared_paths
from onnx import numpy_helper
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtWidgets import QApplication, QWidget

from workbench.qt import diff_view, docks

CORPUS = shared_paths.CORPUS / "digits_cnn"
FLOAT = CORPUS / "model_opset17.onnx"
CALIB = CORPUS / "calib.npz"
CONV = "/f/f.3/Conv"


@pytest.fixture(scope="module")
def ort_qdq(tmp_path_factory, corpus) -> Path:
    """digits_cnn quantized by onnxruntime.quantization.quantize_static (QDQ, 4 calibration rows)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    rows = np.load(CALIB)["input"][:4]

    class Rows(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"input": rows[i : i + 1]} for i in range(len(rows))])

        def get_next(self):
            return next(self.it, None)

    out = tmp_path_factory.mktemp("ort_qdq") / "digits_ort.qdq.onnx"
    quantize_static(str(FLOAT), str(out), Rows(), quant_format=QuantFormat.QDQ)
    return out


def _settle() -> None:
    for _ in range(20):  # layout requests posted by the first fits
        QApplication.processEvents()


def _diff_tab(qtbot, win, compare_in_app, ort_qdq, *, user_layout: bool = False):
    if user_layout:  # the new user's layout (s43): the Calibration dock left of the graph, the Errors dock
        # as a first result leaves it (docks.SIDE_BY_SIDE_HEIGHT of the window)
        win.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, win.docks["Calibration"])
        win.resizeDocks(
            [win.docks["Errors"]], [int(docks.SIDE_BY_SIDE_HEIGHT * win.height())], Qt.Orientation.Vertical
        )
    tab = compare_in_app(win, FLOAT, CALIB, ort_qdq, 8)
    with qtbot.waitSignal(tab.panesReady, timeout=540_000):
        pass
    _settle()
    return tab


def _row(tab, group: str, float_node: str):
    g = tab.groups[group]
    return next(g.child(i) for i in range(g.childCount()) if g.child(i).text(0) == float_node)


def _click_row(qtbot, tab, item) -> None:
    tab.tree.scrollToItem(item)
    rect = tab.tree.visualItemRect(item)  # as wide as every column: click on the node's name
    qtbot.mouseClick(
        tab.tree.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(rect.left() + 10, rect.center().y())
    )
    _settle()


def _global(widget: QWidget, rect: QRect) -> QRect:
    return QRect(widget.mapToGlobal(rect.topLeft()), rect.size())


def test_panes_take_most_of_the_tab_at_the_default_size(qtbot, window, compare_in_app, ort_qdq):
    win = window
    assert (win.width(), win.height()) == (1400, 900)  # the window's default size
    tab = _diff_tab(qtbot, win, compare_in_app, ort_qdq)
    for canvas in (tab.float_canvas, tab.canvas):
        assert canvas.width() >= diff_view.MIN_PANE_SHARE * tab.width(), (canvas.width(), tab.width())
    tab.list_button.click()  # the list hides: the panes share the whole tab
    _settle()
    assert tab.tree.isHidden()
    for canvas in (tab.float_canvas, tab.canvas):
        assert canvas.width() >= 0.45 * tab.width(), (canvas.width(), tab.width())


def test_a_row_centres_its_node_clear_of_every_legend(qtbot, window, compare_in_app, ort_qdq):
    win = window
    tab = _diff_tab(qtbot, win, compare_in_app, ort_qdq, user_layout=True)
    for canvas in (tab.float_canvas, tab.canvas):  # the panes are still wide enough beside two dock columns
        least = min(
            diff_view.MIN_PANE_SHARE * tab.width(), diff_view.MIN_PANE_WIDTH
        )  # the list's names first
        assert canvas.width() >= least, (canvas.width(), tab.width())
    _click_row(qtbot, tab, _row(tab, "matched", CONV))
    assert tab.float_canvas.selected_nodes() == [CONV] and tab.canvas.selected_nodes() == [CONV]
    legends = [
        w
        for w in win.findChildren(QWidget)
        if w.objectName() in ("canvasLegend", "diffKey") and w.isVisible()
    ]
    assert legends, "the diff tab shows a key"
    for canvas in (tab.float_canvas, tab.canvas):
        port = canvas.viewport()
        node = _global(port, canvas.mapFromScene(canvas.node_scene_rect(CONV)).boundingRect())
        assert _global(port, port.rect()).contains(node), "the centred node is in view"
        for legend in legends:
            box = QRect(legend.mapToGlobal(QPoint(0, 0)), legend.size())
            assert not box.intersects(node), (legend.objectName(), box, node)


def test_fit_graph_fits_both_panes(qtbot, window, compare_in_app, ort_qdq):
    win = window
    tab = _diff_tab(qtbot, win, compare_in_app, ort_qdq)
    assert win.tabs.currentWidget() is tab
    assert win.act_fit.isEnabled() and win.act_zoom_in.isEnabled()
    for _ in range(4):
        win.act_zoom_in.trigger()
    _settle()
    win.act_fit.trigger()
    _settle()
    scales = set()
    for canvas in (tab.float_canvas, tab.canvas):
        bounds = canvas._state.data.bounds
        shown = canvas.mapFromScene(bounds).boundingRect()
        assert canvas.viewport().rect().contains(shown), (shown, canvas.viewport().rect())
        assert not canvas.horizontalScrollBar().isVisible() and not canvas.verticalScrollBar().isVisible()
        scales.add(canvas.transform().m11())
    assert len(scales) == 1  # one zoom: matched nodes side by side


def test_a_row_shows_its_node_in_the_inspector(qtbot, window, compare_in_app, ort_qdq):
    win = window
    tab = _diff_tab(qtbot, win, compare_in_app, ort_qdq)
    _click_row(qtbot, tab, _row(tab, "matched", CONV))
    shown = win.inspector.file
    assert shown is not None and shown.owner is tab and shown.nodes == [CONV] and shown.name == ort_qdq.name
    assert CONV in win.inspector.header.text() and ort_qdq.name in win.inspector.header.text()
    # onnxruntime wrote that file: the read-only note does not call it our export
    note = win.inspector.recipe_note.text()
    assert (
        note.startswith(f"Read-only: {ort_qdq.name} is a quantized file as written on disk")
        and "exported" not in note
    )
    # the weight's scale as the file holds it
    proto = onnx.load(str(ort_qdq))
    inits = {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}
    conv = next(n for n in proto.graph.node if n.name == CONV)
    weight_dq = next(
        n for n in proto.graph.node if n.op_type == "DequantizeLinear" and n.output[0] == conv.input[1]
    )
    scale = float(np.asarray(inits[weight_dq.input[1]]).ravel()[0])
    assert f"{scale:.6g}" in win.inspector.quant_params.label.text()
    # another tab shown: the Inspector leaves the file
    win.tabs.setCurrentIndex(0)
    assert win.inspector.file is None


def test_compare_runs_on_the_analysis_samples_with_progress_in_the_panel(qtbot, window, open_file, ort_qdq):
    win = window
    open_file(win, FLOAT)
    assert len(np.load(CALIB)["input"]) == 100
    win.calibration.set_data_spec({"kind": "npz", "path": str(CALIB)}, None)  # calibration on all 100 rows
    win._on_spec_changed()
    win.calibration.analysis_samples.setValue(8)
    win._on_spec_changed()
    statuses: list[str] = []
    with qtbot.waitSignal(win.diffReady, timeout=540_000) as sig:
        win.compare_with(ort_qdq)
        assert f"Comparing with {ort_qdq.name}" in win.calibration.status.text()
        assert win.calibration.cancel.isEnabled()
        assert "up to 8 samples" in win.status_label.text()
        win._open_job.progress.connect(lambda *_a: statuses.append(win.status_label.text()))
    tab = sig.args[0]
    assert tab.diff.samples == 8
    assert statuses and "(8/8)" in statuses[-1] and "elapsed" in statuses[-1], statuses
    qtbot.waitUntil(lambda: win._open_job is None, timeout=60_000)
    assert "Comparing" not in win.calibration.status.text() and not win.calibration.cancel.isEnabled()
    assert "8 samples" in tab.header.text()
    with qtbot.waitSignal(tab.panesReady, timeout=540_000):
        pass


def test_the_panels_cancel_stops_the_comparison(qtbot, window, open_file, ort_qdq):
    win = window
    open_file(win, FLOAT)
    win.calibration.set_data_spec({"kind": "npz", "path": str(CALIB)}, None)
    win._on_spec_changed()
    win.compare_with(ort_qdq)
    job = win._open_job
    with qtbot.waitSignal(job.cancelled, timeout=120_000):
        win.calibration.cancel.click()
    qtbot.waitUntil(lambda: win._open_job is None, timeout=60_000)
    assert win.status_label.text() == f"Comparison with {ort_qdq.name} cancelled."
    assert win.tabs.count() == 1


def test_view_legend_hides_and_shows_the_shared_key(qtbot, window, compare_in_app, ort_qdq):
    win = window
    tab = _diff_tab(qtbot, win, compare_in_app, ort_qdq)
    key = tab.panes.key
    assert key.isVisible() and tab.legend_button.isChecked()
    assert (
        "SQNR vs float (dB)" in key.text() and "Conv (3)" in key.text()
    )  # right pane's map, left pane's ops
    assert not any(c.legend_overlay.isVisible() for c in (tab.float_canvas, tab.canvas))
    win.act_legend.trigger()  # View > Legend off
    assert key.isHidden() and not tab.legend_button.isChecked()
    assert not any(c.legend_overlay.isVisible() for c in (tab.float_canvas, tab.canvas))
    tab.legend_button.click()
    assert key.isVisible()
