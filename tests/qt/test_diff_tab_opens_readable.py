"""The diff tab opens where its names are readable, as the main canvas and the exported tab do: both
panes at one zoom no less than the readable one (``readable.readable_scale``) on the graph's start,
instead of the whole graph (ppocrv4_rec: 860 float nodes, a whole fit drew its op types about 1 px
high); Fit both still shows both graphs whole. The quantized file is onnxruntime's quantize_static QDQ
export of ppocrv4_rec (2 calibration rows). Offscreen."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import shared_paths

pytest.importorskip("PySide6")

from PySide6.QtCore import QRectF  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from workbench.core.api import compare_models, open_model  # noqa: E402
from workbench.qt.canvas.readable import readable_scale  # noqa: E402
from workbench.qt.diff_view import DiffTab  # noqa: E402

CORPUS = shared_paths.CORPUS / "ppocrv4_rec"


@pytest.fixture(scope="module")
def ppocr_ort(tmp_path_factory, corpus) -> Path:
    """ppocrv4_rec quantized by onnxruntime.quantization.quantize_static (QDQ, 2 calibration rows)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    rows = np.load(CORPUS / "calib.npz")["x"][:2]

    class Rows(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"x": rows[i : i + 1]} for i in range(len(rows))])

        def get_next(self):
            return next(self.it, None)

    out = tmp_path_factory.mktemp("ppocr_ort") / "ppocr_ort.onnx"
    quantize_static(str(CORPUS / "model.onnx"), str(out), Rows(), quant_format=QuantFormat.QDQ)
    return out


def readable(canvas) -> float:
    return min(1.0, readable_scale(canvas._state.data))


@pytest.mark.slow
def test_the_diff_tab_opens_readable_on_the_graphs_start(qtbot, ppocr_ort):
    diff = compare_models(
        open_model(CORPUS / "model.onnx"), open_model(ppocr_ort).proto, quant_label=str(ppocr_ort)
    )
    tab = DiffTab(diff, diff.quant_proto, ppocr_ort, "model.onnx")
    qtbot.addWidget(tab)
    tab.resize(1400, 900)
    tab.show()
    try:
        with qtbot.waitSignal(tab.panesReady, timeout=540_000):
            pass
        for _ in range(20):  # the panes' scroll bars settle (layout requests posted by the first views)
            QApplication.processEvents()
        fc, qc = tab.float_canvas, tab.canvas
        scale = qc.transform().m11()
        assert scale >= readable(qc) and scale >= readable(fc)  # was a whole-graph fit at about 0.02
        assert fc.transform().m11() == scale  # one zoom in both panes
        bounds = QRectF(fc.scene_bounds()).united(qc.scene_bounds())
        shown = qc.mapToScene(qc.viewport().rect()).boundingRect()
        assert shown.top() <= bounds.top() <= shown.bottom()  # the graph's start (its first rows)
        assert any(shown.intersects(qc.node_scene_rect(n)) for n in qc.node_names())
        assert qc.sceneRect().contains(qc.scene_bounds())  # the rest is a scroll away
        assert fc.mapToScene(fc.viewport().rect().center()) == qc.mapToScene(qc.viewport().rect().center())
        tab.fit_button.click()  # Fit both: the whole of both graphs
        assert qc.transform().m11() < readable(qc)
        whole = qc.mapToScene(qc.viewport().rect()).boundingRect()
        assert whole.contains(QRectF(qc.scene_bounds()))
    finally:
        tab.shutdown()
