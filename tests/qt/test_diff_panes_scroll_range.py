"""The diff panes' scroll range follows the graphs as the main canvas's does (the rule of c38defa: the graph's scroll
room, :meth:`GraphCanvas.scroll_content`, united with what the view shows), here around both panes' graphs.

The panes set a fixed rectangle of their own on each view, which only grew: ppocr_mobile_v2_cls against our QDQ
export, 1200 x 800, Fit graph then a pair selected at 100 % kept the fit's rectangle, 19,024 units across for graphs
1,757 wide (18,441 px of horizontal scroll), and a pair near the top was pinned under the pane's top edge (the
rectangle of the fit started below what centring it needed).
"""

from __future__ import annotations

import time

import pytest
from PySide6.QtCore import QPointF, QRectF, QSizeF
from PySide6.QtWidgets import QApplication
from shared_paths import CORPUS

from workbench.core import api
from workbench.qt.canvas.view import GraphCanvas
from workbench.qt.diff_panes import DiffPanes
from workbench.qt.quant_tab import quant_info

CLS = CORPUS / "ppocr_mobile_v2_cls"


@pytest.fixture(scope="module")
def cls_pair(tmp_path_factory, corpus):
    """ppocr_mobile_v2_cls and our QDQ export of it (cpu-u8s8, 4 calibration rows)."""
    out = tmp_path_factory.mktemp("cls_panes") / "cls.qdq.onnx"
    model = api.open_model(CLS / "model.onnx")
    api.export(api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(CLS / "calib.npz"), samples=4), out)
    return CLS / "model.onnx", out


@pytest.fixture
def panes(qtbot, cls_pair):
    float_path, quant_path = cls_pair
    diff = api.compare_models(
        api.open_model(float_path), api.open_model(quant_path).proto, quant_label=quant_path
    )
    fproto, qproto = diff.float_proto, diff.quant_proto
    made = DiffPanes(diff, fproto, qproto, "Float", "Quantized", shared_key=True)
    qtbot.addWidget(made)
    made.resize(1200, 800)
    made.show()
    params = api.read_quant_params(qproto)
    with qtbot.waitSignal(made.ready, timeout=300_000):
        made.show_layout(
            api.pane_layout(fproto, qproto, diff),
            quant_info(api.summarize_quantization(qproto, params), params, qproto),
        )
    _settle()
    yield made
    made.shutdown()


def _settle() -> None:
    end = time.monotonic() + 0.1  # scroll bars come and go from queued calls
    while time.monotonic() < end:
        QApplication.processEvents()


def _room(canvas) -> QRectF:
    """Both graphs' scroll room at the pane's scale for its viewport without scroll bars (the main canvas's rule)."""
    full = QRectF(QPointF(0, 0), QSizeF(canvas.maximumViewportSize()))
    scale = canvas.transform().m11()
    panes = [c for c in canvas.window().findChildren(GraphCanvas)]
    assert len(panes) == 2
    return GraphCanvas.scroll_content(panes[0], full, scale).united(
        GraphCanvas.scroll_content(panes[1], full, scale)
    )


def _shown(canvas) -> QRectF:
    return canvas.mapToScene(canvas.viewport().rect()).boundingRect()


def _follows_rule(canvas) -> None:
    """The pane's range is its graphs' room united with what it shows, to the pixel Qt rounds a scroll to."""
    rect, want = canvas.sceneRect(), _room(canvas).united(_shown(canvas))
    px = 2 / canvas.transform().m11()
    for a, b in (
        (rect.left(), want.left()),
        (rect.top(), want.top()),
        (rect.right(), want.right()),
        (rect.bottom(), want.bottom()),
    ):
        assert abs(a - b) <= px, (rect, want)


def _hrange(canvas) -> int:
    bar = canvas.horizontalScrollBar()
    return bar.maximum() - bar.minimum()


def test_pairs_after_fit_scroll_over_the_graphs_only(panes):
    fc, qc = panes.float_canvas, panes.quant_canvas
    for c in (
        fc,
        qc,
    ):  # as opened (the readable zoom on the graphs' start): the graphs and the view, as fit_readable
        assert c.sceneRect().contains(_shown(c)) and c.sceneRect().contains(c.scene_bounds())
    assert fc.sceneRect() == qc.sceneRect()
    panes.fit()
    _settle()
    names = [n for n in qc._state.data.names if n in panes.q2f]
    panes.select_pair(quant_node=names[-1])
    _settle()
    scale = qc.transform().m11()
    assert scale == 1.0
    for c in (fc, qc):
        _follows_rule(c)
        room = _room(c)
        assert room.width() < 1800 and c.sceneRect().width() < 1800  # 19,024 before (the fit's rectangle)
        # the horizontal scroll: the graphs' room less the viewport, not the fit's (18,441 px before)
        assert abs(_hrange(c) - (round(c.sceneRect().width() * scale) - c.viewport().width())) <= 1
        assert _hrange(c) < 1200
    assert fc.sceneRect() == qc.sceneRect()
    last = qc.mapFromScene(qc.node_scene_rect(names[-1]).center())
    assert qc.viewport().rect().contains(last)
    # the first pair then: the last one's overhang below the graphs is gone, the view's own above it is kept
    panes.select_pair(quant_node=names[0])
    _settle()
    for c in (fc, qc):
        _follows_rule(c)
        assert abs(c.sceneRect().bottom() - _room(c).bottom()) <= 2 / c.transform().m11()
        assert c.sceneRect().top() < _room(c).top()  # centring the first pair needs room above the graphs
    first = qc.node_scene_rect(names[0])
    assert _shown(qc).contains(first)  # whole, not pinned under the top edge
    # a scroll of one pane: the other shows the same scene point, its range by the same rule
    bar = fc.verticalScrollBar()
    bar.setValue(bar.value() + 300)
    _settle()
    assert abs(_shown(fc).center().y() - _shown(qc).center().y()) <= 2
    _follows_rule(qc)
