"""Selecting a pair in the diff panes shows it with the nodes its edges join. The flat layout of ppocrv4_rec
puts a hard-swish's Add and Clip in a side column about 900 scene px right of the chain they branch from and
return to; selecting p2o.Clip.0 (what scripts/screenshot_compare.py does for docs/compare_panes.png) kept
the zoom at 100 % and centred the pair: each pane showed the Add and the Clip alone, their edges running off
the left edge."""

from __future__ import annotations

from PySide6.QtCore import QRectF
from PySide6.QtWidgets import QApplication

from workbench.core import api
from workbench.qt.render import draw_panes

#: with our export, p2o.Mul.0 reads p2o.Conv.1, 760 scene px left of it in igraph's placement (with onnxruntime's
#: quantize_static file the README's picture is of, the Clip of the first hard-swish: 855 px); one column (190 px)
#: since the layout places its columns itself (workbench/core/graph/placement.py)
PAIR = "p2o.Mul.0"


def _files(corpus, tmp_path):
    folder = corpus / "ppocrv4_rec"
    quant = tmp_path / "q.onnx"
    api.export(api.quantize(api.open_model(folder / "model.onnx"), api.make_recipe("cpu-u8s8"),
                            data=str(folder / "calib.npz"), samples=4, latency_check=False), quant)
    return folder / "model.onnx", quant


def _joined(canvas, names: set[str]) -> tuple[set[str], list[tuple[str, str]]]:
    s = canvas._state.data.structure
    edges = [(s.names[a], s.names[b]) for a, b in s.edges if s.names[a] in names or s.names[b] in names]
    return names | {n for e in edges for n in e}, edges


def test_a_selected_pair_is_shown_with_its_neighbours(qtbot, corpus, tmp_path):
    float_path, quant = _files(corpus, tmp_path)
    panes = draw_panes(str(float_path), str(quant))
    try:
        panes.resize(1200, 700)
        QApplication.processEvents()
        panes.select_pair(PAIR, "")
        QApplication.processEvents()
        fc, qc = panes.float_canvas, panes.quant_canvas
        assert fc.selected_nodes() == [PAIR]
        assert fc.transform().m11() == qc.transform().m11()  # one view
        for canvas in (fc, qc):
            nodes, edges = _joined(canvas, set(canvas.selected_nodes()))
            assert len(nodes) >= 3 and edges
            view = QRectF(canvas.viewport().rect())
            for n in nodes:  # each node whole in the pane
                rect = canvas.mapFromScene(canvas.node_scene_rect(n)).boundingRect()
                assert view.contains(QRectF(rect)), (n, rect, view)
    finally:
        panes.shutdown()
        panes.close()
