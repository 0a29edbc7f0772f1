"""A model that runs in microseconds and measures slower quantized (digits_mlp: 1.22-1.27x of 7 us) is written with
every unit float by `workbench-cli quantize`, as ppocr_mobile_v2_cls is by the latency fallback; noise, or a small
slowdown measured under load, leaves it quantized. The measurements are conftest's fake clock (no timing)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from workbench.cli import _print_issues, main
from workbench.core.issues import IssueCode, PlanIssue

#: the float run the fake clock gives digits_mlp (it measured 7 us a run, 1 thread)
FLOAT_S = 7e-6
#: node types that run quantized in onnxruntime's optimized graph, or carry a quantized tensor in the file
QUANTIZED = ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger", "QGemm")


def _quantized_nodes(proto: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in proto.graph.node if n.op_type in QUANTIZED or n.op_type.startswith("QLinear")]


def _optimized(path, tmp_path) -> onnx.ModelProto:
    """The graph onnxruntime runs for ``path`` (ORT_ENABLE_ALL, CPU, its QDQ fusions applied)."""
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    return onnx.load(tmp_path / "optimized.onnx")


@pytest.fixture
def mlp(corpus, tmp_path):
    """``quantize(*extra) -> (path written, stderr)``: `workbench-cli quantize` on digits_mlp (opset 17) with its
    calibration data and the CLI's defaults."""
    folder = corpus / "digits_mlp"

    def quantize(*extra: str, name: str = "q.onnx") -> tuple:
        out = tmp_path / name
        assert main(["quantize", str(folder / "model_opset17.onnx"), "--data", str(folder / "calib.npz"),
                     "-o", str(out), *extra]) == 0
        return out

    quantize.model = folder / "model_opset17.onnx"
    quantize.eval = folder / "eval.npz"
    return quantize


def test_a_reliable_slowdown_of_microseconds_writes_every_unit_float(mlp, fake_latency, capsys, tmp_path):
    fake_latency.quantized_at(1.25, float_s=FLOAT_S)
    capsys.readouterr()
    out = mlp("--save-project", str(tmp_path / "p.wbproj"))
    printed, err = capsys.readouterr()
    assert "(0 of 3 node units quantized, preset cpu-u8s8" in printed
    written = onnx.load(out)
    assert _quantized_nodes(written) == [] and _quantized_nodes(_optimized(out, tmp_path)) == []
    warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert warnings == [
        "warning: quantization does not pay at this size: as quantized the model measured 1.25x its float latency "
        "(2 us slower per run of 0.007 ms: the Q/DQ transitions cost more than the integer kernels save), so every "
        "unit is left float and the model written is the float model; --no-latency-check writes it quantized, "
        "--remeasure-latency (WORKBENCH_REMEASURE_LATENCY=1 in the app's environment) measures again",
        "warning: no node unit is quantized: all 3 were kept float (the reasons are above), so the written model "
        "computes in float like the input; --no-latency-check writes the units the latency check kept float "
        "quantized"]
    # every unit float computes what the float model does, on every eval row (so its accuracy is float's)
    name = onnx.load(mlp.model).graph.input[0].name
    x = np.load(mlp.eval)[name]
    want = ort.InferenceSession(str(mlp.model), providers=["CPUExecutionProvider"]).run(None, {name: x})[0]
    got = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, {name: x})[0]
    np.testing.assert_array_equal(got, want)
    # the project records the decision in its recipe: its replay writes the same bytes and measures nothing
    opened = fake_latency.sessions
    assert main(["quantize", str(tmp_path / "p.wbproj"), "-o", str(tmp_path / "replay.onnx")]) == 0
    assert (tmp_path / "replay.onnx").read_bytes() == out.read_bytes() and fake_latency.sessions == opened


def test_a_slowdown_within_noise_writes_it_quantized(mlp, fake_latency, capsys):
    fake_latency.quantized_at(1.01, float_s=FLOAT_S)
    out = mlp()
    err = capsys.readouterr().err
    assert out.read_bytes() == mlp("--no-latency-check", name="plain.onnx").read_bytes()
    assert _quantized_nodes(onnx.load(out)).count("QuantizeLinear") == 3  # one on each Gemm's input
    assert "as fast as float within measurement noise" in err and "warning: " not in err


def test_a_small_slowdown_under_load_writes_it_quantized_with_the_load_warning(mlp, fake_latency, capsys):
    """1.20x at a load average of 6 on 2 cores: below LOADED_DECISIVE (1.25), so load alone could cause it: written
    as planned, with the load warning; 1.30x at the same load decides (every unit float)."""
    fake_latency.quantized_at(1.2, float_s=FLOAT_S)
    fake_latency.load = 6.0
    out = mlp()
    err = capsys.readouterr().err
    assert out.read_bytes() == mlp("--no-latency-check", name="plain.onnx").read_bytes()
    warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert warnings == [
        "warning: the latency could not be measured reliably (load average 6.0 on 2 cores): the quantized model "
        "measured 1.20x the float model's latency, which load alone can cause, so it is written as planned, with no "
        "island of units left float for the slowdown; run the command again when the machine is quieter (a "
        "measurement under load is not cached: it measures again), or pass --no-latency-check to skip the check"]
    fake_latency.quantized_at(1.3, float_s=FLOAT_S)
    out = mlp(name="clear.onnx")
    err = capsys.readouterr().err
    assert _quantized_nodes(onnx.load(out)) == []
    assert "warning: quantization does not pay at this size: as quantized the model measured 1.30x its float " \
           "latency (2 us slower per run of 0.007 ms, at load average 6.0 on 2 cores: " in err


def test_island_notes_are_not_folded_into_the_placements_unit_notes(capsys):
    """digits_transformer: the latency placement's notes on 4 attention MatMuls and the notes on the islands a
    microsecond slowdown left float share code and severity; the CLI printed the islands as "9 more nodes likewise"
    after the first MatMul's probe, as if each island had measured slower as a quantized MatMul."""
    # their fields as the passes set them: one unit each, the islands' ``island`` field set (read, not the words)
    probes = [PlanIssue(f"mm{k}", "info", "kept in float: as a quantized MatMul it measured 1.11x",
                        code=IssueCode.LATENCY_KEPT_FLOAT, units=(f"mm{k}",), ratio=1.11) for k in range(3)]
    islands = [PlanIssue(f"g{k}", "info", f"kept float with its island of 1 node unit (g{k}): quantization does "
                         "not pay at this size", code=IssueCode.LATENCY_KEPT_FLOAT, units=(f"g{k}",), ratio=1.3,
                         island=True) for k in range(3)]
    _print_issues([*probes, *islands])
    assert capsys.readouterr().err.splitlines() == [
        "note: mm0: kept in float: as a quantized MatMul it measured 1.11x",
        "note: 2 more nodes likewise (latency-kept-float): mm1, mm2",
        "note: g0: kept float with its island of 1 node unit (g0): quantization does not pay at this size",
        "note: 2 more nodes likewise (latency-kept-float): g1, g2"]
