"""``render`` pictures hold every group title whole. ``render ddddocr_common_old_int8 --expand 9`` placed
the open groups' titles left of their frames, right-aligned, past the picture's left edge: the PNG read
"l_2", "l_5" for "Conv_0_quant – Mul_2", "Conv_3_quant – Mul_5", and the SVG had no group title at all
(the screen-size titles were painted only with a widget, and an SVG export renders the view with none).
Made room for, the first title then ran under the colour legend beside the graph."""

from __future__ import annotations

import re

import onnx
from PySide6.QtCore import QRectF
from PySide6.QtGui import QFontMetricsF

from workbench.core import api
from workbench.core.graph.hierarchy import build_hierarchy
from workbench.core.graph.layout import graph_structure
from workbench.qt.canvas import GraphCanvas
from workbench.qt.canvas.group_labels import label_font
from workbench.qt.render import render_to_file

ELLIPSIS = "\u2026"


def svg_texts(path) -> tuple[list[float], list[tuple[float, float, str]]]:
    """The SVG's viewBox and its text elements as (x, y, text), x and y in viewBox units."""
    s = path.read_text(encoding="utf-8")
    box = [float(v) for v in re.search(r'viewBox="([^"]*)"', s).group(1).split()]
    out = []
    for group in re.finditer(r"<g ([^>]*)>(.*?)</g>", s, re.S):
        m = re.search(r'transform="matrix\(([^)]*)\)"', group.group(1))
        a = [float(v) for v in m.group(1).split(",")] if m else [1, 0, 0, 1, 0, 0]
        for t in re.finditer(r"<text([^>]*)>([^<]*)</text>", group.group(2), re.S):
            x = float(re.search(r' x="([-\d.e]+)"', t.group(1)).group(1))
            y = float(re.search(r' y="([-\d.e]+)"', t.group(1)).group(1))
            out.append((a[0] * x + a[2] * y + a[4], a[1] * x + a[3] * y + a[5], t.group(2).strip()))
    return box, out


def _title_of(text: str, titles: set[str]) -> str | None:
    """The group title ``text`` reads: the title itself, or one elided (a block's at its end, a scope path's in
    the middle: ``groups_item.title_elide``)."""
    if text in titles:
        return text
    if ELLIPSIS in text:
        head, tail = text.split(ELLIPSIS, 1)
        hits = [t for t in titles if t.startswith(head) and t.endswith(tail) and len(head) > 0]
        return hits[0] if hits else None
    return None


def test_every_group_title_is_whole_inside_the_svg(qtbot, corpus, tmp_path, monkeypatch):
    model = corpus / "ddddocr_common_old_int8" / "model.onnx"
    s = graph_structure(onnx.load(model), collapse_qdq=True)
    titles = set(build_hierarchy(s.names, s.op_types, s.edges).titles) - {""}  # as the canvas builds it
    out = tmp_path / "ddd.svg"
    export, under = GraphCanvas.export_picture, []

    def export_picture(canvas, path):  # the titles under the colour legend as the picture is written
        legend = QRectF(canvas.legend_rect())
        under.extend(r for r in canvas.screen_title_rects() if QRectF(canvas.mapFromScene(r).boundingRect()).intersects(legend))
        return export(canvas, path)

    monkeypatch.setattr(GraphCanvas, "export_picture", export_picture)
    dtypes = api.summarize_quantization(api.open_model(model).proto).node_dtypes  # as render --colour dtype
    render_to_file(str(model), str(out), mode="dtype", dtypes=dtypes, depth=9, max_side=9000)
    assert under == []  # "Conv_0_quant – Mul_2" ran under the legend beside the graph
    (_, _, width, height), texts = svg_texts(out)
    metrics = QFontMetricsF(label_font())
    shown = {}
    for x, y, text in texts:
        title = _title_of(text, titles)
        if title is None:
            assert not any(t.endswith(text) and t != text and len(text) > 2 for t in titles), text  # "l_2"
            continue
        shown[title] = text
        assert 0 <= x and x + metrics.horizontalAdvance(text) <= width, (text, x, width)
        assert 0 <= y <= height, (text, y)
    assert "Conv_0_quant \u2013 Mul_2" in shown and "Conv_3_quant \u2013 Mul_5" in shown
    assert len(shown) == 23  # every top-level block of the picture titled
    # a block's title is cut at its end to the width of its box or frame only (as in the app), never by the edge
    assert sum(v == k for k, v in shown.items()) == 20
