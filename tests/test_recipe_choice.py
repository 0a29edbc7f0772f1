"""The recipe choice (``--auto``): preset, MSE ranges or compute-only, by output SQNR on held-out rows."""

from __future__ import annotations

import json
import threading

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main
from workbench.core import api
from workbench.core.tuning import recipe_choice
from workbench.core.tuning.recipe_choice import CANDIDATES, MARGIN_DB, choose_recipe, variant

ROWS, FEAT = 40, 32


def _affine_chain(tmp_path):
    """x [N, 32] -> MatMul(W1) -> + 20 -> * 0.5 -> + -10 -> * 2 -> MatMul(W2) -> y [N, 16]: element-wise
    ops by constants between the two MatMuls that cancel out in float. Quantized, ``+ 20`` moves the
    tensor to about [16, 24], whose uint8 grid must include 0: a step about 4x coarser than the
    MatMul output's (the HardSwish ``x + 3`` and learnable affine blocks of ppocrv4_rec do this)."""
    rng = np.random.default_rng(3)
    w1 = (rng.standard_normal((FEAT, FEAT)) / np.sqrt(FEAT)).astype(np.float32)
    w2 = (rng.standard_normal((FEAT, 16)) / np.sqrt(FEAT)).astype(np.float32)
    consts = {"c0": 20.0, "c1": 0.5, "c2": -10.0, "c3": 2.0}
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["a"], name="mm1"),
             helper.make_node("Add", ["a", "c0"], ["b"], name="add0"),
             helper.make_node("Mul", ["b", "c1"], ["c"], name="mul0"),
             helper.make_node("Add", ["c", "c2"], ["d"], name="add1"),
             helper.make_node("Mul", ["d", "c3"], ["e"], name="mul1"),
             helper.make_node("MatMul", ["e", "w2"], ["y"], name="mm2")]
    inits = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")]
    inits += [numpy_helper.from_array(np.array(v, np.float32), k) for k, v in consts.items()]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", FEAT])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 16])], inits)
    path = tmp_path / "chain.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    x = rng.standard_normal((ROWS, FEAT)).astype(np.float32)
    data = tmp_path / "calib.npz"
    np.savez(data, x=x)
    return path, data, x


def _sqnr(path_or_proto, x: np.ndarray, ref: np.ndarray) -> float:
    src = path_or_proto.SerializeToString() if isinstance(path_or_proto, onnx.ModelProto) else str(path_or_proto)
    sess = ort.InferenceSession(src, providers=["CPUExecutionProvider"])
    got = np.concatenate([sess.run(None, {"x": x[i:i + 1]})[0] for i in range(len(x))]).astype(np.float64)
    return float(10 * np.log10(np.sum(ref ** 2) / np.sum((ref - got) ** 2)))


def test_the_variant_with_the_best_held_out_sqnr_is_chosen_and_scores_are_measured(tmp_path):
    path, data, x = _affine_chain(tmp_path)
    model = api.open_model(path)
    recipe = api.make_recipe("cpu-u8s8")
    rep = choose_recipe(model, recipe, data)
    held = ROWS // 4  # a quarter of the rows
    assert rep.skipped is None and rep.held_out == held
    # each variant quantized on the first rows only, run in onnxruntime on the held-out rows (this test's own SQNR)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ref = np.concatenate([sess.run(None, {"x": x[i:i + 1]})[0] for i in range(ROWS - held, ROWS)]).astype(np.float64)
    want = {}
    for name in CANDIDATES:
        res = api.quantize(model, variant(recipe, name), data=data, samples=ROWS - held)
        want[name] = _sqnr(res.proto, x[ROWS - held:], ref)
    assert rep.scores == pytest.approx(want, abs=1e-6)
    # the element-wise roundings cost: only the MatMuls quantized is clearly better here
    assert want["compute+mse"] > want["preset"] + MARGIN_DB
    assert rep.chosen == max(want, key=want.get) == "compute+mse"
    assert rep.recipe.op_types == ["MatMul"]  # of Conv / ConvTranspose / MatMul / Gemm, what the model has
    assert [(r.name, r.activation.observer) for r in rep.recipe.rules] == [("*", "mse")]
    # the chosen recipe leaves the element-wise ops float: 2 quantized units
    res = api.quantize(model, rep.recipe, data=data)
    assert sorted(n for n, u in res.plan.units.items() if not u.excluded) == ["mm1", "mm2"]
    assert sum(n.op_type == "MatMul" for n in res.proto.graph.node) == 2
    assert {n.op_type for n in res.proto.graph.node if n.name in ("mul0", "add0", "mul1", "add1")} == {"Mul", "Add"}


def test_minmax_ranges_taken_from_the_histograms_write_the_same_model_as_a_minmax_calibration(tmp_path):
    """The ``preset`` variant reuses the MSE pass: the exact min / max its histograms track."""
    path, data, _ = _affine_chain(tmp_path)
    model = api.open_model(path)
    recipe = api.make_recipe("cpu-u8s8")
    mse = api.quantize(model, variant(recipe, "mse"), data=data, samples=30)
    derived = recipe_choice._as_minmax(mse.calibration)
    reused = api.quantize(model, recipe, data=data, samples=30, calibration=derived)
    fresh = api.quantize(model, recipe, data=data, samples=30)
    assert sorted(reused.calibration.reused) == sorted(fresh.calibration.observers)  # nothing calibrated again
    assert reused.proto.SerializeToString() == fresh.proto.SerializeToString()


def test_the_preset_stays_when_no_variant_beats_it_by_the_margin(tmp_path, monkeypatch):
    path, data, _ = _affine_chain(tmp_path)
    model = api.open_model(path)
    recipe = api.make_recipe("cpu-u8s8")
    calls = []

    def scored(reference, got):  # run in the order preset, mse, compute+mse: both variants 0.4 dB better
        calls.append(len(got))
        return 30.0 + 0.4 * (len(calls) != 1)
    monkeypatch.setattr(recipe_choice, "_score", scored)
    rep = choose_recipe(model, recipe, data)
    assert rep.scores == {"preset": 30.0, "mse": 30.4, "compute+mse": 30.4}
    assert rep.chosen == "preset" and rep.recipe == recipe.model_copy(update={"bias_correction": True})


def test_a_model_without_compute_ops_is_not_offered_the_compute_only_variant(tmp_path, capsys):
    """Mul / Add / Sigmoid only: the compute-only variant would quantize nothing, score bit-exact
    (200 dB) and win, and its recipe would list four op types the model lacks (four warnings)."""
    rng = np.random.default_rng(8)
    nodes = [helper.make_node("Mul", ["x", "k"], ["a"], name="mul"),
             helper.make_node("Sigmoid", ["a"], ["s"], name="sig"),
             helper.make_node("Add", ["s", "x"], ["y"], name="add")]
    graph = helper.make_graph(nodes, "eltwise", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])],
                              [numpy_helper.from_array(np.full((8,), 1.5, np.float32), "k")])
    path = tmp_path / "eltwise.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    np.savez(tmp_path / "calib.npz", x=rng.standard_normal((ROWS, 8)).astype(np.float32))
    rep = choose_recipe(api.open_model(path), api.make_recipe("cpu-u8s8"), tmp_path / "calib.npz")
    assert list(rep.scores) == ["preset", "mse"] and rep.chosen in ("preset", "mse")
    assert rep.recipe.op_types is None
    out = tmp_path / "q.onnx"
    assert main(["quantize", str(path), "--data", str(tmp_path / "calib.npz"), "-o", str(out), "--no-latency-check"]) == 0
    err = capsys.readouterr().err
    assert "not an op type of the model" not in err and "compute+mse" not in err
    assert sum(n.op_type == "QuantizeLinear" for n in onnx.load(str(out)).graph.node) > 0


def test_a_variant_within_the_margin_of_the_best_gives_way_to_the_one_with_fewer_roundings(tmp_path, monkeypatch):
    path, data, _ = _affine_chain(tmp_path)
    model = api.open_model(path)
    calls = []

    def scored(reference, got):  # preset, mse, compute+mse: mse best by 0.3 dB, both 2 dB above the preset
        calls.append(len(got))
        return (30.0, 32.3, 32.0)[min(len(calls), 3) - 1]  # then the 16-bit groups: no gain over compute+mse
    monkeypatch.setattr(recipe_choice, "_score", scored)
    rep = choose_recipe(model, api.make_recipe("cpu-u8s8"), data)
    assert rep.chosen == "compute+mse"
    assert rep.recipe.op_types == ["MatMul"]  # the compute op types the model has: no warning for the others

    calls.clear()  # mse ahead by the margin: chosen
    monkeypatch.setattr(recipe_choice, "_score", lambda reference, got: (calls.append(1), (30.0, 32.6, 32.0))[1][
        min(len(calls), 3) - 1])  # the 16-bit groups score below mse
    assert choose_recipe(model, api.make_recipe("cpu-u8s8"), data).chosen == "mse"


@pytest.mark.parametrize("recipe,why", [
    ({"rules": [{"op_type": "MatMul", "activation": {"observer": "percentile"}}]}, "rules or op types"),
    ({"op_types": ["MatMul"]}, "rules or op types"),
    ({"smoothquant": {"alpha": 0.5}}, "SmoothQuant"),
    ({"preset": "dynamic-u8"}, recipe_choice.CHOICE_NOT_STATIC),
    ({"preset": "fp8-e4m3"}, "not per-tensor integer MinMax"),
])
def test_only_a_bare_static_preset_is_changed(tmp_path, recipe, why):
    path, data, _ = _affine_chain(tmp_path)
    given = api.Recipe.model_validate(recipe)
    rep = choose_recipe(api.open_model(path), given, data)
    assert why in rep.skipped and rep.recipe is given


def test_too_few_rows_are_not_split(tmp_path):
    path, data, _ = _affine_chain(tmp_path)
    rep = choose_recipe(api.open_model(path), api.make_recipe("cpu-u8s8"), data, samples=5)
    assert rep.skipped == "fewer than 6 calibration rows"


def test_cli_default_chooses_and_the_project_replays_the_choice_without_choosing(tmp_path, capsys, monkeypatch):
    path, data, _ = _affine_chain(tmp_path)
    out, proj = tmp_path / "q.onnx", tmp_path / "job.wbproj"
    assert main(["quantize", str(path), "--data", str(data), "-o", str(out), "--save-project", str(proj),
                 "--no-latency-check"]) == 0
    err = capsys.readouterr().err
    assert "recipe choice: compute+mse (output SQNR on 10 held-out rows" in err
    saved = json.loads(proj.read_text())["recipe"]
    assert saved["op_types"] == ["MatMul"] and "not an op type of the model" not in err
    assert [(r["name"], r["activation"]["observer"]) for r in saved["rules"]] == [("*", "mse")]

    def refuse(*_a, **_k):
        raise AssertionError("a replay must not choose again")
    monkeypatch.setattr(recipe_choice, "choose_recipe", refuse)
    again = tmp_path / "again.onnx"
    assert main(["quantize", str(proj), "-o", str(again)]) == 0
    assert again.read_bytes() == out.read_bytes()
    # --no-auto quantizes the preset as it is: the element-wise ops quantized too
    plain = tmp_path / "plain.onnx"
    assert main(["quantize", str(path), "--data", str(data), "-o", str(plain), "--no-auto", "--no-latency-check"]) == 0
    assert "recipe choice" not in capsys.readouterr().err
    q = onnx.load(str(plain))
    assert sum(n.op_type == "QuantizeLinear" for n in q.graph.node) > \
        sum(n.op_type == "QuantizeLinear" for n in onnx.load(str(out)).graph.node)
    # a --recipe file is used as written, even one holding only a preset (it ran the choice)
    bare = tmp_path / "bare.json"
    bare.write_text('{"preset": "cpu-u8s8"}')
    from_file = tmp_path / "from_file.onnx"
    assert main(["quantize", str(path), "--data", str(data), "--recipe", str(bare), "-o", str(from_file),
                 "--no-latency-check"]) == 0
    assert "recipe choice" not in capsys.readouterr().err
    assert onnx.load(str(from_file)).graph == onnx.load(str(plain)).graph  # the metadata's recipe text differs


def test_a_variant_that_cannot_be_written_is_left_out_and_the_others_still_compete(tmp_path, monkeypatch):
    path, data, _ = _affine_chain(tmp_path)
    real = recipe_choice.quantize

    def refuse_compute_only(model, recipe, **kw):
        if recipe.op_types is not None:
            raise api.RecipeError("no unit left to quantize", hint="-")
        return real(model, recipe, **kw)
    monkeypatch.setattr(recipe_choice, "quantize", refuse_compute_only)
    rep = choose_recipe(api.open_model(path), api.make_recipe("cpu-u8s8"), data)
    assert list(rep.scores) == ["preset", "mse"] and rep.chosen in ("preset", "mse")


def test_the_choice_calibrates_every_row_so_quantize_calibrates_nothing_again(tmp_path, monkeypatch):
    """The choice's calibration pass covers the held-out rows too: with the preset kept, its MinMax
    ranges are those of one pass over all rows, byte for byte in the written model (the chosen recipe is
    the preset with bias correction)."""
    path, data, _ = _affine_chain(tmp_path)
    model = api.open_model(path)
    recipe = api.make_recipe("cpu-u8s8")
    monkeypatch.setattr(recipe_choice, "_score", lambda reference, got: 30.0)  # the preset stays
    rep = choose_recipe(model, recipe, data)
    assert rep.chosen == "preset" and rep.calibration.samples_seen == ROWS
    assert rep.recipe == recipe.model_copy(update={"bias_correction": True})
    reused = api.quantize(model, rep.recipe, data=data, calibration=rep.calibration)
    fresh = api.quantize(model, rep.recipe, data=data)
    assert sorted(reused.calibration.reused) == sorted(fresh.calibration.observers)  # nothing calibrated again
    assert reused.proto.SerializeToString() == fresh.proto.SerializeToString()


def test_a_chosen_mse_variant_hands_its_ranges_over_every_row_on(tmp_path):
    """Histogram ranges do not depend on batch sizes, so the choice's pass over every row (the tensors
    of both MSE variants, its own batch size, a batch boundary at the held-out rows) gives the
    chosen variant the ranges its own calibration would (this model has no GELU / SiLU output that one
    pass derives and the other fetches): the quantize calibrates nothing again and writes the same bytes."""
    path, data, _ = _affine_chain(tmp_path)
    model = api.open_model(path)
    rep = choose_recipe(model, api.make_recipe("cpu-u8s8"), data)
    assert rep.chosen == "compute+mse" and rep.calibration.samples_seen == ROWS
    reused = api.quantize(model, rep.recipe, data=data, calibration=rep.calibration)
    fresh = api.quantize(model, rep.recipe, data=data)
    assert sorted(reused.calibration.reused) == sorted(fresh.calibration.observers)  # nothing calibrated again
    assert reused.proto.SerializeToString() == fresh.proto.SerializeToString()


def test_a_silu_output_the_mse_variant_would_derive_is_fetched_for_the_compute_only_ranges(tmp_path, monkeypatch):
    """x -> MatMul -> SiLU -> MatMul. The ``mse`` variant quantizes the SiLU input, so one pass over both
    variants would derive the SiLU output's histogram from it, while the compute-only recipe
    calibrated alone fetches that output (minilm_l6_v2's GELU outputs: ranges 1.3-7.4 % apart). The
    pass fetches it too, so the ranges handed on are the compute-only recipe's own: same bytes."""
    rng = np.random.default_rng(12)
    w1 = (rng.standard_normal((FEAT, FEAT)) / np.sqrt(FEAT)).astype(np.float32)
    w2 = (rng.standard_normal((FEAT, 8)) / np.sqrt(FEAT)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["a"], name="mm1"),
             helper.make_node("Sigmoid", ["a"], ["s"], name="sig"),
             helper.make_node("Mul", ["a", "s"], ["h"], name="silu"),
             helper.make_node("MatMul", ["h", "w2"], ["y"], name="mm2")]
    graph = helper.make_graph(nodes, "silu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", FEAT])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])],
                              [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    path = tmp_path / "silu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    data = tmp_path / "calib.npz"
    np.savez(data, x=(3 * rng.standard_normal((ROWS, FEAT))).astype(np.float32))
    model = api.open_model(path)
    union = api.plan(model, variant(api.make_recipe("cpu-u8s8"), "mse"))
    assert "h" in union.activations and "a" in union.activations  # mse quantizes the SiLU's input too
    calls = []
    monkeypatch.setattr(recipe_choice, "_score", lambda reference, got: (calls.append(1), (30.0, 30.0, 35.0))[1][
        min(len(calls), 3) - 1])  # preset, mse, compute+mse: compute-only chosen; 16-bit groups gain nothing
    rep = choose_recipe(model, api.make_recipe("cpu-u8s8"), data)
    assert rep.chosen == "compute+mse" and "h" in rep.calibration.observers
    reused = api.quantize(model, rep.recipe, data=data, calibration=rep.calibration)
    fresh = api.quantize(model, rep.recipe, data=data)
    assert "h" in reused.calibration.reused  # nothing calibrated again
    assert reused.proto.SerializeToString() == fresh.proto.SerializeToString()


def test_cli_quantize_writes_the_choice_calibration(tmp_path, capsys):
    path, data, _ = _affine_chain(tmp_path)
    out = tmp_path / "q.onnx"
    assert main(["quantize", str(path), "--data", str(data), "-o", str(out), "--no-latency-check"]) == 0
    model = api.open_model(path)
    rep = choose_recipe(model, api.make_recipe("cpu-u8s8"), data)
    want = api.quantize(model, rep.recipe, data=data, calibration=rep.calibration)
    assert out.read_bytes() == want.proto.SerializeToString()


def _reader(model, x, announced):
    """A data source that announces ``announced`` rows and yields every row of ``x`` (a Python
    reader's count is only a hint)."""
    from workbench.core.data.base import DataSource

    class Reader(DataSource):
        kind = "reader"

        def num_samples(self):
            return announced

        def to_json(self):
            return {"kind": "reader"}

        def _iter_samples(self):
            for i in range(len(x)):
                yield {"x": x[i:i + 1]}

    return Reader(model)


def test_rows_past_an_announced_count_are_calibrated_too(tmp_path, monkeypatch):
    path, _, x = _affine_chain(tmp_path)
    x = x.copy()
    x[20:] *= 3.0  # rows the announced count leaves out are wider
    model = api.open_model(path)
    monkeypatch.setattr(recipe_choice, "_score", lambda reference, got: 30.0)  # the preset stays
    rep = choose_recipe(model, api.make_recipe("cpu-u8s8"), _reader(model, x, 20))
    assert rep.skipped is None and rep.calibration.samples_seen == ROWS
    assert float(rep.calibration.observers["x"].compute_range()[1]) == pytest.approx(float(x.max()))


def test_a_reader_that_ends_early_skips_the_choice(tmp_path):
    path, _, x = _affine_chain(tmp_path)
    model = api.open_model(path)
    rep = choose_recipe(model, api.make_recipe("cpu-u8s8"), _reader(model, x[:20], 40))
    assert rep.skipped == "the data ended before the 40 rows it announced" and rep.calibration is None
    rep = choose_recipe(model, api.make_recipe("cpu-u8s8"), _reader(model, x[:20], None))
    assert rep.skipped == recipe_choice.CHOICE_UNCOUNTED  # not "fewer than 6 calibration rows"
    rep = choose_recipe(model, api.make_recipe("cpu-u8s8"), _reader(model, x[:20], None), samples=30)
    assert rep.skipped == "the data ended before the 30 rows the sample count asks for"
    res = api.quantize(model, rep.recipe, data=_reader(model, x[:20], 40))  # the quantize still runs
    assert res.calibration.samples_seen == 20


@pytest.mark.parametrize(("extra", "why"), [
    (["--recipe", "RECIPE"], "a --recipe file is used as written"),
    (["--preset", "dynamic-u8"], "not a static recipe"),
    (["--no-data", "--preset", "w4-block"], "no --data"),
])
def test_explicit_auto_where_there_is_no_choice_says_why(tmp_path, capsys, extra, why):
    """``--auto`` typed where the choice cannot run (a recipe file, a dynamic preset, no data) is a
    note naming the reason, not silence; the default (not typed) stays quiet."""
    path, data, _ = _affine_chain(tmp_path)
    recipe = tmp_path / "bare.json"
    recipe.write_text('{"preset": "cpu-u8s8"}')
    args = [str(recipe) if a == "RECIPE" else a for a in extra if a != "--no-data"]
    feed = [] if "--no-data" in extra else ["--data", str(data)]
    for typed in (True, False):
        out = tmp_path / f"q{typed}.onnx"
        assert main(["quantize", str(path), *feed, *args, "-o", str(out), "--no-latency-check",
                     *(["--auto"] if typed else [])]) == 0
        err = capsys.readouterr().err
        note = (f"note: --auto chooses among variants of a static preset (node overrides kept); {why}, "
                "so there is no choice.")
        assert (note in err) is typed and "recipe choice" not in err


def test_render_sqnr_colours_the_model_quantize_writes(tmp_path, capsys):
    """render --colour sqnr measured the bare preset while quantize and analyze use the recipe choice
    (compute+mse on this chain): its per-node SQNR now equals analyze's, and --no-auto gives the preset's."""
    import argparse

    from workbench import cli

    path, data, _ = _affine_chain(tmp_path)
    model = api.open_model(path)
    for extra in ([], ["--no-auto"]):
        out = tmp_path / "rows.json"
        assert main(["analyze", str(path), "--data", str(data), "--no-latency-check", "--json", str(out),
                     "--eval-samples", str(ROWS), *extra]) == 0
        want = {r["node"]: r["sqnr_db"] for r in json.loads(out.read_text())}
        args = cli.build_parser().parse_args(["render", str(path), "-o", str(tmp_path / "g.png"), "--colour", "sqnr",
                                              "--data", str(data), "--no-latency-check", *extra])
        assert isinstance(args, argparse.Namespace)
        mode, _, errors, *_ = cli._render_values(args, model)
        assert mode == "error" and errors == pytest.approx(want, abs=1e-9), extra
    capsys.readouterr()
    assert set(want) > {"mm1", "mm2"} and len(want) > 2  # the preset quantizes the element-wise ops too


def test_a_variant_is_written_while_the_one_before_runs_and_scores_as_scored_one_after_the_other(
        tmp_path, monkeypatch):
    """Step 3 writes each variant while the held-out run of the one before goes on a helper thread: the
    preset's run waits here until the next variant's write has begun (it would wait in vain, were they one
    after the other), and the scores are the bits of scoring each variant in turn."""
    path, data, _ = _affine_chain(tmp_path)
    model = api.open_model(path)

    def in_turn(scoring, variants, ranges, progress):
        scores, plans = {}, {}
        for name, recipe in variants.items():
            scores[name], plans[name] = scoring.score(recipe, ranges[CANDIDATES[name][0]])
        return scores, plans
    with monkeypatch.context() as m:
        m.setattr(recipe_choice, "_score_variants", in_turn)
        expected = choose_recipe(model, api.make_recipe("cpu-u8s8"), data)

    writing, overlapped, order = threading.Event(), [], []
    real_write, real_measure = recipe_choice._Scoring.write, recipe_choice._Scoring.measure

    def write(self, recipe, ranges):
        order.append("write")
        if order.count("write") == 2:
            writing.set()
        return real_write(self, recipe, ranges)

    def measure(self, proto):
        if not overlapped:
            overlapped.append(writing.wait(10))
        order.append(f"run on {threading.current_thread().name.split('_')[0]}")
        return real_measure(self, proto)
    monkeypatch.setattr(recipe_choice._Scoring, "write", write)
    monkeypatch.setattr(recipe_choice._Scoring, "measure", measure)
    rep = choose_recipe(model, api.make_recipe("cpu-u8s8"), data)
    assert overlapped == [True]
    assert order[:6].count("write") == 3 and order[:6].count("run on workbench-choice") == 3
    assert list(rep.scores) == list(expected.scores) == ["preset", "mse", "compute+mse"]
    assert rep.scores == expected.scores and rep.chosen == expected.chosen and rep.recipe == expected.recipe
