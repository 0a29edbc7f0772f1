"""Latency fallback on a model whose MatMuls sit inside an If's branches (cases README, case 20).

``quantized_islands`` left out the units of subgraphs, so "every island float" left only the ``relu`` island
float: the file still held 12 Q/DQ (X and M in the main graph, the MatMul inside each branch) while the warning
said "every unit is left float and the model written is the float model" and the CLI printed "2 of 2 node units
quantized". The branch MatMuls and ``relu`` share the If's output: one island, of the two MatMuls (``relu`` is a
unit only while M is quantized: float with them it is none, and the island counts what "N of M node units" counts;
it said "island of 3" beside "0 of 2"). The measurement is replaced by a
ratio keyed by whether the written model holds any Q/DQ (no timing in the test).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from shared_paths import CASES

from workbench.cli import main
from workbench.core import api
from workbench.core.pipeline import latency_check
from workbench.core.planning.island_guard import quantized_islands
from workbench.core.runtime.latency import LatencyComparison

CASE = CASES / "20_if_subgraph_matmul"
QDQ = ("QuantizeLinear", "DequantizeLinear")


def _nodes(graph: onnx.GraphProto):
    """Every node of ``graph`` and of its subgraphs, depth first."""
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _nodes(attr.g)


def _qdq(proto: onnx.ModelProto) -> int:
    return sum(n.op_type in QDQ for n in _nodes(proto.graph))


def _if_model(tmp_path: Path) -> tuple[str, str]:
    """cond bool[], X [1,16]; If(cond) {MatMul(X, W1)} else {MatMul(X, W2)} -> M -> Relu -> Y."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array((rng.standard_normal((16, 16)) * 0.3).astype(np.float32), n)
             for n in ("W1", "W2")]
    out = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 16])  # noqa: E731
    then_g = helper.make_graph([helper.make_node("MatMul", ["X", "W1"], ["t"], name="then_mm")], "then", [], [out("t")])
    else_g = helper.make_graph([helper.make_node("MatMul", ["X", "W2"], ["e"], name="else_mm")], "else", [], [out("e")])
    nodes = [helper.make_node("If", ["cond"], ["M"], name="branch", then_branch=then_g, else_branch=else_g),
             helper.make_node("Relu", ["M"], ["Y"], name="relu")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                                       helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 16])],
                          [out("Y")], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, tmp_path / "if.onnx")
    np.savez(tmp_path / "if.npz", cond=np.array([i % 2 == 0 for i in range(8)]),
             X=rng.standard_normal((8, 1, 16)).astype(np.float32))
    return str(tmp_path / "if.onnx"), str(tmp_path / "if.npz")


def _fake_latency(monkeypatch, float_s: float) -> list[int]:
    """Quantized (any Q/DQ, subgraphs included) measures 1.37x ``float_s``, the float graph 1.0x; returns the
    Q/DQ counts of the models measured."""
    seen = []

    def compare(float_model, quant_model, feed, **_):
        seen.append(_qdq(quant_model))
        ratio = 1.37 if seen[-1] else 1.0
        return LatencyComparison(float_s, float_s * ratio, 9, float_s, float_s * ratio)

    monkeypatch.setattr(latency_check, "compare", compare)
    return seen


@pytest.mark.parametrize("float_s", [14e-6, 1e-3], ids=["microseconds", "trials"])
def test_every_unit_float_leaves_no_qdq_in_the_branches(tmp_path, monkeypatch, float_s):
    path, data = _if_model(tmp_path)
    seen = _fake_latency(monkeypatch, float_s)
    model = api.open_model(path)
    res = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data, latency_check=True)
    # as planned 14 Q/DQ: Q/DQ of X, M and Y in the main graph (6), in each branch DQ(X), DQ(W), Q/DQ of the
    # MatMul's output (4 + 4); then one trial with the one island (then_mm, else_mm, relu) float
    assert seen == [14, 0]
    assert _qdq(res.proto) == 0
    assert [n.op_type for n in _nodes(res.proto.graph)] == ["If", "MatMul", "MatMul", "Relu"]
    assert sorted(res.plan.units) == ["else_mm", "then_mm"] and all(u.excluded for u in res.plan.units.values())
    # the island counts the units the written plan counts: relu, a unit only while M is quantized, is float with
    # them and no unit at all (the note said "island of 3 quantized units" beside "0 of 2 node units quantized")
    islands = [i for i in res.issues if i.island]
    assert [sorted(i.units) for i in islands] == [["else_mm", "then_mm"]]
    assert islands[0].message.startswith(
        "kept float with its island of 2 node units (else_mm, then_mm): a connected group of quantized node units "
        "between float nodes; ")
    assert sorted(n for n, o in res.recipe.overrides.items() if o.exclude) == ["else_mm", "then_mm"]
    assert any("the model written is the float model" in i.message for i in res.issues)
    _same_as_float(path, res.proto)


def test_a_relu_carried_by_the_island_links_it_but_is_not_one_of_its_units(tmp_path):
    """Quantized as planned the Relu is a unit (its input M is quantized); float with the branch MatMuls it is
    none, so the island lists the two units the written plan counts."""
    path, _ = _if_model(tmp_path)
    model = api.open_model(path)
    recipe = api.make_recipe("cpu-u8s8")
    plan = api.plan(model, recipe, guard=True)
    assert sorted(plan.units) == ["else_mm", "relu", "then_mm"]
    assert quantized_islands(plan) == [["else_mm", "then_mm"]]
    assert [n for n in plan.units if plan.carried(n)] == ["relu"]
    float_plan = api.plan(model, recipe.with_excluded(["else_mm", "then_mm"]), guard=True)
    assert sorted(float_plan.units) == ["else_mm", "then_mm"]


def _same_as_float(path: str, proto: onnx.ModelProto) -> None:
    """``proto`` computes what the float model at ``path`` does, exactly, on both branches."""
    for cond in (False, True):
        feed = {"cond": np.array(cond), "X": np.linspace(-2, 2, 16, dtype=np.float32).reshape(1, 16)}
        ref = ReferenceEvaluator(onnx.load(path)).run(None, feed)[0]
        np.testing.assert_array_equal(ReferenceEvaluator(proto).run(None, feed)[0], ref)



@pytest.mark.skipif(not CASE.with_suffix(".onnx").exists(), reason="the shared cases folder is absent")
def test_case_20_cli_line_and_warning_agree_with_the_file(tmp_path, monkeypatch, capsys):
    _fake_latency(monkeypatch, 14e-6)
    out = tmp_path / "out.onnx"
    assert main(["quantize", str(CASE.with_suffix(".onnx")), "--data", str(CASE.with_suffix(".npz")),
                 "-o", str(out)]) == 0
    captured = capsys.readouterr()
    written = onnx.load(str(out))
    assert _qdq(written) == 0
    assert [n.op_type for n in _nodes(written.graph)] == ["If", "MatMul", "MatMul", "Relu"]
    assert f"wrote {out} (0 of 2 node units quantized, preset cpu-u8s8" in captured.out
    assert "so every unit is left float and the model written is the float model" in captured.err
    assert "warning: no node unit is quantized: all 2 were kept float" in captured.err
    assert ("note: else_mm: kept float with its island of 2 node units (else_mm, then_mm): a connected group of "
            "quantized node units between float nodes; ") in captured.err
    # the float model itself: its graph (nodes, branches, weights) and opsets as in the input file
    float_model = onnx.load(str(CASE.with_suffix(".onnx")))
    assert written.graph == float_model.graph and written.opset_import == float_model.opset_import
