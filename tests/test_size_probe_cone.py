"""The size probe runs only the nodes its candidates depend on (:mod:`workbench.core.graph.cone`), not the whole
float model: on minilm_l6_v2 it built a session of all 368 nodes and 90 MB of weights (about 0.25 s of CPU and 70k
page faults a quantize) for one candidate that 5 nodes and 0.8 MB compute."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from test_size_guard import _grid_model

from workbench.core.graph.cone import cone_model, cone_nodes
from workbench.core.model.load import load_model, prepare_proto
from workbench.core.pipeline import size_probe
from workbench.core.planning.plan import GraphFacts
from workbench.core.planning.shape_guard import size_derived_tensors
from workbench.core.runtime.session import add_outputs


def _run(proto: onnx.ModelProto, names: list[str], feed: dict) -> list[np.ndarray]:
    so = ort.SessionOptions()
    so.log_severity_level = 4
    sess = ort.InferenceSession(proto.SerializeToString(), so, providers=["CPUExecutionProvider"])
    inputs = {i.name for i in sess.get_inputs()}
    return sess.run(names, {k: v for k, v in feed.items() if k in inputs})


def test_the_grid_s_cone_leaves_the_conv_out():
    proto = _grid_model("H", "W")
    names = [proto.graph.node[i].name for i in cone_nodes(proto.graph, ["cols", "grid"])]
    assert names == ["shape", "gather_w", "cast_w", "range", "grid_mul"]
    cone = cone_model(proto, ["grid", "cols"])
    assert sorted(t.name for t in cone.graph.initializer) == ["i_w", "one", "stride", "zero"]
    assert [o.name for o in cone.graph.output] == ["grid", "cols"]
    assert [o.type.tensor_type.elem_type for o in cone.graph.output] == [0, 0]  # not in value_info: left unset
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 6)).astype(np.float32)
    got = _run(cone, ["grid", "cols"], {"X": x})
    want = _run(add_outputs(proto, ["grid", "cols"]), ["grid", "cols"], {"X": x})
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(got[0], np.arange(6, dtype=np.float32) * 1.5)


def _if_model() -> onnx.ModelProto:
    """``out = If(flag, then: Identity(k) * 2, else: k)`` where ``k = Cast(Shape(X)[1])`` is read by the branches
    from the outer scope only; ``other = Relu(X)`` is not needed."""
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    then_g = helper.make_graph([helper.make_node("Mul", ["k", "two"], ["t_out"], name="t_mul")], "then", [],
                               [helper.make_tensor_value_info("t_out", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Identity", ["k"], ["e_out"], name="e_id")], "else", [],
                               [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, None)])
    inits = [two, numpy_helper.from_array(np.array(1, np.int64), "i1"),
             numpy_helper.from_array(np.array(True), "flag")]
    nodes = [helper.make_node("Relu", ["X"], ["other"], name="relu"),
             helper.make_node("Shape", ["X"], ["shape"], name="shape"),
             helper.make_node("Gather", ["shape", "i1"], ["k_i"], name="gather"),
             helper.make_node("Cast", ["k_i"], ["k"], name="cast", to=TensorProto.FLOAT),
             helper.make_node("If", ["flag"], ["out"], name="if", then_branch=then_g, else_branch=else_g)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", "C"])],
                          [helper.make_tensor_value_info("other", TensorProto.FLOAT, ["N", "C"])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_names_a_subgraph_reads_from_the_outer_scope_are_in_the_cone():
    proto = _if_model()
    assert [proto.graph.node[i].name for i in cone_nodes(proto.graph, ["out"])] == ["shape", "gather", "cast", "if"]
    cone = cone_model(proto, ["out"])
    assert sorted(t.name for t in cone.graph.initializer) == ["flag", "i1", "two"]  # "two" is read inside then
    x = np.zeros((3, 5), np.float32)
    np.testing.assert_array_equal(_run(cone, ["out"], {"X": x})[0], np.float32(10.0))


def test_the_probe_runs_the_cone_only(monkeypatch, tmp_path):
    made = []
    make = size_probe.make_session

    def recorded(proto, **kw):
        made.append(proto)
        return make(proto, **kw)

    monkeypatch.setattr(size_probe, "make_session", recorded)
    path = tmp_path / "calib.npz"
    np.savez(path, X=np.random.default_rng(1).standard_normal((8, 3, 8, 8)).astype(np.float32))
    found = size_probe.changing_with_size(prepare_proto(_grid_model("H", "W")), str(path), ["cols", "grid", "c_term"])
    assert found == ["cols", "grid"]
    (probed,) = made
    assert sorted(n.op_type for n in probed.graph.node) == ["Cast", "Cast", "Div", "Gather", "Gather", "Mul",
                                                             "Range", "Shape"]  # no Conv, so no Wc / Bc
    assert "Wc" not in {t.name for t in probed.graph.initializer}


def test_minilm_s_probe_reads_5_nodes_and_its_answer_holds(corpus, monkeypatch):
    model = load_model(str(corpus / "minilm_l6_v2" / "model.onnx"))
    tensors = size_derived_tensors(GraphFacts(model.proto).ix)
    assert tensors == ["/bert/embeddings/position_embeddings/Gather_output_0"]
    cone = cone_model(model.proto, tensors)
    assert len(cone.graph.node) == 5 and len(model.proto.graph.node) == 368
    assert sum(t.ByteSize() for t in cone.graph.initializer) < 800_000  # of 90 MB
    data = {k: v[:1] for k, v in np.load(corpus / "minilm_l6_v2" / "calib.npz").items()}
    assert size_probe.changing_with_size(model, data, tensors) == tensors  # positions 0..31 against 0..15
