"""Headless layout: positions for every node, layers grow along edges, deterministic, cached."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core.errors import ModelError
from workbench.core.graph.layout import (
    X_SPACING,
    Y_SPACING,
    assign_layers,
    graph_structure,
    layout_graph,
    layout_routed,
    sugiyama,
)


def _model(nodes, inputs=("x",), outputs=("y",), initializers=()):
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(i, TensorProto.FLOAT, [1, 4]) for i in inputs],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def chain(n: int) -> onnx.ModelProto:
    nodes = [helper.make_node("Relu", ["x" if i == 0 else f"t{i - 1}"], [f"t{i}" if i < n - 1 else "y"],
                              name=f"relu{i}") for i in range(n)]
    return _model(nodes)


def diamond_dag() -> onnx.ModelProto:
    """x -> a -> (b, c) ; b -> d ; (c, d) -> e ; plus a skip a -> e, and a source-only Shape feeding e."""
    nodes = [
        helper.make_node("Relu", ["x"], ["ta"], name="a"),
        helper.make_node("Sigmoid", ["ta"], ["tb"], name="b"),
        helper.make_node("Tanh", ["ta"], ["tc"], name="c"),
        helper.make_node("Neg", ["tb"], ["td"], name="d"),
        helper.make_node("Shape", ["x"], ["shape"], name="s"),
        helper.make_node("Sum", ["tc", "td", "ta"], ["te"], name="e"),
        helper.make_node("Reshape", ["te", "shape"], ["y"], name="f"),
    ]
    return _model(nodes)


def edges_by_name(proto):
    s = graph_structure(proto)
    return [(s.names[a], s.names[b]) for a, b in s.edges]


def test_chain_every_node_placed_and_layers_increase(tmp_path):
    proto = chain(12)
    pos = layout_graph(proto, cache_dir=tmp_path)
    assert sorted(pos) == sorted(f"relu{i}" for i in range(12))
    ys = [pos[f"relu{i}"][1] for i in range(12)]
    assert ys == [i * Y_SPACING for i in range(12)]
    assert len({pos[f"relu{i}"][0] for i in range(12)}) == 1  # a chain is a straight column


def test_dag_consumers_below_producers(tmp_path):
    proto = diamond_dag()
    pos = layout_graph(proto, cache_dir=tmp_path)
    assert set(pos) == {"a", "b", "c", "d", "e", "f", "s"}
    edges = edges_by_name(proto)
    assert ("a", "e") in edges and ("s", "f") in edges and len(edges) == 8
    for src, dst in edges:
        assert pos[dst][1] > pos[src][1], (src, dst, pos[src], pos[dst])
    # longest path: e is after d (a -> b -> d -> e), and the Shape is pulled down next to its consumer
    assert pos["e"][1] == 3 * Y_SPACING and pos["f"][1] == 4 * Y_SPACING
    assert pos["s"][1] == pos["f"][1] - Y_SPACING
    # nodes of one layer do not overlap
    by_layer = {}
    for x, y in pos.values():
        by_layer.setdefault(y, []).append(x)
    for xs in by_layer.values():
        xs.sort()
        assert all(b - a >= X_SPACING - 1e-6 for a, b in zip(xs, xs[1:], strict=False))


def test_random_dag_layers_and_determinism(tmp_path):
    rng = np.random.default_rng(3)
    nodes, tensors = [], ["x"]
    for i in range(300):
        k = int(rng.integers(1, 3))
        srcs = [tensors[int(j)] for j in rng.choice(len(tensors), size=min(k, len(tensors)), replace=False)]
        nodes.append(helper.make_node("Sum", srcs, [f"t{i}"], name=f"n{i}"))
        tensors.append(f"t{i}")
    nodes.append(helper.make_node("Identity", ["t299"], ["y"], name="out"))
    proto = _model(nodes)
    first = layout_graph(proto, use_cache=False)
    second = layout_graph(proto, use_cache=False)
    assert first == second
    assert len(first) == 301
    for src, dst in edges_by_name(proto):
        assert first[dst][1] > first[src][1]


def test_cache_round_trip_and_key(tmp_path):
    proto = diamond_dag()
    pos = layout_graph(proto, cache_dir=tmp_path)
    files = list(tmp_path.glob("*.json"))
    assert len(files) == 1 and files[0].stem == graph_structure(proto).digest()
    # a planted cache entry is what the next call returns: the cache is really read
    data = json.loads(files[0].read_text())
    data["x"] = [v + 1000.0 for v in data["x"]]
    files[0].write_text(json.dumps(data))
    cached = layout_graph(proto, cache_dir=tmp_path)
    assert {k: (v[0] - 1000.0, v[1]) for k, v in cached.items()} == pos
    assert layout_graph(proto, cache_dir=tmp_path, use_cache=False) == pos
    # another graph gets another key
    layout_graph(chain(3), cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.json"))) == 2


def test_corrupt_cache_is_recomputed(tmp_path):
    proto = chain(4)
    (tmp_path / f"{graph_structure(proto).digest()}.json").write_text("{not json")
    assert layout_graph(proto, cache_dir=tmp_path)["relu3"] == (0.0, 3 * Y_SPACING)


def test_empty_and_duplicate_names_get_unique_keys():
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Relu", ["a"], ["b"], name="r"),
             helper.make_node("Relu", ["b"], ["y"], name="r")]
    s = graph_structure(_model(nodes))
    assert s.names == ["Relu#0", "r", "Relu#2"]
    assert s.edges == [(0, 1), (1, 2)]


def test_if_subgraph_marked_and_outer_scope_edge():
    then_g = helper.make_graph([helper.make_node("Neg", ["ta"], ["o1"], name="neg")], "then", [],
                               [helper.make_tensor_value_info("o1", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Abs", ["ta"], ["o2"], name="abs")], "else", [],
                               [helper.make_tensor_value_info("o2", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("Relu", ["x"], ["ta"], name="a"),
             helper.make_node("ReduceSum", ["x"], ["s"], name="rs"),
             helper.make_node("Cast", ["s"], ["cond"], name="cast", to=TensorProto.BOOL),
             helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then_g, else_branch=else_g)]
    s = graph_structure(_model(nodes))
    assert s.has_subgraph == [False, False, False, True]
    assert (0, 3) in s.edges  # "ta" is used inside the branches only


def qdq_model():
    """x -> Q -> DQ -> Conv(w via weight DQ) -> Q -> DQ -> Relu -> Q -> DQ -> Add(skip from Conv) -> y."""
    inits = [numpy_helper.from_array(np.ones((2, 1, 1, 1), np.int8), "w_q"),
             numpy_helper.from_array(np.array(0.1, np.float32), "s"),
             numpy_helper.from_array(np.array(0, np.int8), "zp_i8"),
             numpy_helper.from_array(np.array(0, np.uint8), "zp_u8")]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "zp_u8"], ["x_q"], name="q0"),
        helper.make_node("DequantizeLinear", ["x_q", "s", "zp_u8"], ["x_dq"], name="dq0"),
        helper.make_node("DequantizeLinear", ["w_q", "s", "zp_i8"], ["w"], name="w_dq"),
        helper.make_node("Conv", ["x_dq", "w"], ["c"], name="conv"),
        helper.make_node("QuantizeLinear", ["c", "s", "zp_u8"], ["c_q"], name="q1"),
        helper.make_node("DequantizeLinear", ["c_q", "s", "zp_u8"], ["c_dq"], name="dq1"),
        helper.make_node("Relu", ["c_dq"], ["r"], name="relu"),
        helper.make_node("QuantizeLinear", ["r", "s", "zp_i8"], ["r_q"], name="q2"),
        helper.make_node("DequantizeLinear", ["r_q", "s", "zp_i8"], ["r_dq"], name="dq2"),
        helper.make_node("Add", ["r_dq", "c"], ["y"], name="add"),
    ]
    return _model(nodes, initializers=inits)


def test_collapse_qdq_pairs_into_edge_badges():
    proto = qdq_model()
    full = graph_structure(proto)
    assert len(full.names) == 10 and full.hidden == []
    s = graph_structure(proto, collapse_qdq=True)
    assert s.names == ["conv", "relu", "add"]
    assert sorted(s.hidden) == ["dq0", "dq1", "dq2", "q0", "q1", "q2", "w_dq"]
    edges = {(s.names[a], s.names[b]): e for e, (a, b) in enumerate(s.edges)}
    assert set(edges) == {("conv", "relu"), ("relu", "add"), ("conv", "add")}
    assert s.edge_badges == {edges[("conv", "relu")]: "u8", edges[("relu", "add")]: "i8"}
    assert s.node_tags == {0: "in:u8 w:i8"}  # input pair and weight DQ become tags on the Conv
    pos = layout_graph(s, use_cache=False)
    assert pos["conv"][1] < pos["relu"][1] < pos["add"][1]


def test_pair_before_a_graph_output_tags_its_producer():
    """conv -> Q -> DQ -> y (a graph output) and, on a branch, conv -> Q -> DQ -> relu -> z: the
    pair before y has no drawn edge; it was hidden without a trace (the diff tab said "out:u8")."""
    inits = [numpy_helper.from_array(np.ones((2, 1, 1, 1), np.float32), "w"),
             numpy_helper.from_array(np.array(0.1, np.float32), "s"),
             numpy_helper.from_array(np.array(0, np.uint8), "zp_u8"),
             numpy_helper.from_array(np.array(0, np.int8), "zp_i8")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             helper.make_node("QuantizeLinear", ["c", "s", "zp_u8"], ["c_q"], name="q_out"),
             helper.make_node("DequantizeLinear", ["c_q", "s", "zp_u8"], ["y"], name="dq_out"),
             helper.make_node("QuantizeLinear", ["c", "s", "zp_i8"], ["b_q"], name="q_b"),
             helper.make_node("DequantizeLinear", ["b_q", "s", "zp_i8"], ["b"], name="dq_b"),
             helper.make_node("Relu", ["b"], ["z"], name="relu")]
    proto = _model(nodes, outputs=("y", "z"), initializers=inits)
    s = graph_structure(proto, collapse_qdq=True)
    assert s.names == ["conv", "relu"] and sorted(s.hidden) == ["dq_b", "dq_out", "q_b", "q_out"]
    assert s.node_tags == {0: "out:u8"}
    assert s.edge_badges == {0: "i8"}  # the branch's pair stays an edge badge
    assert graph_structure(proto).node_tags == {}  # nothing collapsed, nothing tagged


def test_not_a_model_raises_model_error():
    with pytest.raises(ModelError, match="ModelProto"):
        graph_structure("model.onnx")


def test_assign_layers_survives_a_cycle():
    layers = assign_layers(3, [(0, 1), (1, 2), (2, 1)])
    assert layers[1] == layers[2] == layers[0] + 1  # the cycle shares one layer below its producer


def skip_model() -> onnx.ModelProto:
    """a0 -> a1 -> a2 -> a3 -> a4 plus a skip a0 -> a4 (over layers 1, 2, 3), and a side chain
    b1 -> b2 -> b3 beside the skipped layers (fed by a0, read by a4)."""
    nodes = [helper.make_node("Relu", ["x"], ["t0"], name="a0")]
    nodes += [helper.make_node("Relu", [f"t{i - 1}"], [f"t{i}"], name=f"a{i}") for i in range(1, 4)]
    nodes += [helper.make_node("Sigmoid", ["t0" if i == 1 else f"s{i - 1}"], [f"s{i}"], name=f"b{i}") for i in (1, 2, 3)]
    nodes.append(helper.make_node("Sum", ["t3", "t0", "s3"], ["y"], name="a4"))
    return _model(nodes)


def _inside_a_box(x, y, pos, w=150.0, h=54.0):
    """Names of nodes whose box (w x h around the centre) contains (x, y)."""
    return [n for n, (cx, cy) in pos.items() if abs(x - cx) < w / 2 and abs(y - cy) < h / 2]


def test_long_edge_gets_one_waypoint_per_skipped_layer_outside_every_box(tmp_path):
    proto = skip_model()
    s = graph_structure(proto)
    layout = layout_routed(proto, cache_dir=tmp_path)
    pos = layout.positions
    skip = s.edges.index((s.names.index("a0"), s.names.index("a4")))
    assert pos["a0"][1] == 0.0 and pos["a4"][1] == 4 * Y_SPACING
    route = layout.routes[skip]
    assert [y for _x, y in route] == [1 * Y_SPACING, 2 * Y_SPACING, 3 * Y_SPACING]
    for x, y in route:
        assert _inside_a_box(x, y, pos) == []
        # the whole vertical run through the layer (the node height) stays clear of the boxes there
        assert all(abs(x - cx) >= 75.0 for cx, cy in pos.values() if cy == y)
    # edges into the next layer have no waypoints; a0 -> b1 skips nothing
    assert (s.names.index("a0"), s.names.index("b1")) in s.edges
    assert set(layout.routes) == {e for e, (a, b) in enumerate(s.edges) if pos[s.names[b]][1] - pos[s.names[a]][1] > Y_SPACING}
    # the cache gives the same positions and routes back
    cached = layout_routed(proto, cache_dir=tmp_path)
    assert cached.positions == pos and cached.routes == layout.routes
    assert layout_graph(proto, cache_dir=tmp_path) == pos


def test_routing_of_disconnected_graph_stays_with_its_edges():
    """Two copies of the skip model side by side (igraph lays components out separately)."""
    edges = [(0, 1), (1, 2), (2, 3), (0, 3), (4, 5), (5, 6), (6, 7), (7, 8), (4, 8)]
    layers = [0, 1, 2, 3, 0, 1, 2, 3, 4, 0]
    xs, routing = sugiyama(10, edges, layers, 50)  # vertex 9: isolated
    assert [[lay for _x, lay in pts] for pts in routing] == [[], [], [], [1, 2], [], [], [], [], [1, 2, 3]]
    for pts in routing:
        for x, lay in pts:
            assert all(abs(x - xs[v]) >= 1.0 for v in range(10) if layers[v] == lay)
