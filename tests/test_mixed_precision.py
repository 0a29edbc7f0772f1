"""The recipe choice's last step: a group test for units that hold most of the output noise, kept float
(cpu-u8s8) or given 16-bit activations (the other 8-bit presets; the 16-bit tests below turn cpu-u8s8's
float promotion off to reuse its model and numbers)."""

from __future__ import annotations

import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main
from workbench.core import api
from workbench.core.tuning import mixed_precision, recipe_choice
from workbench.core.tuning.mixed_precision import (
    GROUPS,
    KEEP_DB,
    MIN_GAIN_DB,
    find_promotion,
    removed,
    runs,
    searches,
    unexplained,
)
from workbench.core.tuning.recipe_choice import choose_recipe, widened

ROWS, FEAT, DEPTH = 40, 16, 8


def _noise_gain(power: dict[str, float]):
    """Gain (dB) of removing the noise of a group when unit ``u`` contributes ``power[u]`` of it
    (independent noises add up): ``10 log10(total / (total - sum over the group))``."""
    total = sum(power.values())
    return lambda group: 10 * math.log10(total / (total - sum(power[u] for u in group)))


def test_runs_cut_in_order_without_empty_runs():
    assert runs(list("abcdefghij"), 4) == [["a", "b"], ["c", "d", "e"], ["f", "g"], ["h", "i", "j"]]
    assert runs(["a", "b"], 4) == [["a"], ["b"]]
    assert runs([], 4) == [[]] and find_promotion([], lambda g: 99.0).units == []


def test_concentrated_noise_is_narrowed_to_the_units_that_hold_it():
    """16 units; u0 and u1 hold 16 of 17.4 noise units. Their run of 4 gains 11.6 dB, the half
    [u0, u1] 10.9 dB (kept: within KEEP_DB), then u0 alone 2.7 dB (not kept): [u0, u1] is promoted.
    The first run removes 93 % of the noise, so the other runs are not scored (7 % + SLACK left, less
    than the 93 % they would need to win); [u2, u3] (0.5 % left) and u1 alone (46 % left, 2.7 dB at
    most, short of the 9.9 dB a half must keep) neither."""
    names = [f"u{i}" for i in range(16)]
    power = {u: (8.0 if u in ("u0", "u1") else 0.1) for u in names}
    found = find_promotion(names, _noise_gain(power))
    assert found.units == ["u0", "u1"]
    assert math.isclose(found.gain_db, 10 * math.log10(17.4 / 1.4), rel_tol=1e-12)
    assert [(t[0], t[2]) for t in found.tried] == [("u0", 4), ("u0", 2), ("u0", 1)]
    assert len(found.tried) <= searches(len(names))
    assert 10 * math.log10(17.4 / 1.4) > 10 * math.log10(17.4 / 1.2) - KEEP_DB
    # the full test (nothing skipped) promotes the same units
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(mixed_precision, "SLACK", math.inf)
        full = find_promotion(names, _noise_gain(power))
    assert (full.units, full.gain_db) == (found.units, found.gain_db)
    assert [(t[0], t[2]) for t in full.tried] == [("u0", 4), ("u4", 4), ("u8", 4), ("u12", 4),
                                                  ("u0", 2), ("u2", 2), ("u0", 1), ("u1", 1)]


def test_noise_fractions():
    assert removed(10 * math.log10(4)) == pytest.approx(0.75, abs=1e-15) and removed(0.0) == 0.0
    assert removed(-math.inf) == -math.inf and removed(-10 * math.log10(2)) == pytest.approx(-1.0, abs=1e-15)
    # losses and unwritable groups explain nothing
    assert unexplained(1.0, [10 * math.log10(4), -3.0, -math.inf]) == pytest.approx(0.25, abs=1e-15)


def test_a_later_run_is_scored_while_the_noise_left_could_make_it_win():
    """u8..u11 hold 63 % of the noise and the first run 32 % (1.6 dB, below MIN_GAIN_DB): 68 % is left
    after the first run, so the next ones are scored and the third run (4.3 dB) is narrowed, not the
    first. After it 3 % + SLACK is left, less than its 63 %: the fourth run is not scored."""
    names = [f"u{i}" for i in range(16)]
    power = {u: (3.0 if i < 4 else 6.0 if 8 <= i < 12 else 0.25) for i, u in enumerate(names)}
    found = find_promotion(names, _noise_gain(power))
    assert [(t[0], t[2]) for t in found.tried[:3]] == [("u0", 4), ("u4", 4), ("u8", 4)]
    assert found.tried[3][0] == "u8" and found.units[0] == "u8" and found.gain_db >= MIN_GAIN_DB


def test_both_halves_are_scored_when_the_first_keeps_too_little():
    """u2 and u3 hold the first run's noise: its first half [u0, u1] removes 0.6 % of the noise, so
    [u2, u3] is scored and promoted."""
    names = [f"u{i}" for i in range(16)]
    power = {u: (8.0 if u in ("u2", "u3") else 0.05) for u in names}
    found = find_promotion(names, _noise_gain(power))
    assert [(t[0], t[2]) for t in found.tried[:3]] == [("u0", 4), ("u0", 2), ("u2", 2)]
    assert found.units == ["u2", "u3"] and math.isclose(found.gain_db, 10 * math.log10(16.7 / 0.7), rel_tol=1e-12)


def test_spread_noise_promotes_nothing_after_one_score_per_run():
    """Equal noise in 16 units: each quarter removes a quarter of it, 1.25 dB < MIN_GAIN_DB."""
    names = [f"u{i}" for i in range(16)]
    found = find_promotion(names, _noise_gain(dict.fromkeys(names, 1.0)))
    assert found.units == [] and len(found.tried) == GROUPS
    assert found.best_tried_db == 10 * math.log10(4 / 3) < MIN_GAIN_DB


def test_a_group_that_cannot_be_written_is_never_promoted():
    names = [f"u{i}" for i in range(8)]
    found = find_promotion(names, lambda group: -math.inf)
    assert found.units == [] and len(found.tried) == GROUPS


def _outlier_chain(tmp_path):
    """x [N, 16] -> MatMul -> Clip(-4, 4) -> 7 more MatMuls -> y. Calibration row 0 holds one value
    of 400 in x; every other value is standard normal. The 8-bit grid of x (MatMul ``mm0``'s input)
    then steps by about 1.6 and rounds the other rows' x to a few levels, while the Clip keeps the
    outlier away from every later tensor: the model's output noise sits in mm0's activations."""
    rng = np.random.default_rng(5)
    nodes, inits, prev = [], [], "x"
    for i in range(DEPTH):
        w = np.linalg.qr(rng.standard_normal((FEAT, FEAT)))[0].astype(np.float32)  # orthogonal: scale kept
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"], name=f"mm{i}"))
        prev = f"m{i}"
        if i == 0:
            inits += [numpy_helper.from_array(np.array(-4, np.float32), "lo"),
                      numpy_helper.from_array(np.array(4, np.float32), "hi")]
            nodes.append(helper.make_node("Clip", ["m0", "lo", "hi"], ["c0"], name="clip"))
            prev = "c0"
    nodes[-1].output[0] = "y"
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", FEAT])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", FEAT])], inits)
    path = tmp_path / "chain.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    x = rng.standard_normal((ROWS, FEAT)).astype(np.float32)
    x[0, 3] = 400.0
    data = tmp_path / "calib.npz"
    np.savez(data, x=x)
    return path, data, x


def _held_out_sqnr(proto: onnx.ModelProto, float_path, x: np.ndarray) -> float:
    """Output SQNR (dB) over the choice's held-out rows (the last quarter), one row per run."""
    rows = x[ROWS - ROWS // 4:]
    ref = ort.InferenceSession(str(float_path), providers=["CPUExecutionProvider"])
    got = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    f = np.concatenate([ref.run(None, {"x": r[None]})[0] for r in rows]).astype(np.float64)
    q = np.concatenate([got.run(None, {"x": r[None]})[0] for r in rows]).astype(np.float64)
    return 10 * math.log10(np.sum(f ** 2) / np.sum((f - q) ** 2))


def _first_rows(data, tmp_path):
    """The calibration rows the choice scores with (all but the held-out quarter), as their own file."""
    first = tmp_path / "first.npz"
    np.savez(first, x=np.load(data)["x"][:ROWS - ROWS // 4])
    return first


def _recipe():
    """cpu-u8s8 with 7-bit weights on every CPU: onnxruntime's integer kernels give the same results
    with and without VNNI (8-bit weights saturate without it), so the scores do not depend on the CPU."""
    return api.make_recipe("cpu-u8s8", reduce_range=True)


@pytest.fixture
def sixteen_bit(monkeypatch):
    """cpu-u8s8's promoted units get uint16 activations (as another 8-bit preset's get 16 bits) instead of
    staying float."""
    monkeypatch.setattr(recipe_choice, "FLOAT_PROMOTION_PRESETS", frozenset())


def test_the_choice_gives_16_bit_activations_to_the_units_holding_the_noise(tmp_path, sixteen_bit):
    """mm0 reads the outlier's grid. The run [mm0, mm1] gains about 21 dB; mm0 alone about 1.5 dB less
    (mm1 then reads mm0's 16-bit output on its own 8-bit grid), more than KEEP_DB: the pair is promoted."""
    path, data, x = _outlier_chain(tmp_path)
    model = api.open_model(path)
    rep = choose_recipe(model, _recipe(), data)
    assert rep.promotion.units == ["mm0", "mm1"] and rep.wide_dtype == "uint16"
    first_alone = next(t[3] for t in rep.promotion.tried if t[:3] == ("mm0", "mm0", 1))
    assert rep.promotion.gain_db - KEEP_DB > first_alone > MIN_GAIN_DB
    assert list(rep.recipe.overrides) == ["mm0", "mm1"]
    assert {o.activation.dtype for o in rep.recipe.overrides.values()} == {"uint16"}
    # the gain it reports is the held-out SQNR of the two recipes, as onnxruntime measures them on the
    # rows the choice scored with (ranges from the other rows)
    first = _first_rows(data, tmp_path)
    chosen = recipe_choice.variant(_recipe(), rep.chosen)
    before = _held_out_sqnr(api.quantize(model, chosen, data=first).proto, path, x)
    after = _held_out_sqnr(api.quantize(model, rep.recipe, data=first).proto, path, x)
    assert after - before >= MIN_GAIN_DB
    assert math.isclose(rep.promotion.gain_db, after - before, abs_tol=1e-6)
    assert math.isclose(rep.scores[rep.chosen], before, abs_tol=1e-6)
    # the written model: x reaches mm0 on a uint16 grid, the MatMuls after mm1 read uint8
    q = api.quantize(model, rep.recipe, data=data, calibration=rep.calibration).proto
    zero_points = {i.name: numpy_helper.to_array(i).dtype for i in q.graph.initializer}
    dtype_of = {n.input[0]: zero_points[n.input[2]] for n in q.graph.node if n.op_type == "QuantizeLinear"}
    assert dtype_of["x"] == np.uint16
    assert [dtype_of[f"m{i}"] for i in range(2, DEPTH - 1)] == [np.uint8] * (DEPTH - 3)


def test_with_cpu_u8s8_the_choice_keeps_float_the_unit_holding_the_noise(tmp_path):
    """onnxruntime's CPU provider runs 16-bit activations on float kernels, so cpu-u8s8 promotes to float:
    mm0 alone (x's outlier grid) gains about 20 dB kept float (mm1 no longer needs promoting: it reads
    mm0's float output on its own grid), written as an exclusion, and the reported gain is the held-out
    SQNR onnxruntime measures for the two recipes."""
    path, data, x = _outlier_chain(tmp_path)
    model = api.open_model(path)
    rep = choose_recipe(model, _recipe(), data)
    assert rep.wide_dtype == recipe_choice.FLOAT and rep.promotion.units == ["mm0"]
    assert {n: o.exclude for n, o in rep.recipe.overrides.items()} == {"mm0": True}
    assert rep.label == f"{rep.chosen} + 1 unit kept float"
    assert f"; 1 unit kept float (mm0): {rep.promotion.gain_db:+.1f} dB; --no-auto quantizes every unit at 8 bits; " \
        in rep.summary()
    first = _first_rows(data, tmp_path)
    before = _held_out_sqnr(api.quantize(model, recipe_choice.variant(_recipe(), rep.chosen), data=first).proto,
                            path, x)
    after = _held_out_sqnr(api.quantize(model, rep.recipe, data=first).proto, path, x)
    assert after - before >= MIN_GAIN_DB
    assert math.isclose(rep.promotion.gain_db, after - before, abs_tol=1e-6)
    # the written model: x and w0 reach mm0 as they are, every later MatMul reads uint8 and int8 weights
    q = api.quantize(model, rep.recipe, data=data, calibration=rep.calibration).proto
    quantized = {n.input[0] for n in q.graph.node if n.op_type == "QuantizeLinear"}
    mm0 = next(n for n in q.graph.node if n.name == "mm0")
    assert list(mm0.input) == ["x", "w0"] and "x" not in quantized
    assert quantized == {"c0", *(f"m{i}" for i in range(1, DEPTH - 1))}
    assert rep.opset == 17 and [o.version for o in q.opset_import if o.domain == ""] == [17]  # no 16-bit Q/DQ


def test_the_promotion_level_follows_the_preset():
    """cpu-u8s8 (onnxruntime CPU) promotes to float, s8s8 to int16 activations; a16w8 has no 8-bit
    activations to promote from."""
    assert recipe_choice.promotion_level(api.make_recipe("cpu-u8s8")) == "float"
    assert recipe_choice.promotion_level(api.make_recipe("s8s8")) == "int16"
    assert recipe_choice.promotion_level(api.make_recipe("a16w8")) == ""


def test_widening_reuses_the_ranges_and_matches_a_fresh_calibration(tmp_path):
    """A dtype change keeps an observer's statistics: the widened recipe quantized with the 8-bit
    calibration runs no pass and writes the bytes a fresh calibration of it writes."""
    path, data, _ = _outlier_chain(tmp_path)
    model = api.open_model(path)
    base = api.quantize(model, _recipe(), data=data)
    wide = widened(_recipe(), ["mm0", "mm3"], "uint16")
    reused = api.quantize(model, wide, data=data, calibration=base.calibration)
    fresh = api.quantize(model, wide, data=data)
    assert reused.calibration.seconds == 0.0 and set(reused.calibration.reused) == set(reused.plan.activations)
    assert reused.proto.SerializeToString() == fresh.proto.SerializeToString()
    assert reused.calibration.observers["x"].spec.dtype == "uint16"


def test_the_cli_names_the_16_bit_units(tmp_path, capsys, monkeypatch, sixteen_bit):
    from workbench.core.recipe import hardware, presets
    for module in (hardware, presets):  # the CLI's preset with 7-bit weights, as _recipe() (any CPU)
        monkeypatch.setattr(module, "cpu_needs_reduce_range", lambda: True)
    path, data, _ = _outlier_chain(tmp_path)
    out = tmp_path / "q.onnx"
    assert main(["quantize", str(path), "--data", str(data), "-o", str(out), "--no-latency-check"]) == 0
    err = capsys.readouterr()
    line = next(s for s in err.err.splitlines() if s.startswith("recipe choice: "))
    assert "; uint16 activations on 2 units (mm0 .. mm1): +21." in line
    assert line.endswith("dB; 16-bit Q/DQ needs opset 21, so the model is written at 21 (it was 17); "
                         "--no-auto keeps every unit 8-bit; " + line.rsplit("; ", 1)[1])
    assert [o.version for o in onnx.load(str(out)).opset_import if o.domain == ""] == [21]
    assert err.out.strip().splitlines()[-1].endswith(
        "(8 of 8 node units quantized, preset cpu-u8s8, recipe choice: preset + 16-bit activations on 2 units)")


def test_halvings_never_promote_a_group_below_the_threshold():
    """A run gains 3.5 dB, its better half 2.6, that half's better half 1.7: each within KEEP_DB of its
    parent, but below MIN_GAIN_DB, so the run itself is promoted (the losses must not add up)."""
    names = [f"u{i}" for i in range(16)]
    gains = {("u0", 4): 3.5, ("u0", 2): 2.6, ("u0", 1): 1.7}
    found = find_promotion(names, lambda group: gains.get((group[0], len(group)), 0.0))
    assert found.units == ["u0", "u1", "u2", "u3"] and found.gain_db == 3.5


def test_a_model_of_fewer_units_than_runs_is_not_searched():
    found = find_promotion(["a", "b", "c"], lambda group: 50.0)
    assert found.units == [] and found.tried == [] and searches(3) == 0


def test_cancelling_during_the_promotion_step_raises_cancelled(tmp_path):
    from workbench.core.errors import Cancelled
    from workbench.core.progress import CancelToken
    path, data, _ = _outlier_chain(tmp_path)
    model = api.open_model(path)
    for phase in ("Choosing the recipe: compute+mse", recipe_choice.PHASE_FLOAT):
        token = CancelToken()

        def progress(done, total, message, phase=phase, token=token):
            if message.startswith(phase):
                token.cancel()
        try:
            choose_recipe(model, _recipe(), data, progress=progress, cancel=token)
        except Cancelled:
            continue
        raise AssertionError(f"cancelled at {phase!r}, yet the choice returned")


def test_a_model_that_cannot_reach_the_16_bit_opset_promotes_nothing(tmp_path, sixteen_bit):
    """A model-local function keeps the model at opset 17 (16-bit Q/DQ needs 21): the widened units are
    left float by the opset check, so no group is scored as a 16-bit one."""
    path, data, _ = _outlier_chain(tmp_path)
    m = onnx.load(str(path))
    m.functions.append(helper.make_function("local", "Ident", ["a"], ["b"], [helper.make_node("Identity", ["a"], ["b"])],
                                            [helper.make_opsetid("", 17)]))
    m.opset_import.append(helper.make_opsetid("local", 1))
    m.graph.node[-1].output[0] = "y_pre"
    m.graph.node.append(helper.make_node("Ident", ["y_pre"], ["y"], domain="local", name="ident"))
    fn_path = tmp_path / "with_function.onnx"
    onnx.save(m, fn_path)
    rep = choose_recipe(api.open_model(fn_path), _recipe(), data)
    assert rep.promotion.units == [] and rep.recipe.overrides == {}
    assert all(t[3] == -math.inf for t in rep.promotion.tried) and len(rep.promotion.tried) == GROUPS
    assert "; 16-bit activations: none of the runs of units could be written so, all stay 8-bit" in rep.summary()


def test_a_symmetric_change_calibrates_afresh(tmp_path):
    """``symmetric`` changes which activations fold into a unit, and so which histograms a fresh
    calibration derives: an observer is not carried over a symmetric change."""
    from workbench.core.recipe.spec import NodeSettings, PartialSpec
    path, data, _ = _outlier_chain(tmp_path)
    model = api.open_model(path)
    base = api.quantize(model, _recipe(), data=data)
    changed = _recipe().with_override_map({"mm3": NodeSettings(activation=PartialSpec(symmetric=True))})
    again = api.quantize(model, changed, data=data, calibration=base.calibration)
    assert "m3" not in again.calibration.reused and again.calibration.seconds > 0  # mm3's output: observed again
    assert again.proto.SerializeToString() == api.quantize(model, changed, data=data).proto.SerializeToString()


def test_a_split_between_16_and_8_bit_readers_gets_its_own_grid_and_says_so(tmp_path):
    rng = np.random.default_rng(6)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), f"w{i}") for i in range(3)]
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["a"], name="mm0"),
             helper.make_node("Split", ["a"], ["s0", "s1"], name="split", axis=1, num_outputs=2),
             helper.make_node("MatMul", ["s0", "w1"], ["y0"], name="mm1"),
             helper.make_node("MatMul", ["s1", "w2"], ["y1"], name="mm2")]
    inits[1] = numpy_helper.from_array(rng.standard_normal((4, 8)).astype(np.float32), "w1")
    inits[2] = numpy_helper.from_array(rng.standard_normal((4, 8)).astype(np.float32), "w2")
    graph = helper.make_graph(nodes, "split", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, ["N", 8]) for y in ("y0", "y1")],
                              inits)
    path = tmp_path / "split.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9), path)
    plan = api.plan(api.open_model(path), widened(_recipe(), ["mm0", "mm1"], "uint16"))
    assert plan.aliases["s0"] == "a" and plan.activations["a"].dtype == "uint16"  # s0 shares its input's grid
    assert plan.activations["s1"].dtype == "uint8" and "s1" not in plan.aliases
    notes = [i.message for i in plan.issues if i.node == "split"]
    assert notes == ["'s1': its readers ask for uint8, its input is uint16: it gets a grid of its own instead of "
                     "sharing its input's."]



def test_the_promotion_step_keeps_its_progress_total(tmp_path):
    """An early stop showed 3/6 then 4/4: the bar's total now holds and the step ends at it."""
    path, data, _ = _outlier_chain(tmp_path)
    seen: list = []
    choose_recipe(api.open_model(path), _recipe(), data,
                  progress=lambda d, t, m: seen.append((d, t, m)) if m.startswith("Choosing units") else None)
    assert seen
    totals = {t for _d, t, _m in seen}
    assert len(totals) == 1
    done, total, message = seen[-1]
    assert done == total and message.startswith("Choosing units to keep float: done after ")
