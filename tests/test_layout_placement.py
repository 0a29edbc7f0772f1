"""Horizontal placement of the flat layout: a side branch sits next to the chain it leaves, and no two
vertices of a layer (nodes or long edges' waypoints) are closer than a column (``X_SPACING``).

igraph's own coordinates (Brandes & Köpf) put the side branch below two columns (380 scene px) from every
node it is joined to, and two nodes of the second graph half a column (95 px) apart: their 150 px boxes
overlapped."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from workbench.core.graph.layout import X_SPACING, Y_SPACING, graph_structure, layout_routed
from workbench.core.graph.placement import _isotonic, place_columns


def _dag(n: int, edges: list[tuple[int, int]], names: dict[int, str]) -> onnx.ModelProto:
    """Node ``i`` (op Sum, named ``names.get(i, f"n{i}")``) reads the outputs of its producers in ``edges``;
    a node without producers reads the graph input."""
    ins: dict[int, list[str]] = {i: [] for i in range(n)}
    for a, b in edges:
        ins[b].append(f"t{a}")
    users = {a for a, _b in edges}
    nodes = [helper.make_node("Sum", ins[i] or ["x"], [f"t{i}"], name=names.get(i, f"n{i}")) for i in range(n)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info(f"t{i}", TensorProto.FLOAT, None)
                               for i in range(n) if i not in users])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def _rows(layout) -> dict[float, list[float]]:
    rows: dict[float, list[float]] = {}
    for x, y in layout.positions.values():
        rows.setdefault(y, []).append(x)
    for pts in layout.routes.values():
        for x, y in pts:
            rows.setdefault(y, []).append(x)
    return rows


#: three blocks of a chain ``cK_J`` (``in`` -> c0_0 -> ... -> c2_4), with residual edges (in -> c0_3, c1_6 -> c2_4),
#: side branches ``bK_J`` that leave the chain and rejoin it (c1_2 -> b1_6 -> c1_5: a one-node branch, as a
#: Shape -> Reshape) and source nodes ``sK_J`` feeding it (a Cast of a constant, say); node order as written
BLOCKS_EDGES = [(0, 1), (1, 2), (2, 3), (3, 4), (0, 4), (1, 5), (5, 4), (0, 6), (6, 7), (7, 8), (8, 4), (4, 9), (9, 10),
                (10, 11), (11, 12), (12, 13), (13, 14), (14, 15), (11, 16), (16, 17), (17, 14), (11, 18), (18, 14),
                (19, 11), (20, 14), (21, 14), (15, 22), (22, 23), (23, 24), (24, 25), (25, 26), (15, 26), (24, 27),
                (27, 28), (28, 26), (22, 29), (29, 30), (30, 26), (31, 22), (32, 26)]
BLOCKS_NAMES = ["in", "c0_0", "c0_1", "c0_2", "c0_3", "b0_0", "b0_1", "b0_2", "b0_3", "c1_0", "c1_1", "c1_2", "c1_3",
                "c1_4", "c1_5", "c1_6", "b1_4", "b1_5", "b1_6", "s1_19", "s1_20", "s1_21", "c2_0", "c2_1", "c2_2", "c2_3",
                "c2_4", "b2_7", "b2_8", "b2_9", "b2_10", "s2_31", "s2_32"]


def test_side_branch_sits_next_to_the_chain(tmp_path):
    proto = _dag(len(BLOCKS_NAMES), BLOCKS_EDGES, dict(enumerate(BLOCKS_NAMES)))
    layout = layout_routed(proto, cache_dir=tmp_path)
    s = graph_structure(proto)
    x = {name: layout.positions[name][0] for name in s.names}
    joined: dict[str, list[str]] = {}
    for u, v in s.edges:
        joined.setdefault(s.names[u], []).append(s.names[v])
        joined.setdefault(s.names[v], []).append(s.names[u])
    far = {b: min(abs(x[b] - x[j]) for j in joined[b]) for b in s.names if b.startswith("b")}
    # each branch node in the column next to a node it is joined to, at most: a node is 150 px wide, columns
    # X_SPACING (190 px) apart (igraph's placement: b1_6 two columns, 380 px, from both c1_2 and c1_5)
    assert max(far.values()) <= X_SPACING, far
    assert abs(x["b1_6"] - x["c1_2"]) <= X_SPACING  # beside the node it leaves
    assert layout.positions["c2_4"][1] == 17 * Y_SPACING  # layers as before: longest path


def test_no_two_vertices_of_a_layer_closer_than_a_column(tmp_path):
    # a chain with a skip and three source nodes (a Cast of a constant, say) feeding it
    edges = [(0, 1), (0, 3), (1, 2), (2, 3), (3, 4), (5, 2), (6, 4), (7, 3)]
    layout = layout_routed(_dag(8, edges, {}), cache_dir=tmp_path)
    assert layout.routes  # c0 -> c3 skips two layers: its waypoints count as vertices of those layers
    for y, xs in _rows(layout).items():
        xs = sorted(xs)
        assert all(b - a >= X_SPACING for a, b in zip(xs, xs[1:], strict=False)), (y, xs)


def test_place_columns_keeps_each_layers_order_on_whole_columns():
    rng = np.random.default_rng(7)
    layers = rng.integers(0, 6, 60).tolist()
    xs = rng.normal(0, 3, 60).round(1).tolist()  # ties and overlaps included
    edges = [(a, b) for a, b in rng.integers(0, 60, (90, 2)).tolist() if layers[b] == layers[a] + 1]
    placed = place_columns(xs, layers, edges, 40)
    assert min(placed) == 0 and all(p == int(p) for p in placed)
    for lay in set(layers):
        before = sorted((i for i in range(60) if layers[i] == lay), key=lambda i: (xs[i], i))
        after = [placed[i] for i in before]
        assert all(b - a >= 1 for a, b in zip(after, after[1:], strict=False))


def _pav(y: list[float], w: list[float]) -> list[float]:
    """Textbook pool adjacent violators, one row."""
    blocks: list[list[float]] = []
    for yi, wi in zip(y, w, strict=True):
        blocks.append([wi, wi * yi, 1])
        while len(blocks) > 1 and blocks[-2][1] / blocks[-2][0] > blocks[-1][1] / blocks[-1][0]:
            sw, sy, n = blocks.pop()
            blocks[-1] = [blocks[-1][0] + sw, blocks[-1][1] + sy, blocks[-1][2] + n]
    return [sy / sw for sw, sy, n in blocks for _ in range(int(n))]


def test_vectorised_isotonic_regression_matches_the_textbook_one():
    rng = np.random.default_rng(3)
    for _ in range(300):
        lens = rng.integers(1, 8, rng.integers(1, 6))
        rows = np.repeat(np.arange(len(lens)), lens)
        y = rng.normal(0, rng.choice([0.1, 1.0, 10.0]), len(rows))
        w = rng.uniform(0.01, 10.0, len(rows))
        want = np.concatenate([_pav(y[rows == r].tolist(), w[rows == r].tolist()) for r in range(len(lens))])
        got = y.copy()
        _isotonic(got, w, rows)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)


def test_place_columns_of_a_graph_on_one_layer():
    """One row only (a one-node graph, or nodes with no edges between them): the sweep over the rows of the other
    parity took the max of nothing, and `workbench-cli report` of a one-MatMul model ended in a ValueError."""
    assert place_columns([0.0], [0], [], 1) == [0.0]
    assert place_columns([0.0, 3.0, 1.0], [0, 0, 0], [], 3) == [0.0, 3.0, 1.0]  # no edge moves them
