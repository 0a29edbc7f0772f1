"""Latency fallback: when the written model measured slower than float, the islands whose Q/DQ did
not pay are left float and the model is written again. The measurement is a table keyed by which
MatMuls the written model runs on dequantized inputs (no timing in the test)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.errors import Cancelled
from workbench.core.issues import IssueCode, Severity
from workbench.core.pipeline import latency_check
from workbench.core.planning.island_guard import quantized_islands
from workbench.core.progress import CancelToken
from workbench.core.recipe.recipe import NodeSettings
from workbench.core.runtime.latency import LatencyComparison


def _two_islands(tmp_path):
    """mm1 (X [N,16] @ W1 [16,16]) -> Sin (never quantized) -> mm2 (@ W2 [16,8]) -> Y: two islands."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), n)
             for n, s in (("W1", (16, 16)), ("W2", (16, 8)))]
    nodes = [helper.make_node("MatMul", ["X", "W1"], ["a"], name="mm1"),
             helper.make_node("Sin", ["a"], ["b"], name="sin"),
             helper.make_node("MatMul", ["b", "W2"], ["Y"], name="mm2")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 16])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 8])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, tmp_path / "m.onnx")
    np.savez(tmp_path / "calib.npz", X=rng.standard_normal((8, 16)).astype(np.float32))
    return api.open_model(str(tmp_path / "m.onnx")), str(tmp_path / "calib.npz")


def _quantized_matmuls(proto: onnx.ModelProto) -> frozenset[str]:
    """MatMul nodes both of whose inputs come out of a DequantizeLinear (what onnxruntime fuses)."""
    dq = {o for n in proto.graph.node if n.op_type == "DequantizeLinear" for o in n.output}
    return frozenset(n.name for n in proto.graph.node if n.op_type == "MatMul" and all(i in dq for i in n.input))


def _fake_latency(monkeypatch, table: dict[frozenset, float], float_s: float = 1e-3) -> list[frozenset]:
    """Replace the measurement by ``table`` (quantized MatMuls -> ratio); returns the placements measured."""
    seen = []

    def compare(float_model, quant_model, feed, **_):
        assert isinstance(quant_model, onnx.ModelProto)  # in memory: its weights are never serialised for timing
        q = _quantized_matmuls(quant_model)
        seen.append(q)
        return LatencyComparison(float_s, float_s * table[q], 9, float_s, float_s * table[q])

    monkeypatch.setattr(latency_check, "compare", compare)
    return seen


def _ops(proto: onnx.ModelProto) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in proto.graph.node:
        out[n.op_type] = out.get(n.op_type, 0) + 1
    return out


def test_the_island_that_does_not_pay_is_left_float_and_the_one_that_pays_stays(tmp_path, monkeypatch):
    model, data = _two_islands(tmp_path)
    both, one, two = frozenset({"mm1", "mm2"}), frozenset({"mm1"}), frozenset({"mm2"})
    seen = _fake_latency(monkeypatch, {both: 1.3, one: 0.9, two: 1.5, frozenset(): 1.0})
    steps = []
    res = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data, latency_check=True,
                       progress=lambda done, total, msg: steps.append((done, total, msg)))
    # as planned (1.3), mm1's island float (1.5: worse, dropped), mm2's island float (0.9: kept, done)
    assert seen == [both, two, one]
    assert [(d, t) for d, t, m in steps if m.startswith("Latency fallback")] == [(0, 3), (1, 3), (3, 3)]
    assert _quantized_matmuls(res.proto) == one and res.latency.ratio == pytest.approx(0.9)
    # mm1 runs on DQ(x), DQ(W1) and writes float for the float Sin; mm2 reads float b and W2
    assert _ops(res.proto) == {"QuantizeLinear": 1, "DequantizeLinear": 2, "MatMul": 2, "Sin": 1}
    mm2 = next(n for n in res.proto.graph.node if n.name == "mm2")
    assert mm2.input[1] in {i.name for i in res.proto.graph.initializer}
    kept = [i for i in res.issues if i.code == IssueCode.LATENCY_KEPT_FLOAT]
    assert [(i.node, i.severity) for i in kept] == [("mm2", Severity.WARNING)]
    assert "1.30x" in kept[0].message and "0.90x" in kept[0].message
    # the first run's "slower than float" warning is replaced by the kept placement's own check
    assert not [i for i in res.issues if i.code == IssueCode.SLOWER_THAN_FLOAT]
    # measured (the model as planned), decided (mm2's island float), written (the model kept), in that order
    notes = [(i.code, i.message.split(" (")[0] if i.code == IssueCode.LATENCY else i.node) for i in res.issues
             if i.code in (IssueCode.LATENCY, IssueCode.LATENCY_KEPT_FLOAT)]
    assert notes == [(IssueCode.LATENCY, "latency quantized / float = 1.30"), (IssueCode.LATENCY_KEPT_FLOAT, "mm2"),
                     (IssueCode.LATENCY, "latency of the model written")]
    assert [i.message for i in res.issues if i.code == IssueCode.LATENCY][1].startswith(
        "latency of the model written (1 island left float, 1 of 2 node units quantized) / float = 0.90 (")
    # the decision is in the result's recipe: replayed without measuring, the same bytes
    assert res.recipe.overrides["mm2"].exclude and "mm1" not in res.recipe.overrides
    assert api.quantize(model, res.recipe, data=data).proto.SerializeToString() == res.proto.SerializeToString()


def test_a_model_whose_only_island_does_not_pay_is_written_float(tmp_path, monkeypatch):
    model, data = _two_islands(tmp_path)
    both = frozenset({"mm1", "mm2"})
    # every partial placement measured slower too: only leaving every island float helps
    seen = _fake_latency(monkeypatch, {both: 2.0, frozenset({"mm1"}): 1.9, frozenset({"mm2"}): 1.95,
                                       frozenset(): 1.01})
    res = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data, latency_check=True)
    # mm1's island float: 1.95 (under 3 % better, dropped); mm2's: 1.9 (kept); then every island float
    assert seen == [both, frozenset({"mm2"}), frozenset({"mm1"}), frozenset()]
    assert _ops(res.proto) == {"MatMul": 2, "Sin": 1}
    kept = [i for i in res.issues if i.code == IssueCode.LATENCY_KEPT_FLOAT and i.node]
    assert sorted(i.node for i in kept) == ["mm1", "mm2"] and all("2.00x" in i.message for i in kept)
    assert res.recipe.overrides["mm1"].exclude and res.recipe.overrides["mm2"].exclude
    # no unit is quantized now: one more warning says the file is the float model and how to force it
    (whole,) = [i for i in res.issues if i.code == IssueCode.LATENCY_KEPT_FLOAT and not i.node]
    assert "so the model written is the float model, not a quantized one (as quantized it measured 2.00x" \
        in whole.message and "pass --no-latency-check to write it quantized anyway" in whole.message


def test_a_slowdown_of_microseconds_leaves_every_island_float_without_trials(tmp_path, monkeypatch):
    """1.50x of a 20 us model (10 us a run, below MIN_SLOWDOWN_S): no single island is tried, every island is
    left float at once and kept whatever it measures (1.05x here: a float model's noise), with one warning."""
    model, data = _two_islands(tmp_path)
    seen = _fake_latency(monkeypatch, {frozenset({"mm1", "mm2"}): 1.5, frozenset(): 1.05}, float_s=20e-6)
    steps = []
    res = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data, latency_check=True,
                       progress=lambda done, total, msg: steps.append((done, total, msg)))
    assert seen == [frozenset({"mm1", "mm2"}), frozenset()]
    assert [s for s in steps if s[2].startswith("Latency fallback")] == [
        (0, 1, "Latency fallback: measuring with 2 islands float"), (1, 1, "Latency fallback: done")]
    assert _ops(res.proto) == {"MatMul": 2, "Sin": 1} and res.latency.ratio == pytest.approx(1.05)
    warnings = [(i.code, i.node, i.message) for i in res.issues if i.severity == Severity.WARNING]
    assert warnings == [(IssueCode.LATENCY_KEPT_FLOAT, "", (
        "quantization does not pay at this size: as quantized the model measured 1.50x its float latency (10 us "
        "slower per run of 0.020 ms: the Q/DQ transitions cost more than the integer kernels save), so every unit "
        "is left float and the model written is the float model; --no-latency-check writes it quantized, "
        "--remeasure-latency (WORKBENCH_REMEASURE_LATENCY=1 in the app's environment) measures again"))]
    notes = [(i.node, i.message.split(":")[0]) for i in res.issues
             if i.code == IssueCode.LATENCY_KEPT_FLOAT and i.severity == Severity.INFO]
    assert notes == [("mm1", "kept float with its island of 1 node unit (mm1)"),
                     ("mm2", "kept float with its island of 1 node unit (mm2)")]
    # the decision is in the result's recipe, as the island fallback's: a replay writes the same bytes unmeasured
    assert res.recipe.overrides["mm1"].exclude and res.recipe.overrides["mm2"].exclude
    assert api.quantize(model, res.recipe, data=data).proto.SerializeToString() == res.proto.SerializeToString()


def test_a_slowdown_of_microseconds_on_an_island_the_recipe_names_is_written_as_planned(tmp_path, monkeypatch):
    """mm2 named by the recipe stays quantized, so leaving the rest float cannot make the model run as float
    does: nothing is tried, the latency check's warning stands."""
    model, data = _two_islands(tmp_path)
    seen = _fake_latency(monkeypatch, {frozenset({"mm1", "mm2"}): 1.5}, float_s=20e-6)
    recipe = api.make_recipe("cpu-u8s8").with_overrides(["mm2"], NodeSettings())
    res = api.quantize(model, recipe, data=data, latency_check=True)
    assert len(seen) == 1 and _quantized_matmuls(res.proto) == {"mm1", "mm2"}
    warn = [i for i in res.issues if i.severity == Severity.WARNING]
    assert len(warn) == 1 and warn[0].code == IssueCode.SLOWER_THAN_FLOAT
    assert warn[0].message.startswith("quantization does not pay at this size: the quantized model measured 1.50x")
    assert "written as the recipe asks" in warn[0].message
    assert not [i for i in res.issues if i.code == IssueCode.LATENCY_KEPT_FLOAT]


def test_an_island_the_recipe_names_is_never_tried(tmp_path, monkeypatch):
    model, data = _two_islands(tmp_path)
    both, one = frozenset({"mm1", "mm2"}), frozenset({"mm1"})
    seen = _fake_latency(monkeypatch, {both: 1.3, one: 0.9, frozenset({"mm2"}): 1.5, frozenset(): 1.0})
    recipe = api.make_recipe("cpu-u8s8").with_overrides(["mm2"], NodeSettings())
    res = api.quantize(model, recipe, data=data, latency_check=True)
    # mm2 is named: only mm1's island is tried, and leaving it float measured slower (1.5): kept as planned
    assert seen == [both, frozenset({"mm2"})] and _quantized_matmuls(res.proto) == both
    note = next(i for i in res.issues if i.code == IssueCode.LATENCY_KEPT_FLOAT)
    assert note.severity == Severity.INFO and "1.30x" in note.message
    warn = [i for i in res.issues if i.code == IssueCode.SLOWER_THAN_FLOAT]  # still said: slower than float
    assert len(warn) == 1 and warn[0].severity == Severity.WARNING and "1.30x" in warn[0].message
    assert "mm1" not in res.recipe.overrides


def test_cancel_between_measured_placements_stops_the_job(tmp_path, monkeypatch):
    model, data = _two_islands(tmp_path)
    token = CancelToken()
    seen = _fake_latency(monkeypatch, {frozenset({"mm1", "mm2"}): 1.3})
    real = latency_check.compare

    def cancel_after_first(*a, **k):
        out = real(*a, **k)
        token.cancel()  # the user presses Cancel while the first measurement runs
        return out

    monkeypatch.setattr(latency_check, "compare", cancel_after_first)
    with pytest.raises(Cancelled):
        api.quantize(model, api.make_recipe("cpu-u8s8"), data=data, latency_check=True, cancel=token)
    assert len(seen) == 1  # no placement was written or measured after the cancel


def test_islands_are_the_groups_of_units_sharing_a_quantized_tensor(tmp_path):
    model, data = _two_islands(tmp_path)
    plan = api.plan(model, api.make_recipe("cpu-u8s8"))
    assert quantized_islands(plan) == [["mm1"], ["mm2"]]
    assert quantized_islands(api.plan(model, api.make_recipe("cpu-u8s8").with_excluded(["mm1"]))) == [["mm2"]]
