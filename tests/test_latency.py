"""Latency of quantized vs float models (workbench.core.runtime.latency) and the quantize pipeline's
latency check: cache keyed by both models and the feed, the ratio reported as an issue, a warning
when the quantized model measured slower, and the CLI's --no-latency-check."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from qdq_helpers import cache_quantized_slower, matmul16_files, save_matmul_model, tiny_model

from workbench.cli import main
from workbench.core import api
from workbench.core.issues import IssueCode, Severity
from workbench.core.pipeline.latency_check import worth_rewriting
from workbench.core.runtime import latency


def _quantized(tmp_path):
    proto, feed = tiny_model("conv", opset=17)
    src = tmp_path / "conv.onnx"
    onnx.save(proto, src)
    np.savez(tmp_path / "calib.npz", X=np.concatenate([feed["X"]] * 4))
    model = api.open_model(str(src))
    return model, str(tmp_path / "calib.npz")


@pytest.fixture
def steady(monkeypatch):
    """Real measurements count as taken on a quiet machine (load average 0), so they are cached."""
    monkeypatch.setattr(latency, "_load_average", lambda: 0.0)


def test_measure_alternates_and_caches_by_models_and_feed(tmp_path, steady):
    model, data = _quantized(tmp_path)
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data)
    fb, qb = model.proto.SerializeToString(), result.proto.SerializeToString()
    feed = {"X": np.ones((2, 4, 6, 6), np.float32)}
    cache = tmp_path / "c"
    first = latency.compare(fb, qb, feed, cache_dir=cache, budget_s=0.05)
    assert not first.cached and first.runs >= 7
    assert first.float_s <= first.float_median_s and first.quant_s <= first.quant_median_s
    assert first.ratio == pytest.approx(first.quant_cpu_s / first.float_cpu_s)  # thread CPU time decides
    assert first.wall_ratio == pytest.approx(first.quant_s / first.float_s)
    assert first.load == 0.0 and first.cores >= 1 and first.reliable
    files = list(cache.glob("*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["runs"] == first.runs
    again = latency.compare(fb, qb, feed, cache_dir=cache, budget_s=0.05)
    assert again.cached and (again.float_s, again.quant_s, again.runs) == (first.float_s, first.quant_s, first.runs)
    # the thread CPU times are recorded and read back too
    assert first.float_cpu_s > 0 and first.quant_cpu_s > 0
    assert (again.float_cpu_s, again.quant_cpu_s) == (first.float_cpu_s, first.quant_cpu_s)
    assert again.cpu_ratio == pytest.approx(first.quant_cpu_s / first.float_cpu_s)
    # another feed dtype, or another quantized model, is another measurement
    other = {"X": np.ones((2, 4, 6, 6), np.float64)}
    assert latency.cache_key(fb, qb, other) != latency.cache_key(fb, qb, feed)
    assert latency.cache_key(fb, fb, feed) != latency.cache_key(fb, qb, feed)
    assert not latency.compare(fb, fb, feed, cache_dir=cache, budget_s=0.05).cached
    assert len(list(cache.glob("*.json"))) == 2


def test_quantize_reports_the_measured_ratio(tmp_path, fake_latency):
    """The quantized model scripted at 0.80x float (conftest's fake clock): reported, the model unchanged."""
    model, data = _quantized(tmp_path)
    fake_latency.quantized_at(0.8, float_s=20e-6)
    plain = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data)
    assert plain.latency is None and not [i for i in plain.issues if i.code == IssueCode.LATENCY]
    checked = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data, latency_check=True)
    assert checked.proto.SerializeToString() == plain.proto.SerializeToString()  # the check never changes the model
    notes = [i for i in checked.issues if i.code == IssueCode.LATENCY]
    assert len(notes) == 1 and notes[0].severity == Severity.INFO
    assert notes[0].message.startswith("latency quantized / float = 0.80 (thread CPU time: 0.016 ms vs 0.020 ms")
    assert "X [2, 4, 6, 6]" in notes[0].message and checked.latency.ratio == pytest.approx(0.8)
    assert not [i for i in checked.issues if i.severity == Severity.WARNING]


def _seed(model, data, result, float_s: float, quant_s: float) -> None:
    """A cached measurement of this float / quantized pair on its latency feed (the model's batch is
    fixed at 2: the first sample is 2 rows)."""
    feed = {"X": np.load(data)["X"][:2]}
    key = latency.cache_key(model.proto.SerializeToString(), result.proto.SerializeToString(), feed)
    root = latency.default_cache_dir()
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{key}.json").write_text(json.dumps({"float_s": float_s, "quant_s": quant_s, "runs": 9,
                                                  "float_median_s": float_s, "quant_median_s": quant_s}))


def test_slower_than_float_is_a_warning_with_the_ratio(tmp_path):
    """A cached measurement that says 'slower' (written for exactly this pair and feed) must warn."""
    model, data = _quantized(tmp_path)
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data)
    _seed(model, data, result, 0.002, 0.003)
    checked = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data, latency_check=True)
    # slower by 1 ms a run: the latency fallback leaves the model's only island (conv, relu) float and says so
    warn = [i for i in checked.issues if i.code == IssueCode.LATENCY_KEPT_FLOAT]
    assert [(i.node, i.severity) for i in warn] == [("conv", Severity.WARNING), ("", Severity.WARNING)]
    assert "1.50x" in warn[0].message and "the model written is the float model" in warn[1].message
    assert not checked.latency.cached and checked.recipe.overrides["conv"].exclude
    assert not [n for n in checked.proto.graph.node if n.op_type in ("QuantizeLinear", "DequantizeLinear")]


def test_a_model_of_a_millisecond_is_rewritten_for_a_few_percent(tmp_path):
    """0.84 ms float, 1.055x quantized (46 us: under the 50 us floor of microsecond models, as
    ppocr_mobile_v2_cls measured): above the noise of a model that long, so the fallback runs."""
    model, data = _quantized(tmp_path)
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data)
    _seed(model, data, result, 0.84e-3, 0.8862e-3)
    checked = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data, latency_check=True)
    warn = [i for i in checked.issues if i.code == IssueCode.LATENCY_KEPT_FLOAT]
    assert [(i.node, i.severity) for i in warn] == [("conv", Severity.WARNING), ("", Severity.WARNING)]
    assert "1.05x" in warn[0].message and "the model written is the float model" in warn[1].message
    assert not [n for n in checked.proto.graph.node if n.op_type in ("QuantizeLinear", "DequantizeLinear")]
    # the same 46 us on a model of 0.2 ms is 1.23x, but a microsecond model: stated, not rewritten
    assert not worth_rewriting(latency.LatencyComparison(0.2e-3, 0.246e-3, 9, 0.2e-3, 0.246e-3))
    assert not worth_rewriting(latency.LatencyComparison(0.84e-3, 0.85e-3, 9, 0.84e-3, 0.85e-3))  # 1.2 %: noise


def test_a_slowdown_of_microseconds_leaves_every_unit_float(tmp_path):
    """1.50x of 20 us (10 us a run, a cached figure): too small to try islands, so every unit is left float
    with one warning; without the guards (no fallback) it is written as the recipe asks, and the check's
    warning states the slowdown and the floor."""
    model, data = _quantized(tmp_path)
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data)
    _seed(model, data, result, 20e-6, 30e-6)
    checked = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data, latency_check=True)
    assert not [n for n in checked.proto.graph.node if n.op_type in ("QuantizeLinear", "DequantizeLinear")]
    warn = [i for i in checked.issues if i.severity == Severity.WARNING]
    assert len(warn) == 1 and warn[0].code == IssueCode.LATENCY_KEPT_FLOAT and not warn[0].node
    assert warn[0].message.startswith("quantization does not pay at this size: as quantized the model measured "
                                      "1.50x its float latency (10 us slower per run of 0.020 ms, reused from an "
                                      "earlier measurement: ")
    assert checked.recipe.overrides["conv"].exclude
    as_asked = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data, latency_check=True, guard=False)
    assert as_asked.proto.SerializeToString() == api.quantize(model, api.make_recipe("cpu-u8s8"), data=data,
                                                              guard=False).proto.SerializeToString()
    warn = [i for i in as_asked.issues if i.code == IssueCode.SLOWER_THAN_FLOAT]
    assert len(warn) == 1 and warn[0].severity == Severity.WARNING
    assert "does not pay at this size" in warn[0].message and "written as the recipe asks" in warn[0].message


def test_a_ratio_within_measurement_noise_is_said_so_without_a_warning(tmp_path):
    """ppocr_mobile_v2_cls measured 0.881 ms against 0.881 ms (1.00x): the CLI had warned that
    quantization does not pay, "0 us slower per run"."""
    model, data = _quantized(tmp_path)
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data)
    _seed(model, data, result, 0.881e-3, 0.8812e-3)
    checked = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data, latency_check=True)
    assert checked.proto.SerializeToString() == result.proto.SerializeToString()
    assert not [i for i in checked.issues if i.code in (IssueCode.SLOWER_THAN_FLOAT, IssueCode.LATENCY_KEPT_FLOAT)]
    note = next(i for i in checked.issues if i.code == IssueCode.LATENCY)
    assert "= 1.00 " in note.message and "as fast as float within measurement noise" in note.message
    assert "slower" not in note.message
    # 1 % of a 10 ms model is 100 us, over the 50 us floor, but still noise: not rewritten
    assert not worth_rewriting(latency.LatencyComparison(10e-3, 10.1e-3, 9, 10e-3, 10.1e-3))
    assert worth_rewriting(latency.LatencyComparison(10e-3, 10.3e-3, 9, 10e-3, 10.3e-3))
    # 1.024 prints as 1.02: noise, as the note says, not also a slowdown to rewrite
    assert not worth_rewriting(latency.LatencyComparison(1e-3, 1.024e-3, 9, 1e-3, 1.024e-3))
    assert worth_rewriting(latency.LatencyComparison(1e-3, 1.026e-3, 9, 1e-3, 1.026e-3))


def test_cli_prints_the_ratio_and_can_skip_it(tmp_path, capsys, fake_latency):
    fake_latency.quantized_at(0.8)  # faster quantized: the check changes nothing
    src = save_matmul_model(tmp_path / "mm.onnx", np.random.default_rng(0))
    np.savez(tmp_path / "calib.npz", X=np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32))
    assert main(["quantize", str(src), "--data", str(tmp_path / "calib.npz"), "-o", str(tmp_path / "a.onnx")]) == 0
    err = capsys.readouterr().err
    assert "note: latency quantized / float = " in err and "1 thread" in err and "X [1, 4]" in err
    assert main(["quantize", str(src), "--data", str(tmp_path / "calib.npz"), "-o", str(tmp_path / "b.onnx"),
                 "--no-latency-check"]) == 0
    assert "latency" not in capsys.readouterr().err
    assert (tmp_path / "a.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes()


def test_no_data_measures_on_a_random_sample(tmp_path):
    src = save_matmul_model(tmp_path / "mm.onnx", np.random.default_rng(0))
    model = api.open_model(str(src))
    result = api.quantize(model, api.make_recipe("dynamic-u8"), latency_check=True)
    notes = [i for i in result.issues if i.code in (IssueCode.LATENCY, IssueCode.LATENCY_NOT_MEASURED)]
    assert [i.code for i in notes] == [IssueCode.LATENCY] and result.latency.runs >= 7


def _weighted(rows: int, seed: int = 0) -> onnx.ModelProto:
    w = np.random.default_rng(seed).standard_normal((rows, 64)).astype(np.float32)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, rows])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
                              [numpy_helper.from_array(w, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_in_memory_models_are_timed_and_keyed_by_content(tmp_path, steady):
    """The latency check hands ModelProtos over (weights as buffers, no serialised copy): equal
    content gives equal cache keys, other weights another key, and a model without large weights
    keys as its bytes do."""
    feed = {"x": np.ones((1, 8192), np.float32)}
    big, same, other = _weighted(8192), _weighted(8192), _weighted(8192, seed=1)  # 2 MiB weights
    assert latency.cache_key(big, big, feed) == latency.cache_key(same, same, feed)
    assert latency.cache_key(big, other, feed) != latency.cache_key(big, same, feed)
    small = _weighted(16)
    assert latency.cache_key(small, small, feed) == latency.cache_key(small.SerializeToString(),
                                                                     small.SerializeToString(), feed)
    lat = latency.compare(big, other, feed, cache_dir=tmp_path, budget_s=0.01)
    assert lat.runs >= 7 and lat.float_s > 0 and lat.quant_s > 0 and not lat.cached
    assert latency.compare(same, other, feed, cache_dir=tmp_path).cached  # same content: the cache answers


def test_analyze_measures_the_model_quantize_writes(tmp_path, capsys):
    """A cached measurement says the quantized MatMul is 5 % slower (a float fallback): `analyze` keeps it
    float as `quantize` does and says so; `--no-latency-check` measures it."""
    from workbench.cli import main

    src, data = matmul16_files(tmp_path)
    cache_quantized_slower(src, data)
    assert main(["analyze", str(src), "--data", str(data), "--no-auto"]) == 0
    out, err = capsys.readouterr()
    assert "note: 1 unit measured slower quantized (in 1 island) is float here, as `quantize` writes them" in err
    assert "no unit of the main graph to measure" not in err  # none left, not none in the main graph
    # and says why the table is empty (it printed a bare header)
    assert "note: no unit to measure: the latency check keeps every quantized unit float (next note)" in err
    assert out.rstrip().endswith("per node unit (fake-quantized outputs, read from the unfused graph): measured "
                                 f"with {api.describe_runtime(False)}\n  none measured (see the note on stderr)")
    assert main(["analyze", str(src), "--data", str(data), "--no-auto", "--no-latency-check", "--json",
                 str(tmp_path / "rows.json")]) == 0
    assert [r["node"] for r in json.loads((tmp_path / "rows.json").read_text())] == ["mm"]
    # the report too: the node quantize keeps float is float in it, and its issue is listed
    assert main(["report", str(src), "--data", str(data), "--no-auto", "-o", str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text()
    assert "latency-kept-float" in html or "kept float" in html
    assert "No unit was measured: the latency check kept every unit float" in html  # not "If/Loop bodies"
