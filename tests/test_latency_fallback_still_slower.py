"""Latency fallback: a placement kept with islands float that still measured slower than float is reported by one
warning on the model written (its islands float, its units quantized, both ratios, what to do), never by its own
check's "written as the recipe asks" beside the islands left float (digits_transformer, a16w8: 1.63x as planned,
1.33x with 2 islands float, 36 us a run, printed both). Measurements are a table keyed by which MatMuls run on
dequantized inputs (no timing)."""

from __future__ import annotations

import pytest

from tests.test_latency_fallback import _fake_latency, _ops, _quantized_matmuls, _two_islands
from workbench.core import api
from workbench.core.issues import IssueCode, Severity
from workbench.core.recipe.recipe import NodeSettings

REMEASURE = "--remeasure-latency (WORKBENCH_REMEASURE_LATENCY=1 in the app's environment) measures again"


def _warnings(res) -> list[tuple[IssueCode, str, str]]:
    return [(i.code, i.node, i.message) for i in res.issues if i.severity == Severity.WARNING]


def test_a_remaining_slowdown_of_microseconds_is_one_warning_on_the_islands_left_float(tmp_path, monkeypatch):
    """0.1 ms float: 1.63x as planned (63 us a run: islands are tried), mm1's island float 1.70x (dropped), mm2's
    1.33x (kept; 33 us a run, too little to try further)."""
    model, data = _two_islands(tmp_path)
    both, one, two = frozenset({"mm1", "mm2"}), frozenset({"mm1"}), frozenset({"mm2"})
    seen = _fake_latency(monkeypatch, {both: 1.63, two: 1.70, one: 1.33}, float_s=0.1e-3)
    res = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data, latency_check=True)
    assert seen == [both, two, one]
    # the file: mm1 quantized (Q of X, DQ of X and W1), mm2 float
    assert _quantized_matmuls(res.proto) == one and res.latency.ratio == pytest.approx(1.33)
    assert _ops(res.proto) == {"QuantizeLinear": 1, "DequantizeLinear": 2, "MatMul": 2, "Sin": 1}
    assert [n for n, u in res.plan.units.items() if not u.excluded] == ["mm1"]
    assert _warnings(res) == [
        (IssueCode.LATENCY_KEPT_FLOAT, "mm2",
         "kept float with its island of 1 node unit (mm2): a quantized node unit between float nodes; as quantized the model measured 1.63x its float "
         "latency, with 1 island left float 1.33x (onnxruntime CPU, 1 thread); name a node in an override, or pass "
         "--no-latency-check, to quantize it anyway"),
        (IssueCode.SLOWER_THAN_FLOAT, "",
         "still slower than float: with 1 island left float (1 of 2 node units quantized) the model written "
         "measured 1.33x the float model's latency (1.63x as planned); 33 us slower per run of 0.100 ms, too "
         "little for leaving further islands float to win back; keep the float model for speed, exclude more nodes "
         "(--exclude, or the app's Inspector), or pass --no-latency-check to write every unit the recipe asks "
         f"quantized; {REMEASURE}")]
    assert not any("written as the recipe asks" in i.message for i in res.issues)
    # the recipe records mm2 float: a replay writes the same bytes without measuring
    assert res.recipe.overrides["mm2"].exclude and "mm1" not in res.recipe.overrides
    assert api.quantize(model, res.recipe, data=data).proto.SerializeToString() == res.proto.SerializeToString()


def test_a_placement_kept_still_slower_with_no_faster_one_left_says_so_once(tmp_path, monkeypatch):
    """1 ms float, mm2 named by the recipe: mm1's island float measured 1.20x (1.30x as planned: kept, still 200 us a
    run slower, but no island is left to try)."""
    model, data = _two_islands(tmp_path)
    both, two = frozenset({"mm1", "mm2"}), frozenset({"mm2"})
    seen = _fake_latency(monkeypatch, {both: 1.3, two: 1.2})
    recipe = api.make_recipe("cpu-u8s8").with_overrides(["mm2"], NodeSettings())
    res = api.quantize(model, recipe, data=data, latency_check=True)
    assert seen == [both, two]
    assert _quantized_matmuls(res.proto) == two
    assert sum(n.op_type == "QuantizeLinear" for n in res.proto.graph.node) == 1
    assert [n for n, u in res.plan.units.items() if not u.excluded] == ["mm2"]
    assert _warnings(res) == [
        (IssueCode.LATENCY_KEPT_FLOAT, "mm1",
         "kept float with its island of 1 node unit (mm1): a quantized node unit between float nodes; as quantized the model measured 1.30x its float "
         "latency, with 1 island left float 1.20x (onnxruntime CPU, 1 thread); name a node in an override, or pass "
         "--no-latency-check, to quantize it anyway"),
        (IssueCode.SLOWER_THAN_FLOAT, "",
         "still slower than float: with 1 island left float (1 of 2 node units quantized) the model written "
         "measured 1.20x the float model's latency (1.30x as planned); no further island left float measured "
         "faster; keep the float model for speed, exclude more nodes (--exclude, or the app's Inspector), or pass "
         f"--no-latency-check to write every unit the recipe asks quantized; {REMEASURE}")]
