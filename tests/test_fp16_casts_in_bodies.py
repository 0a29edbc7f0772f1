"""A Cast to float32 inside an If / Loop / Scan body of a float16 initializer of the outer graph is folded into a
float32 initializer of that body, as the same Cast in the main graph is (case 17's fold): before, it stayed, so the
MatMul it feeds had no constant weight and was never quantized. The 16-bit initializer stays while another node
still reads it at float16; a body input of the same name hides it (no fold). Models of IR version 3 keep their
bodies' Casts (their graphs must list every initializer as an input). Outputs are checked against
onnx.reference (bit for bit) and onnxruntime on the model as given."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from workbench.core.graph.walk import iter_graphs
from workbench.core.model.cast_fold import fold_weight_casts
from workbench.core.model.load import load_model
from workbench.core.planning.plan import build_plan
from workbench.core.recipe.recipe import Recipe

F, H = TensorProto.FLOAT, TensorProto.FLOAT16


def _weights() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(6)
    return {
        "W16": (rng.standard_normal((4, 4)) * 0.5).astype(np.float16),
        "V16": (rng.standard_normal((4, 4)) * 0.5).astype(np.float16),
    }


def _if_branch(name: str, weight: str) -> onnx.GraphProto:
    """Cast(weight -> float32) then MatMul(X, that): X and weight read from the outer graph."""
    nodes = [
        helper.make_node("Cast", [weight], [f"{name}_w"], name=f"{name}_cast", to=F),
        helper.make_node("MatMul", ["X", f"{name}_w"], [f"{name}_y"], name=f"{name}_mm"),
    ]
    return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(f"{name}_y", F, [2, 4])])


def _loop_body() -> onnx.GraphProto:
    """v <- MatMul(v, Cast(W16)) each iteration (W16 of the outer graph)."""
    nodes = [
        helper.make_node("Identity", ["cond_in"], ["cond_out"], name="loop_cond"),
        helper.make_node("Cast", ["W16"], ["loop_w"], name="loop_cast", to=F),
        helper.make_node("MatMul", ["v_in", "loop_w"], ["v_out"], name="loop_mm"),
    ]
    inputs = [
        helper.make_tensor_value_info("iter", TensorProto.INT64, []),
        helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
        helper.make_tensor_value_info("v_in", F, [2, 4]),
    ]
    outputs = [
        helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
        helper.make_tensor_value_info("v_out", F, [2, 4]),
    ]
    return helper.make_graph(nodes, "loop_body", inputs, outputs)


def _scan_body(hidden: bool) -> onnx.GraphProto:
    """Each row r of the scanned input: MatMul(r, Cast(V16)); ``hidden``: the body names its scan input V16 too,
    which hides the outer V16 (its Cast then reads the row, a float16 tensor)."""
    row = "V16" if hidden else "row"
    nodes = [helper.make_node("Cast", ["V16"], ["scan_w"], name="scan_cast", to=F)]
    if hidden:
        nodes += [
            helper.make_node("Unsqueeze", ["scan_w", "axes0"], ["scan_r"], name="scan_unsq"),
            helper.make_node("Identity", ["scan_r"], ["scan_y"], name="scan_id"),
        ]
        inits = [numpy_helper.from_array(np.array([0], np.int64), "axes0")]
    else:
        nodes += [
            helper.make_node("Unsqueeze", [row, "axes0"], ["scan_r"], name="scan_unsq"),
            helper.make_node("MatMul", ["scan_r", "scan_w"], ["scan_y"], name="scan_mm"),
        ]
        inits = [numpy_helper.from_array(np.array([0], np.int64), "axes0")]
    inputs = [helper.make_tensor_value_info(row, H if hidden else F, [4])]
    return helper.make_graph(
        nodes, "scan_body", inputs, [helper.make_tensor_value_info("scan_y", F, [1, 4])], inits
    )


def _model(fp16_reader: bool, hidden: bool = False) -> onnx.ModelProto:
    """X [2, 4] and a boolean c; If(c) of two MatMuls by Cast(W16) / Cast(V16), a Loop of 2 MatMuls by Cast(W16)
    and a Scan over X's rows by Cast(V16), every Cast in a body; ``fp16_reader``: the main graph also multiplies
    by W16 at float16."""
    w = _weights()
    nodes = [
        helper.make_node(
            "If",
            ["c"],
            ["yi"],
            name="if",
            then_branch=_if_branch("then", "W16"),
            else_branch=_if_branch("else", "V16"),
        ),
        helper.make_node("Loop", ["trips", "go", "X"], ["yl"], name="loop", body=_loop_body()),
        helper.make_node("Scan", ["Xs"], ["ys"], name="scan", body=_scan_body(hidden), num_scan_inputs=1),
    ]
    outputs = [
        helper.make_tensor_value_info("yi", F, [2, 4]),
        helper.make_tensor_value_info("yl", F, [2, 4]),
        helper.make_tensor_value_info("ys", F, [2, 1, 4]),
    ]
    inputs = [
        helper.make_tensor_value_info("X", F, [2, 4]),
        helper.make_tensor_value_info("c", TensorProto.BOOL, []),
    ]
    if hidden:
        inputs.append(helper.make_tensor_value_info("Xs", H, [2, 4]))
    else:
        nodes.insert(0, helper.make_node("Identity", ["X"], ["Xs"], name="xs"))
    if fp16_reader:
        nodes += [
            helper.make_node("Cast", ["X"], ["Xh"], name="x_half", to=H),
            helper.make_node("MatMul", ["Xh", "W16"], ["yh"], name="half_mm"),
        ]
        outputs.append(helper.make_tensor_value_info("yh", H, [2, 4]))
    inits = [numpy_helper.from_array(v, k) for k, v in w.items()]
    inits.append(numpy_helper.from_array(np.array(2, np.int64), "trips"))
    inits.append(numpy_helper.from_array(np.array(True), "go"))  # onnx.reference's Loop needs its cond given
    graph = helper.make_graph(nodes, "bodies", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def _feeds(hidden: bool) -> list[dict[str, np.ndarray]]:
    """The inputs for c True and c False."""
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    extra = {"Xs": x.astype(np.float16)} if hidden else {}
    return [{"X": x, "c": np.array(c), **extra} for c in (True, False)]


def _run(model: onnx.ModelProto, hidden: bool = False) -> dict[str, list[np.ndarray]]:
    """Every output for c True and c False, by onnxruntime (CPU, graph optimizations off) and by onnx.reference
    (keys ``ort:NAME`` and ``ref:NAME``)."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    ref = ReferenceEvaluator(model)
    names = [o.name for o in model.graph.output]
    out: dict[str, list[np.ndarray]] = {}
    for feed in _feeds(hidden):
        for engine, values in (("ort", sess.run(names, feed)), ("ref", ref.run(names, feed))):
            for name, v in zip(names, values, strict=True):
                out.setdefault(f"{engine}:{name}", []).append(np.asarray(v))
    return out


def _ops(model: onnx.ModelProto) -> Counter:
    return Counter(n.op_type for _, g in iter_graphs(model.graph) for n in g.node)


def _inits(model: onnx.ModelProto) -> dict[str, tuple[str, int]]:
    """Initializer name -> (the graph holding it, its data type)."""
    return {t.name: (g.name, t.data_type) for _, g in iter_graphs(model.graph) for t in g.initializer}


def _same(a: dict, b: dict) -> None:
    """onnx.reference's outputs bit for bit; onnxruntime's to float32 rounding (its MatMul by a constant weight
    packs it: another summation order than by the Cast's output, 1 ulp apart on the scan's rows here)."""
    assert a.keys() == b.keys()
    for k in a:
        for x, y in zip(a[k], b[k], strict=True):
            assert x.dtype == y.dtype and x.shape == y.shape
            if k.startswith("ref:"):
                np.testing.assert_array_equal(x, y)
            else:
                np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-7)


def test_casts_of_outer_weights_in_bodies_fold_and_compute_the_same():
    given = _model(fp16_reader=False)
    ref = _run(given)
    folded = onnx.ModelProto()
    folded.CopyFrom(given)
    assert sorted(fold_weight_casts(folded)) == ["else_cast", "loop_cast", "scan_cast", "then_cast"]
    onnx.checker.check_model(folded, full_check=True)
    assert _ops(given)["Cast"] == 4 and _ops(folded)["Cast"] == 0
    assert _ops(folded) == {"If": 1, "Loop": 1, "Scan": 1, "Identity": 2, "MatMul": 4, "Unsqueeze": 1}
    w = _weights()
    # each body holds its float32 weight; the outer float16 weights, read by nothing else, are gone
    assert _inits(folded) == {
        "trips": ("bodies", TensorProto.INT64),
        "go": ("bodies", TensorProto.BOOL),
        "then_w": ("then", F),
        "else_w": ("else", F),
        "loop_w": ("loop_body", F),
        "scan_w": ("scan_body", F),
        "axes0": ("scan_body", TensorProto.INT64),
    }
    by_name = {t.name: numpy_helper.to_array(t) for _, g in iter_graphs(folded.graph) for t in g.initializer}
    np.testing.assert_array_equal(by_name["loop_w"], w["W16"].astype(np.float32))
    np.testing.assert_array_equal(by_name["scan_w"], w["V16"].astype(np.float32))
    _same(_run(folded), ref)
    # the loop's two MatMuls by W16 (float32 compute on float16 values), worked out here
    x = _feeds(False)[0]["X"]
    w32 = w["W16"].astype(np.float32)
    np.testing.assert_allclose(ref["ref:yl"][0], x @ w32 @ w32, rtol=1e-5, atol=1e-6)


def test_an_outer_weight_also_read_at_float16_stays(tmp_path):
    given = _model(fp16_reader=True)
    ref = _run(given)
    path = tmp_path / "m.onnx"
    onnx.save(given, path)
    model = load_model(path)  # preparation folds them
    assert _ops(model.proto)["Cast"] == 1  # x_half: a Cast of an input, not of a weight
    inits = _inits(model.proto)
    assert inits["W16"] == ("bodies", H)  # half_mm reads it at float16
    assert "V16" not in inits  # only the else branch's and the scan's Casts read it
    assert {k: v for k, v in inits.items() if v[1] == F} == {
        "then_w": ("then", F),
        "else_w": ("else", F),
        "loop_w": ("loop_body", F),
        "scan_w": ("scan_body", F),
    }
    assert any(n.startswith("Folded 4 Cast nodes of float16 / bfloat16 weights") for n in model.notes)
    _same(_run(model.proto), ref)
    # the four body MatMuls now read a constant float32 weight: units of the plan (none before)
    assert sorted(build_plan(model, Recipe()).units) == ["else_mm", "loop_mm", "scan_mm", "then_mm"]


def test_a_body_name_that_hides_the_outer_weight_keeps_its_cast():
    given = _model(fp16_reader=False, hidden=True)
    ref = _run(given, hidden=True)
    folded = onnx.ModelProto()
    folded.CopyFrom(given)
    assert sorted(fold_weight_casts(folded)) == ["else_cast", "loop_cast", "then_cast"]  # not the scan's
    assert _ops(folded)["Cast"] == 1 and "scan_w" not in _inits(folded)
    _same(_run(folded, hidden=True), ref)


def test_bodies_of_an_ir3_model_keep_their_casts():
    given = _model(fp16_reader=False)
    given.ir_version = 3
    assert fold_weight_casts(given) == [] and _ops(given)["Cast"] == 4
