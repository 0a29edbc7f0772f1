"""``render FLOAT --compare QUANTIZED`` draws no minimap: the two canvases' minimaps are controls of the window,
and the panes' picture (a grab of the whole widget) drew them over the bottom-right nodes of both panes
(docs/pictures/ppocrv4_rec_diff_sqnr.png); a single canvas's picture never had one."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QRect
from PySide6.QtGui import QImage
from quant_bias_models import quantized_model

from workbench.qt.render import draw_panes, save_panes


def test_panes_picture_has_no_minimap(qtbot, tmp_path):
    quant = quantized_model(tmp_path, "QDQ")
    panes = draw_panes(str(Path(tmp_path) / "float.onnx"), str(quant))
    try:
        out = tmp_path / "panes.png"
        for canvas in (panes.float_canvas, panes.quant_canvas):
            assert canvas.minimap().isVisible()  # the window shows it, so the grab would draw it
        size = save_panes(panes, out)
        picture = QImage(str(out))
        assert (picture.width(), picture.height()) == size == (panes.width(), panes.height())
        for canvas in (panes.float_canvas, panes.quant_canvas):
            minimap = canvas.minimap()
            assert minimap.isVisible()  # shown again after the picture
            viewport = canvas.viewport()
            where = QRect(minimap.pos() - viewport.pos(), minimap.size())  # both children of the canvas
            assert QRect(viewport.rect()).contains(where)
            drawn = picture.copy(QRect(viewport.mapTo(panes, where.topLeft()), where.size()))
            under = viewport.grab().toImage().copy(where).convertToFormat(drawn.format())
            assert drawn == under  # the graph under it, not the minimap
    finally:
        panes.shutdown()
        panes.close()
