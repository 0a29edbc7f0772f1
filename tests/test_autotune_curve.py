"""Autotune curve: weight bytes and bit operations of every tried recipe, against workbench.core.analysis.cost.

digits_cnn (bundled example): Conv 9,216 + 294,912 + 294,912 MACs, Gemm 2,560 (hand count in
tests/test_cost.py); 25,744 weights and 122 biases. All four 8/8-bit: 25,744 + 122 * 4 = 26,232 bytes,
601,600 * 64 = 38,502,400 BOPs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.core import api
from workbench.core.analysis.cost import bits_from_configs, model_cost
from workbench.core.tuning.autotune import CurvePoint, autotune, plan_cost, promote

EXAMPLE = Path(__file__).resolve().parents[1] / "workbench" / "resources" / "example"
MODEL, CALIB, EVAL = (str(EXAMPLE / f) for f in ("digits_cnn.onnx", "digits_cnn_calib.npz", "digits_cnn_eval.npz"))
Q_BYTES, Q_BOPS = 25_744 + 122 * 4, 601_600 * 8 * 8


def _cost(model, recipe):
    plan = api.plan(model, recipe)
    return model_cost(model.proto, bits_from_configs({u.node: u.config for u in plan.units.values()
                                                     if not u.excluded}))


@pytest.fixture(scope="module")
def tuned():
    model = api.open_model(MODEL)
    recipe = api.make_recipe("cpu-u8s8")
    # an output SQNR no recipe with an 8-bit unit reaches: every doubling step is tried, then all units
    return model, recipe, autotune(model, recipe, data=CALIB, eval_data=EVAL, metric="sqnr", min_score=200.0,
                                   samples=32, eval_samples=16)


def test_curve_sizes_match_cost_of_each_recipe(tuned):
    model, recipe, res = tuned
    ks = [p.promoted for p in res.curve]
    assert ks == sorted(ks) and ks[:3] == [0, 1, 2] and all(isinstance(p, CurvePoint) for p in res.curve)
    p0, p1 = res.curve[0], res.curve[1]
    full = _cost(model, recipe)
    assert (p0.weight_bytes, p0.bops) == (full.memory_bits // 8, full.bops) == (Q_BYTES, Q_BOPS)
    k, m, frac = p0  # still unpacks as the former (promoted, metric, fraction kept 8-bit) rows
    assert (k, m, frac) == (0, res.metric_before, 1.0) and p0[1] == res.metric_before

    first = res.promoted[0]  # promoted to float (excluded) at curve point 1
    row = next(r for r in full.rows if r.node == first)
    assert row.op_type in ("Conv", "Gemm") and (row.weight_bits, row.activation_bits) == (8, 8)
    assert p1.weight_bytes - p0.weight_bytes == row.weight_params * (32 - 8) // 8
    assert p1.bops - p0.bops == row.macs * (32 * 32 - 8 * 8)
    for p in res.curve:  # every point equals cost.py on its own recipe
        c = _cost(model, promote(recipe, res.promoted[:p.promoted], "float"))
        assert (p.weight_bytes, p.bops) == (-(-c.memory_bits // 8), c.bops), p
    assert res.curve[-1].bops == 601_600 * 32 * 32


def test_plan_cost_with_int16_activations():
    model = api.open_model(MODEL)
    recipe = api.make_recipe("cpu-u8s8")
    base = model_cost(model.proto)
    gemm = next(r for r in base.rows if r.op_type == "Gemm")
    q_bytes, q_bops = plan_cost(base, api.plan(model, recipe))
    w_bytes, w_bops = plan_cost(base, api.plan(model, promote(recipe, [gemm.node], "uint16")))
    assert (q_bytes, q_bops) == (Q_BYTES, Q_BOPS)
    assert w_bytes == q_bytes and w_bops - q_bops == gemm.macs * 8 * (16 - 8)
    assert plan_cost(None, api.plan(model, recipe)) == (None, None)


def test_cli_prints_curve_table_and_writes_json(tmp_path, capsys):
    out_json = tmp_path / "curve.json"
    code = main(["autotune", MODEL, "--data", CALIB, "--samples", "32", "--eval", EVAL, "--eval-samples", "16",
                 "--metric", "sqnr", "--min-score", "200", "-o", str(tmp_path / "q.onnx"),
                 "--curve-json", str(out_json)])
    assert code == 0  # all units in float: output SQNR infinite
    text = capsys.readouterr().out
    def strict(literal):
        raise AssertionError(f"{literal} is not JSON")

    doc = json.loads(out_json.read_text(), parse_constant=strict)
    assert doc["curve"][-1]["metric"] == "inf"  # all units float: the output equals float's
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.split()[:2] == ["promoted", "metric"])
    table = [line.split() for line in lines[head + 1: head + 1 + len(doc["curve"])]]
    assert doc["curve"][0]["weight_bytes"] == Q_BYTES and doc["curve"][0]["bops"] == Q_BOPS
    for cells, pt in zip(table, doc["curve"], strict=True):
        assert int(cells[0]) == pt["promoted"]
        assert float(cells[3]) == pytest.approx(pt["weight_bytes"] / 2**20, abs=1e-4)
        assert float(cells[4]) == pytest.approx(pt["bops"] / 1e9, abs=1e-4)
    assert table[0][3:] == [f"{Q_BYTES / 2**20:.4f}", f"{Q_BOPS / 1e9:.4f}"]  # 0.0250 MiB, 0.0385 GBOPs


def test_cli_recipe_out_replaces_the_printed_recipe(tmp_path, capsys):
    out_recipe = tmp_path / "tuned.json"
    code = main(["autotune", MODEL, "--data", CALIB, "--samples", "16", "--eval", EVAL, "--eval-samples", "8",
                 "--metric", "sqnr", "--min-score", "0", "-o", str(tmp_path / "q.onnx"),
                 "--recipe-out", str(out_recipe)])
    text = capsys.readouterr().out
    assert code == 0 and f"wrote the tuned recipe to {out_recipe}" in text
    from workbench.core.recipe.recipe import Recipe

    saved = out_recipe.read_text()
    assert Recipe.from_json(saved) == api.make_recipe("cpu-u8s8")  # min score 0: nothing promoted
    assert saved.strip() not in text  # the recipe JSON goes to the file only


def test_metric_never_prints_negative_zero():
    from workbench.core.analysis.evaluate import fmt_metric

    assert [fmt_metric(v) for v in (-0.0, -0.00004, -0.00006, 0.12345)] == ["0.0000", "0.0000", "-0.0001", "0.1235"]


def test_missed_target_keeps_the_best_point_with_fewest_units_promoted():
    """A target no point reaches, on a metric that does not move: every point ties, so the recipe
    comes back as given (promoting every unit to float would buy nothing)."""
    model = api.open_model(MODEL)
    recipe = api.make_recipe("cpu-u8s8")
    res = autotune(model, recipe, data=CALIB, eval_data=EVAL, metric=lambda q, f, labels: 0.5,
                   min_score=0.9, samples=16, eval_samples=8)
    assert not res.met and res.promoted == [] and res.recipe == recipe
    assert res.metric_after == 0.5 and len(res.curve) > 2  # it did try promoting
    def quantized(plan):
        return sorted(u.node for u in plan.units.values() if not u.excluded)

    assert quantized(res.result.plan) == quantized(api.plan(model, recipe)) != []


def test_long_names_are_cut_from_the_middle():
    from workbench.cli import _middle

    name = "/model/encoder/layer.3/attention/self/query/MatMul"
    assert _middle(name, 40) == name[:18] + "..." + name[-19:] == "/model/encoder/lay...n/self/query/MatMul"
    assert len(_middle(name, 40)) == 40 and _middle("short", 40) == "short"
    assert _middle(name, 40).endswith("query/MatMul") and _middle(name, 40).startswith("/model/encoder")
