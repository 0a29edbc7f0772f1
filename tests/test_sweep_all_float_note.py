"""`sweep` of a model whose every unit the latency check keeps float says so, not that its units sit in
If/Loop bodies, and prints no bare table header (digits_cnn on a CPU where quantization does not pay
printed "no unit of the main graph to sweep (units inside If/Loop bodies are not measured ...)"). With no unit
quantized the headline says bit-exact, or no quantization noise, never a dB figure: digits_cnn with every unit
excluded printed "137.74 dB output SQNR", the float rounding between the float model run optimised and the
written one run as written."""

from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main
from workbench.core import api
from workbench.core.runtime import latency


def _matmul_model(tmp_path):
    rng = np.random.default_rng(3)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "mm",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 16])],
                              [numpy_helper.from_array(rng.standard_normal((16, 16)).astype(np.float32), "w")])
    src = tmp_path / "mm.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), src)
    data = tmp_path / "calib.npz"
    np.savez(data, x=rng.standard_normal((8, 16)).astype(np.float32))
    return src, data


def _cache_slower(src, data) -> None:
    """A cached measurement: the quantized MatMul 5.5 % slower than float (0.84 ms a run)."""
    model = api.open_model(str(src))
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(data))
    key = latency.cache_key(model.proto.SerializeToString(), result.proto.SerializeToString(),
                            {"x": np.load(data)["x"][:1]})
    latency.default_cache_dir().mkdir(parents=True, exist_ok=True)
    (latency.default_cache_dir() / f"{key}.json").write_text(json.dumps(
        {"float_s": 0.84e-3, "quant_s": 0.8862e-3, "runs": 9, "float_median_s": 0.84e-3, "quant_median_s": 0.8862e-3}))


def test_sweep_with_every_unit_kept_float_by_the_latency_check(tmp_path, capsys):
    src, data = _matmul_model(tmp_path)
    _cache_slower(src, data)
    assert main(["sweep", str(src), "--data", str(data), "--no-auto", "--executor", "inline"]) == 0
    out, err = capsys.readouterr()
    assert "note: 1 unit measured slower quantized (in 1 island) is float here, as `quantize` writes them" in err
    assert "note: no unit to sweep: the latency check keeps every quantized unit float (the note above)" in err
    assert "If/Loop" not in err
    lines = out.strip().splitlines()
    assert lines[0].startswith("the quantized model (0 units quantized): ")
    assert lines[1:] == ["  none swept (see the note on stderr)"]  # no bare header


def test_sweep_with_every_unit_excluded(tmp_path, capsys):
    src, data = _matmul_model(tmp_path)
    assert main(["sweep", str(src), "--data", str(data), "--no-auto", "--no-latency-check", "--exclude", "mm",
                 "--executor", "inline"]) == 0
    out, err = capsys.readouterr()
    assert "note: no unit to sweep: every unit is float (the recipe, its exclusions or a guard keep them so)" in err
    assert out.strip().splitlines() == [
        "the quantized model (0 units quantized): bit-exact with the float model, no quantization noise (8 samples)",
        "  none swept (see the note on stderr)"]


def test_sweep_of_a_float_model_that_rounds_differently_gives_no_db_figure(corpus, capsys):
    """digits_cnn runs optimised (Conv+Relu fused) as the float model and as written as the all-float "quantized"
    one: their outputs differ by float rounding, which is no quantization figure."""
    folder = corpus / "digits_cnn"
    assert main(["sweep", str(folder / "model_opset17.onnx"), "--data", str(folder / "calib.npz"), "--no-auto",
                 "--exclude", "*", "--executor", "inline"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out == ["the quantized model (0 units quantized): no quantization noise, it computes in float like the "
                   "float model (8 samples; its outputs differ from the float model's by float rounding at most, no "
                   "SQNR figure)", "  none swept (see the note on stderr)"]


def test_sweep_table_when_units_are_quantized(tmp_path, capsys):
    src, data = _matmul_model(tmp_path)
    assert main(["sweep", str(src), "--data", str(data), "--no-auto", "--no-latency-check",
                 "--executor", "inline"]) == 0
    out, err = capsys.readouterr()
    assert "no unit" not in err
    lines = out.strip().splitlines()
    assert lines[1].split()[:2] == ["node", "op"] and lines[2].split()[0] == "mm"
