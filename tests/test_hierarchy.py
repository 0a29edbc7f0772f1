"""Node groups from name scopes / op-type blocks, their aggregates, and the hierarchical layout (no Qt)."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest

from workbench.core.api import open_model
from workbench.core.graph.group_layout import BOX_H, place, plan_group_layout
from workbench.core.graph.hierarchy import (
    MAX_FLAT_BLOCKS,
    aggregate,
    auto_depth,
    build_hierarchy,
    expanded_to_depth,
    scope_of,
    visible_items,
)
from workbench.core.graph.layout import graph_structure

YOLO_NAMES = [
    "/model.0/conv/Conv", "/model.0/act/Sigmoid", "/model.0/act/Mul",
    "/model.1/conv/Conv", "/model.1/act/Sigmoid", "/model.1/act/Mul",
    "/model.1/m/m.0/cv1/Conv", "/model.1/m/m.0/cv1/act/Sigmoid", "/model.1/m/m.0/cv1/act/Mul",
    "/Concat",
]


def test_scope_of():
    assert scope_of("/model.22/cv3.2/conv/Conv") == ["model.22", "cv3.2", "conv"]
    assert scope_of("/Concat_3") == [] and scope_of("Conv_12") == [] and scope_of("a//b/") == ["a"]


def test_scopes_dissolve_small_groups_and_merge_single_child_chains():
    h = build_hierarchy(YOLO_NAMES, [n.rsplit("/", 1)[1] for n in YOLO_NAMES])
    assert h.source == "scopes"
    # model.0/conv (1 node) and model.0/act (2 nodes) are dissolved into model.0; m > m.0 > cv1
    # is one chain of single children, merged into one box titled by the whole chain
    assert h.paths == ["model.0", "model.1", "model.1/m/m.0/cv1"]
    assert h.titles == ["model.0", "model.1", "m/m.0/cv1"]
    assert h.parent == [-1, -1, 1] and h.depth == [1, 1, 2]
    assert h.node_group == [0, 0, 0, 1, 1, 1, 2, 2, 2, -1]
    assert h.members(1).tolist() == [3, 4, 5, 6, 7, 8] and h.members(2).tolist() == [6, 7, 8]
    assert h.children[-1] == [0, 1] and h.direct[-1] == [9] and h.children[1] == [2]
    assert h.ancestors(7) == [2, 1] and h.ancestors(9) == []


def test_flat_names_fall_back_to_anchor_blocks():
    ops = ["Conv", "Relu", "Add", "MatMul", "Add", "Relu", "Gemm", "Softmax"]
    h = build_hierarchy([f"n{i}" for i in range(len(ops))], ops)
    assert h.source == "blocks"
    assert h.paths == ["Conv #0", "MatMul #1"]  # "Gemm, Softmax" has 2 nodes: dissolved
    assert h.titles == ["n0 \u2013 n2", "n3 \u2013 n5"]
    assert h.node_group == [0, 0, 0, 1, 1, 1, -1, -1]
    assert build_hierarchy([f"n{i}" for i in range(len(ops))], ops).paths == h.paths  # deterministic


def test_many_flat_blocks_are_gathered_into_stages():
    n_blocks = 100
    ops = ["Conv", "Relu", "Add"] * n_blocks
    h = build_hierarchy([f"n{i}" for i in range(len(ops))], ops)
    per = math.ceil(math.sqrt(n_blocks))
    assert n_blocks > MAX_FLAT_BLOCKS
    stages = [g for g in range(len(h)) if h.parent[g] == -1]
    assert len(stages) == math.ceil(n_blocks / per) and len(h) == len(stages) + n_blocks
    assert h.paths[stages[0]] == f"#0-{per - 1}" and len(h.members(stages[0])) == 3 * per
    last = 3 * per - 1
    assert h.titles[stages[0]] == f"n0 \u2013 n{last}"
    assert h.max_depth() == 2 and sorted(np.concatenate([h.members(g) for g in stages]).tolist()) == list(range(300))


def test_aggregate_worst_and_fraction():
    h = build_hierarchy(YOLO_NAMES, ["x"] * len(YOLO_NAMES))
    sqnr = np.array([30.0, np.nan, 12.5, 40.0, 22.0, np.nan, np.nan, np.nan, np.nan, 5.0])
    worst = aggregate(h, sqnr, "min")
    assert worst[0] == 12.5 and worst[1] == 22.0 and np.isnan(worst[2])  # group 2 has no value
    quantized = np.array([1, 0, 0, 1, 1, 0, 1, 1, 0, 1], dtype=float)
    frac = aggregate(h, quantized, "mean", groups=[1, 2])
    assert frac.tolist() == pytest.approx([4 / 6, 2 / 3])
    with pytest.raises(ValueError, match="how must be"):
        aggregate(h, sqnr, "median")
    with pytest.raises(ValueError, match="one per node"):
        aggregate(h, sqnr[:3])


def test_depths_and_visible_items():
    h = build_hierarchy(YOLO_NAMES, ["x"] * len(YOLO_NAMES))
    assert expanded_to_depth(h, 0) == set() and expanded_to_depth(h, 1) == {0, 1}
    assert visible_items(h, set()) == 3  # two boxes and /Concat
    assert visible_items(h, {0, 1}) == 1 + 3 + 3 + 1  # model.0's 3 nodes, model.1's 3 nodes + a box
    assert visible_items(h, {0, 1, 2}) == len(YOLO_NAMES)
    assert auto_depth(h, max_items=8) == 1 and auto_depth(h, max_items=2) == 0


@pytest.fixture
def nudenet_plan(corpus):
    s = graph_structure(open_model(corpus / "nudenet_320n" / "model.onnx").proto)
    h = build_hierarchy(s.names, s.op_types)
    return s, h, plan_group_layout(h, len(s.names), s.edges)


def _rects(p):
    """Shown nodes and collapsed boxes as (x0, y0, x1, y1) rows."""
    shown = ~np.isnan(p.centres[:, 0])
    c = p.centres[shown]
    nodes = np.column_stack([c[:, 0] - 75, c[:, 1] - 27, c[:, 0] + 75, c[:, 1] + 27])
    boxes = np.array([p.boxes[g] for g in sorted(p.collapsed)]).reshape(-1, 4)
    return np.vstack([nodes, boxes])


@pytest.mark.slow
def test_nudenet_layout_no_overlap_and_edges_point_down(nudenet_plan):
    s, h, plan = nudenet_plan
    for depth in (0, 1, 2, h.max_depth()):
        _check_no_overlap_and_down_edges(s, h, place(plan, expanded_to_depth(h, depth)), depth)


def _check_no_overlap_and_down_edges(s, h, p, depth):
    r = _rects(p)
    assert len(r) == visible_items(h, expanded_to_depth(h, depth))
    overlap_x = (r[:, None, 0] < r[None, :, 2]) & (r[None, :, 0] < r[:, None, 2])
    overlap_y = (r[:, None, 1] < r[None, :, 3]) & (r[None, :, 1] < r[:, None, 3])
    np.fill_diagonal(overlap_x, False)
    assert not (overlap_x & overlap_y).any()
    for a, b in s.edges:  # producer's bottom above the consumer's top, through collapsed boxes
        ra, rb = p.rep[a], p.rep[b]
        if ra >= 0 and ra == rb:
            continue
        bottom = p.boxes[ra][3] if ra >= 0 else p.centres[a, 1] + 27
        top = p.boxes[rb][1] if rb >= 0 else p.centres[b, 1] - 27
        assert bottom < top, (s.names[a], s.names[b])


@pytest.mark.slow
def test_nudenet_expanding_moves_only_what_is_below_and_only_down(nudenet_plan):
    s, h, plan = nudenet_plan
    base = expanded_to_depth(h, 1)
    for g in sorted(g for g in range(len(h)) if h.depth[g] == 2):
        before, after = place(plan, base), place(plan, base | {g})
        inside = np.zeros(len(s.names), dtype=bool)
        inside[h.members(g)] = True
        both = ~inside & ~np.isnan(before.centres[:, 0])
        assert np.array_equal(before.centres[both, 0], after.centres[both, 0])  # x never changes
        dy = after.centres[both, 1] - before.centres[both, 1]
        assert (dy >= 0).all()
        bottom = before.boxes[g][3]
        assert (dy[before.centres[both, 1] < bottom] == 0).all()  # nothing above the box's bottom moves
        grown = after.boxes[g][3] - after.boxes[g][1] - BOX_H
        assert dy.max() <= grown + 1e-9
        assert np.array_equal(place(plan, base).centres[both], before.centres[both])  # collapse restores


def test_plan_of_an_empty_graph():
    h = build_hierarchy([], [])
    p = place(plan_group_layout(h, 0, []), set())
    assert len(h) == 0 and p.centres.shape == (0, 2) and p.boxes == {}


def test_shapes_in_structure():
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("Relu", ["x"], ["y"], name="/a/Relu")], "g",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["N", 3])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["N", 3])])
    assert graph_structure(onnx.helper.make_model(graph)).out_shapes == ["N x 3"]  # a named dim: spaced


def _passage_hits(route, rects):
    """Rectangles (rows of x0, y0, x1, y1) that a route's vertical passages run through."""
    hits = []
    for x, top, bottom in route:
        inside = (rects[:, 0] < x) & (x < rects[:, 2]) & (rects[:, 1] < bottom) & (top < rects[:, 3])
        hits += np.flatnonzero(inside).tolist()
    return hits


def test_grouped_skip_edge_has_one_passage_per_skipped_row():
    """/blk/a0 -> a1 -> a2 -> a3 -> a4 with a skip a0 -> a4 and a side chain b1..b3, all in group blk."""
    names = ["/blk/a0", "/blk/a1", "/blk/a2", "/blk/a3", "/blk/b1", "/blk/b2", "/blk/b3", "/blk/a4", "/out"]
    edges = [(0, 1), (1, 2), (2, 3), (3, 7), (0, 7), (0, 4), (4, 5), (5, 6), (6, 7), (7, 8)]
    h = build_hierarchy(names, ["Relu"] * len(names))
    assert h.paths == ["blk"]
    plan = plan_group_layout(h, len(names), edges)
    p = place(plan, {0})
    row_y = sorted({float(y) for y in p.centres[:8, 1]})
    assert len(row_y) == 5  # a0 | a1 b1 | a2 b2 | a3 b3 | a4
    route = p.routes[edges.index((0, 7))]
    assert len(route) == 3
    for (_x, top, bottom), y in zip(route, row_y[1:4], strict=True):
        assert top < y < bottom  # one run per skipped row, through that row
    assert _passage_hits(route, _rects(p)) == []
    assert set(p.routes) == {edges.index((0, 7))}  # the other edges skip no row
    # collapsed, the group is one box and the edge inside it is not drawn: no route
    assert place(plan, set()).routes == {}


@pytest.mark.slow
def test_nudenet_routes_pass_no_box(nudenet_plan):
    s, h, plan = nudenet_plan
    for depth in (0, 1, 2, h.max_depth()):
        p = place(plan, expanded_to_depth(h, depth))
        rects = _rects(p)
        assert p.routes or depth == 0
        for e, route in p.routes.items():
            assert _passage_hits(route, rects) == [], (depth, s.names[s.edges[e][0]], s.names[s.edges[e][1]])
            ys = [y for _x, top, bottom in route for y in (top, bottom)]
            assert ys == sorted(ys)  # top to bottom
