"""Autotune curve: weight bytes and bit operations of every tried recipe, against workbench.core.analysis.cost.

digits_cnn (bundled example): Conv 9,216 + 294,912 + 294,912 MACs, Gemm 2,560 (hand count in
tests/test_cost.py); 25,744 weights and 122 biases. All four 8/8-bit: 25,744 + 122 * 4 = 26,232 bytes,
601,600 * 64 = 38,502,400 BOPs.
"""

from __future__ import annotations

import json

import onnx
import pytest
from bundled_example import EXAMPLE

from workbench.cli import main
from workbench.core import api
from workbench.core.analysis.cost import model_cost
from workbench.core.report.figures import autotune_curve
from workbench.core.tuning.autotune import (
    CurvePoint,
    _cheapest_on_target,
    apply_levels,
    autotune,
    plan_cost,
    promote,
)
from workbench.core.tuning.walk import Step, Walk

MODEL, CALIB, EVAL = (str(EXAMPLE / f) for f in ("digits_cnn.onnx", "digits_cnn_calib.npz", "digits_cnn_eval.npz"))
Q_BYTES, Q_BOPS = 25_744 + 122 * 4, 601_600 * 8 * 8


def _cost(model, recipe, folder):
    """``cost`` of the file ``quantize`` writes for ``recipe`` (its calibration-time guards included)."""
    path = folder / "written.onnx"
    onnx.save(api.quantize(model, recipe, data=CALIB, samples=32).proto, str(path))
    return api.quantized_file_cost(api.open_model(path))[0]


@pytest.fixture(scope="module")
def tuned():
    model = api.open_model(MODEL)
    recipe = api.make_recipe("cpu-u8s8")
    # an output SQNR no recipe with an 8-bit unit reaches: the walk climbs to float
    return model, recipe, autotune(model, recipe, data=CALIB, eval_data=EVAL, metric="sqnr", min_score=200.0,
                                   samples=32, eval_samples=16, promote_to="float")


def test_curve_sizes_match_cost_of_each_recipe(tuned, tmp_path):
    model, recipe, res = tuned
    assert [p.trial for p in res.curve] == list(range(len(res.curve))) and len(res.curve) > 2
    assert all(isinstance(p, CurvePoint) for p in res.curve)
    p0, p1 = res.curve[0], res.curve[1]
    full = _cost(model, recipe, tmp_path)
    assert (p0.weight_bytes, p0.bops) == (full.memory_bits // 8, full.bops) == (Q_BYTES, Q_BOPS)
    k, m, frac = p0  # still unpacks as the former (promoted, metric, fraction kept 8-bit) rows
    assert (k, m, frac) == (0, res.metric_before, 1.0) and p0[1] == res.metric_before

    (first, level), = p1.levels.items()  # the first trial promotes the worst unit alone
    assert level == "float" and first == res.promoted[0]
    row = next(r for r in full.rows if r.node == first)
    assert row.op_type in ("Conv", "Gemm") and (row.weight_bits, row.activation_bits) == (8, 8)
    assert p1.weight_bytes - p0.weight_bytes == row.weight_params * (32 - 8) // 8
    # the float unit still reads its input on the uint8 grid the unit before it writes: 32 x 8, as the file
    # reads it (it counted 32 x 32 before)
    assert p1.bops - p0.bops == row.macs * (32 * 8 - 8 * 8)
    for p in res.curve:  # every point equals cost of the file its recipe writes
        c = _cost(model, apply_levels(recipe, p.levels), tmp_path)
        assert (p.weight_bytes, p.bops) == (-(-c.memory_bits // 8), c.bops), p
    assert res.met and res.curve[-1].bops == 601_600 * 32 * 32  # all float: output SQNR infinite


def test_walk_path_never_gets_worse_and_front_is_not_dominated(tuned):
    _, _, res = tuned
    path = [p.metric for p in res.curve if p.accepted]
    assert path[0] == res.metric_before and path[-1] == res.metric_after == float("inf")
    assert all(b >= a for a, b in zip(path, path[1:], strict=False)), path
    front = res.front
    assert front and all(p.pareto for p in front)
    for p in res.curve:  # a point is off the front exactly when another is as good everywhere and better once
        beaten = any(q.metric >= p.metric and q.weight_bytes <= p.weight_bytes and q.bops <= p.bops
                     and (q.metric, q.weight_bytes, q.bops) != (p.metric, p.weight_bytes, p.bops) for q in res.curve)
        assert p.pareto != beaten or (not p.pareto and any(
            (q.metric, q.weight_bytes, q.bops) == (p.metric, p.weight_bytes, p.bops) and q.pareto for q in res.curve))
    assert front[0].weight_bytes == Q_BYTES  # the smallest model is the all-8-bit recipe


def test_plan_cost_with_int16_activations():
    model = api.open_model(MODEL)
    recipe = api.make_recipe("cpu-u8s8")
    base = model_cost(model.proto)
    gemm = next(r for r in base.rows if r.op_type == "Gemm")
    q_bytes, q_bops = plan_cost(base, api.plan(model, recipe))
    w_bytes, w_bops = plan_cost(base, api.plan(model, promote(recipe, [gemm.node], "uint16")))
    assert (q_bytes, q_bops) == (Q_BYTES, Q_BOPS)
    # the curve counts BOPs at the recipe's widths: a 16-bit-activation Gemm with 8-bit weights is 8 x 16
    assert w_bytes == q_bytes and w_bops - q_bops == gemm.macs * (8 * 16 - 8 * 8)
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
    final = [pt for pt in doc["curve"] if pt["accepted"]][-1]
    assert final["metric"] == "inf"  # all units float: the output equals float's
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.split()[:2] == ["trial", "metric"])
    table = [line.split() for line in lines[head + 1: head + 1 + len(doc["curve"])]]
    assert doc["curve"][0]["weight_bytes"] == Q_BYTES and doc["curve"][0]["bops"] == Q_BOPS
    for cells, pt in zip(table, doc["curve"], strict=True):
        assert int(cells[0]) == pt["trial"]
        assert float(cells[3]) == pytest.approx(pt["weight_bytes"] / 2**20, abs=1e-4)
        assert float(cells[4]) == pytest.approx(pt["bops"] / 1e9, abs=1e-4)
    assert table[0][3:5] == [f"{Q_BYTES / 2**20:.4f}", f"{Q_BOPS / 1e9:.4f}"]  # 0.0250 MiB, 0.0385 GBOPs
    for cells, pt in zip(table, doc["curve"], strict=True):  # int16 / float counts, on the path, on the front
        levels = pt["levels"]
        assert cells[5:10] == [str(len(levels.get("int16", []))), str(len(levels.get("float", []))), "0",
                               "*" if pt["accepted"] else "-", "*" if pt["pareto"] else "-"]
        assert " ".join(cells[10:]) == pt["step"]  # what the walk tried there
    front_at = next(i for i, line in enumerate(lines) if line.startswith("Pareto front"))
    front = [line.split() for line in lines[front_at + 2: front_at + 2 + len(doc["front"])]]
    assert doc["front"] == [pt["trial"] for pt in doc["curve"] if pt["pareto"]] or \
        sorted(doc["front"]) == [pt["trial"] for pt in doc["curve"] if pt["pareto"]]
    mibs = [float(cells[3]) for cells in front]
    assert mibs == sorted(mibs) and front[0][3] == f"{Q_BYTES / 2**20:.4f}"


def test_cli_recipe_goes_to_a_file_and_says_where(tmp_path, capsys):
    """The tuned recipe goes to --recipe-out, by default beside the model (q.onnx -> q.recipe.json); stdout
    gets one line saying where (minilm_l6_v2's recipe printed about 550 lines there); --print-recipe prints it."""
    from workbench.core.recipe.recipe import Recipe

    args = ["autotune", MODEL, "--data", CALIB, "--samples", "16", "--eval", EVAL, "--eval-samples", "8",
            "--metric", "sqnr", "--min-score", "0", "-o", str(tmp_path / "q.onnx")]
    out_recipe = tmp_path / "tuned.json"
    assert main([*args, "--recipe-out", str(out_recipe)]) == 0
    text = capsys.readouterr().out
    saved = out_recipe.read_text()
    assert Recipe.from_json(saved) == api.make_recipe("cpu-u8s8")  # min score 0: nothing promoted
    assert text.splitlines()[-1] == (f"wrote the tuned recipe to {out_recipe} (quantize --recipe {out_recipe} "
                                     f"--no-auto --no-latency-check writes {tmp_path / 'q.onnx'} again; --print-recipe prints it here)")
    assert "{" not in text and not (tmp_path / "q.recipe.json").exists()
    assert main(args) == 0  # no --recipe-out: beside the model
    beside = tmp_path / "q.recipe.json"
    text = capsys.readouterr().out
    assert beside.read_text() == saved and "{" not in text and f"wrote the tuned recipe to {beside} (" in text
    # the all-quantized figure is the preset as it is, not quantize's default recipe choice: said so
    assert "    (start point: preset cpu-u8s8 as it is, not the recipe `quantize` writes: it first chooses between " \
           "the preset and MSE activation ranges (its --auto default), which can score higher; autotune --auto " \
           "starts from that choice)" in text
    assert main([*args, "--print-recipe"]) == 0
    text = capsys.readouterr().out
    head = (f"wrote the tuned recipe to {beside} (quantize --recipe {beside} --no-auto --no-latency-check writes "
            f"{tmp_path / 'q.onnx'} again)\n")
    assert Recipe.from_json(text.split(head)[1]) == api.make_recipe("cpu-u8s8")  # labelled, then the JSON alone
    recipe = tmp_path / "q.recipe.json"  # the default target is the recipe this run reads: refused up front
    assert main([*args, "--recipe", str(recipe)]) == 2
    err = capsys.readouterr().err
    assert f"error: {recipe}: autotune writes the tuned recipe there by default" in err and "--recipe-out" in err
    assert main([*args, "--recipe", str(out_recipe)]) == 0  # a recipe file: no choice to mention
    assert "as it is: `quantize`" not in capsys.readouterr().out and beside.read_text() == saved


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


def test_the_walk_ends_on_its_cheapest_point_on_target_even_with_later_path_points():
    """Settling accepted three points on target after the cheapest one (fewer bytes, then fewer BOPs):
    the walk ends on that point, and the path stops there (digits_transformer at 45 dB: the settle's
    last points kept 0.1293 GBOPs as run where an earlier one had 0.1136, same weight bytes)."""
    metrics = [30.0, 46.0, 45.6, 45.7, 45.8]
    bops = [9, 145, 113, 129, 145]
    levels = [{}, {"a": "float", "b": "float"}, {"a": "float", "b": "int16"}, {"a": "float", "c": "int16"},
              {"a": "float"}]
    w = Walk([Step(lv, m, True) for lv, m in zip(levels, metrics, strict=True)])
    walked = [CurvePoint(len(lv), m, 1.0, 100, b, levels=lv, accepted=True, trial=i)
              for i, (lv, m, b) in enumerate(zip(levels, metrics, bops, strict=True))]
    _cheapest_on_target(walked, w, 45.0)
    assert w.final is w.steps[2] and w.final.metric == 45.6
    assert [p.accepted for p in walked] == [s.accepted for s in w.steps] == [True, True, True, False, False]


def test_with_measured_latency_the_walk_ends_on_a_point_of_its_front():
    """autotune --latency: the front ranks points by measured latency, not BOPs, so the walk's pick must
    too. digits_transformer at 45 dB (2026-12-05): trials 27 and 31 had the same weight bytes, 27 scored
    45.1302 dB at 1.40x float's latency and 0.0805 GBOPs, 31 45.1219 dB at 1.44x and 0.0795 GBOPs; the
    walk ended on 31 (fewer BOPs), which 27 dominates, so the tuned recipe was not on the printed front."""
    from workbench.core.tuning.front import pareto_indices

    metrics = [33.4, 45.1302, 45.1219]
    bops = [9, 805, 795]
    latency = [1.25, 1.40, 1.44]
    levels = [{}, {"a": "float", "b": "int16"}, {"a": "float"}]
    w = Walk([Step(lv, m, True) for lv, m in zip(levels, metrics, strict=True)])
    walked = [CurvePoint(len(lv), m, 1.0, 533 if i else 165, b, levels=lv, accepted=True, trial=i, latency=t)
              for i, (lv, m, b, t) in enumerate(zip(levels, metrics, bops, latency, strict=True))]
    _cheapest_on_target(walked, w, 45.0)
    assert w.final is w.steps[1] and [p.accepted for p in walked] == [True, True, False]
    assert pareto_indices(walked) == [0, 1]  # trial 2 is dominated by trial 1: the pick is on the front
    for p in walked:  # without measured latency the BOPs decide, as before
        p.latency, p.accepted = None, True
    w = Walk([Step(lv, m, True) for lv, m in zip(levels, metrics, strict=True)])
    _cheapest_on_target(walked, w, 45.0)
    assert w.final is w.steps[2] and 2 in pareto_indices(walked)


def test_long_names_are_cut_from_the_middle():
    from workbench.cli import _middle

    name = "/model/encoder/layer.3/attention/self/query/MatMul"
    assert _middle(name, 40) == name[:18] + "..." + name[-19:] == "/model/encoder/lay...n/self/query/MatMul"
    assert len(_middle(name, 40)) == 40 and _middle("short", 40) == "short"
    assert _middle(name, 40).endswith("query/MatMul") and _middle(name, 40).startswith("/model/encoder")


def test_int4_weights_go_to_the_least_sensitive_units_while_the_target_holds(tmp_path):
    """Target met by the recipe itself (output SQNR >= 10 dB): the int4 phase gives int4 weights to
    Conv/Gemm units, each accepted point still on target and smaller than the one before."""
    model = api.open_model(MODEL)
    recipe = api.make_recipe("cpu-u8s8")
    res = autotune(model, recipe, data=CALIB, eval_data=EVAL, metric="sqnr", min_score=10.0, samples=16,
                   eval_samples=8, int4_weights=True, max_trials=6)
    assert res.met and set(res.levels.values()) == {"int4-weights"}
    path = [p for p in res.curve if p.accepted]
    assert all(p.metric >= 10.0 for p in path) and len(path) > 1
    assert all(b.weight_bytes < a.weight_bytes for a, b in zip(path, path[1:], strict=False))
    full = model_cost(model.proto)
    for node in res.levels:  # 4 bits a weight instead of 8, rounded up per node
        row = next(r for r in full.rows if r.node == node)
        assert row.op_type in ("Conv", "Gemm")
    c = _cost(model, apply_levels(recipe, res.levels), tmp_path)
    assert path[-1].weight_bytes == -(-c.memory_bits // 8) < Q_BYTES
    assert Q_BYTES - path[-1].weight_bytes == sum(
        next(r for r in full.rows if r.node == n).weight_params * 4 for n in res.levels) // 8
    tuned = res.result.proto
    assert any(i.data_type == 22 for i in tuned.graph.initializer)  # TensorProto.INT4 weights in the file
    assert max(o.version for o in tuned.opset_import if o.domain in ("", "ai.onnx")) >= 21


def test_report_figure_draws_measured_points_path_and_front():
    mib = 2**20
    doc = {"metric": "top1", "metric_float": 0.97, "promote_to": "int16,float", "curve": [
        {"promoted": 0, "metric": 0.90, "weight_bytes": mib, "bops": 10, "accepted": True, "pareto": True},
        {"promoted": 1, "metric": 0.85, "weight_bytes": mib, "bops": 12, "accepted": False, "pareto": False},
        {"promoted": 1, "metric": 0.95, "weight_bytes": 2 * mib, "bops": 30, "accepted": True, "pareto": True},
        {"promoted": 2, "metric": "inf", "weight_bytes": 4 * mib, "bops": 64, "accepted": True, "pareto": True}]}
    ax = autotune_curve(doc, note="test").axes[0]
    data = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in ax.lines}
    assert data["measured recipe"] == ([1.0, 1.0, 2.0], [0.90, 0.85, 0.95])  # the infinite metric left out
    assert data["search path (never worse)"] == ([1.0, 2.0], [0.90, 0.95])
    assert data["Pareto front (metric, weight, BOPs)"] == ([1.0, 2.0], [0.90, 0.95])
    assert data["float model"][1] == [0.97, 0.97] and ax.get_xlabel() == "weight MiB"


def test_curve_counts_at_the_calibration_datas_shapes(tmp_path):
    """A Conv model with symbolic height and width (x[N,3,H,W]): the curve's BOPs are those of the
    calibration rows' 16x16 images (hand count), not of a 1x1 image."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.normal(0, 0.3, (4, 3, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.normal(0, 0.3, (2, 4, 3, 3)).astype(np.float32), "w2")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["h"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "hw", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2, "H", "W"])],
                              initializer=[w1, w2])
    path, data = tmp_path / "hw.onnx", tmp_path / "calib.npz"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    np.savez(data, x=rng.normal(0, 1, (12, 3, 16, 16)).astype(np.float32))
    model = api.open_model(path)
    res = autotune(model, api.make_recipe("cpu-u8s8"), data=str(data), eval_data=str(data), metric="sqnr",
                   min_score=0.0, samples=8, eval_samples=4, max_trials=2)
    macs = 16 * 16 * (4 * 3 * 9 + 2 * 4 * 9)  # output pixels x (C_out x C_in x kernel), pads keep 16x16
    assert res.curve[0].bops == macs * 8 * 8


def test_int4_candidates_have_a_weight(corpus):
    """digits_transformer's attention MatMuls multiply two activations: they carry the recipe's weight
    setting but no weight, so --int4-weights must not spend trials on them (it 'promoted' them, changing
    nothing but the curve's BOPs)."""
    from workbench.core.tuning.autotune import _int4_candidates

    model = api.open_model(corpus / "digits_transformer" / "model_opset17.onnx")
    plan = api.plan(model, api.make_recipe("cpu-u8s8"))
    units = [u for u in plan.units.values() if not u.excluded]
    picked = _int4_candidates(plan, [u.node for u in units])
    weighted = {u.node for u in units if u.weight is not None and u.op_type in ("Conv", "MatMul", "Gemm")}
    assert set(picked) == weighted and len(weighted) == 10
    assert not any(n.endswith(("self_attn/MatMul_1", "self_attn/MatMul_2")) for n in picked)
