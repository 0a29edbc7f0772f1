"""Routed edges on the canvas: the drawn path runs through the core's waypoints, and on nudenet_320n
fully expanded it crosses fewer node boxes than the unrouted curves did (pytest-qt, offscreen)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

pytest.importorskip("PySide6")

from PySide6.QtGui import QPainterPath  # noqa: E402

from workbench.core.api import layout_routed, open_model  # noqa: E402
from workbench.qt.canvas.edge_colors import edge_ends  # noqa: E402
from workbench.qt.canvas.scene_data import edge_curve  # noqa: E402


def skip_model(prefix: str = "") -> onnx.ModelProto:
    """a0 -> a1 -> a2 -> a3 -> a4, a skip a0 -> a4 over three layers, a side chain b1..b3."""
    def node(op, ins, out, name):
        return helper.make_node(op, ins, [out], name=prefix + name)

    nodes = [node("Relu", ["x"], "t0", "a0")]
    nodes += [node("Relu", [f"t{i - 1}"], f"t{i}", f"a{i}") for i in (1, 2, 3)]
    nodes += [node("Sigmoid", ["t0" if i == 1 else f"s{i - 1}"], f"s{i}", f"b{i}") for i in (1, 2, 3)]
    nodes.append(node("Sum", ["t3", "t0", "s3"], "y", "a4"))
    graph = helper.make_graph(nodes, "skip", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def _open(qtbot, view, proto, **kwargs):
    with qtbot.waitSignal(view.layoutReady, timeout=300_000):
        view.set_model(proto, **kwargs)


def _polylines(path: QPainterPath) -> list[np.ndarray]:
    return [np.array([(p.x(), p.y()) for p in poly]) for poly in path.toSubpathPolygons()]


def _distance_to(polylines: list[np.ndarray], x: float, y: float) -> float:
    """Shortest distance from (x, y) to the segments of ``polylines``."""
    best = np.inf
    for pts in polylines:
        a, b = pts[:-1], pts[1:]
        d = b - a
        t = np.clip(((x - a[:, 0]) * d[:, 0] + (y - a[:, 1]) * d[:, 1]) / np.maximum((d ** 2).sum(1), 1e-12), 0, 1)
        near = a + t[:, None] * d
        best = min(best, float(np.hypot(near[:, 0] - x, near[:, 1] - y).min()))
    return best


def _drawn(view) -> QPainterPath:
    """Everything the edges item draws when zoomed in: the union of its tiles' paths."""
    path = QPainterPath()
    for tile in view._state.data.edge_tiles:
        path.addPath(tile.path())
    return path


def test_drawn_flat_edge_passes_through_its_waypoints(qtbot, make_canvas, tmp_path):
    proto = skip_model()
    view = make_canvas(groups=False)
    _open(qtbot, view, proto)
    data = view._state.data
    skip = data.structure.edges.index((data.index["a0"], data.index["a4"]))
    waypoints = layout_routed(proto, cache_dir=tmp_path / "layout").routes[skip]
    assert len(waypoints) == 3
    drawn = _polylines(_drawn(view))
    overview = _polylines(data.straight_edges)  # the zoomed-out hairlines go through them too
    for x, y in waypoints:
        assert _distance_to(drawn, x, y) < 0.5
        assert _distance_to(overview, x, y) < 0.5
    # the highlight of a selected node's edges is the same curve
    assert _distance_to(_polylines(data.edge_path({data.index["a0"]})), *waypoints[1]) < 0.5


def test_drawn_grouped_edge_passes_through_its_passages(qtbot, make_canvas):
    view = make_canvas(groups=True)
    _open(qtbot, view, skip_model("/blk/"), depth=1)
    data = view._state.data
    skip = data.structure.edges.index((data.index["/blk/a0"], data.index["/blk/a4"]))
    route = data.routes[skip]
    assert len(route) == 3
    drawn = _polylines(_drawn(view))
    for x, top, bottom in route:
        for y in (top, (top + bottom) / 2, bottom):
            assert _distance_to(drawn, x, y) < 0.5
    view.collapse_group("blk")  # one box: the edge is inside it and not drawn
    assert view._state.data.routes == {}


def _boxes_crossed(path: QPainterPath, boxes: np.ndarray, skip: set[int]) -> int:
    """How many boxes (rows x0, y0, x1, y1, shrunk by 1 px) other than ``skip`` the flattened path
    enters: Liang-Barsky clipping of every segment against every box."""
    hit = np.zeros(len(boxes), dtype=bool)
    x0, y0, x1, y1 = (boxes[None, :, k] for k in range(4))
    for pts in _polylines(path):
        ax, ay = pts[:-1, 0, None], pts[:-1, 1, None]  # (segments, 1) against (1, boxes)
        dx, dy = np.diff(pts[:, 0])[:, None], np.diff(pts[:, 1])[:, None]
        t0 = np.zeros((len(ax), len(boxes)))
        t1 = np.ones_like(t0)
        ok = np.ones_like(t0, dtype=bool)
        for p, q in ((-dx, ax - x0), (dx, x1 - ax), (-dy, ay - y0), (dy, y1 - ay)):
            p = np.broadcast_to(p, t0.shape)
            flat = p == 0
            ok &= ~(flat & (q < 0))
            with np.errstate(divide="ignore", invalid="ignore"):
                r = q / p
            t0 = np.where(~flat & (p < 0), np.maximum(t0, r), t0)
            t1 = np.where(~flat & (p > 0), np.minimum(t1, r), t1)
        hit |= (ok & (t0 < t1)).any(axis=0)
    hit[list(skip)] = False
    return int(hit.sum())


@pytest.mark.slow
def test_nudenet_expanded_routes_cross_fewer_boxes(qtbot, make_canvas, corpus):
    view = make_canvas(groups=True)
    _open(qtbot, view, open_model(corpus / "nudenet_320n" / "model.onnx").proto)
    view.expand_all()
    data = view._state.data
    boxes = np.column_stack([data.x0, data.y0, data.x1, data.y1]) + np.array([1.0, 1.0, -1.0, -1.0])
    assert not np.isnan(boxes).any()  # every node shown
    before = after = 0
    for e, (a, b) in enumerate(data.structure.edges):
        ends = edge_ends(data, e)
        old, new = QPainterPath(), QPainterPath()
        edge_curve(old, *ends, None, True)  # the single (bowed) cubic drawn before edges were routed
        edge_curve(new, *ends, data.routes.get(e), False)  # what the canvas draws now
        before += _boxes_crossed(old, boxes, {a, b})
        after += _boxes_crossed(new, boxes, {a, b})
    assert len(data.routes) > 50
    assert after < before
    assert after <= before // 10, (before, after)
