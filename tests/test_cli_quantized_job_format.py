"""``analyze`` / ``sweep`` / ``report`` / ``render --colour sqnr`` of an already-quantized file name its format (QDQ
or QOperator), its quantized nodes and what it holds, as ``quantize``'s refusal does (4b9b665), then what to do.
They said only '(22 quantized nodes)': a QOperator file and a QDQ file read alike."""

from __future__ import annotations

import pytest
from bundled_example import EXAMPLE
from qdq_helpers import ort_digits_exports

from workbench.cli import main

HOLDS = {
    "QOperator": ("7 quantized nodes (QLinearConv x3, QuantizeLinear x1, com.microsoft::QLinearAveragePool x1, "
                  "com.microsoft::QGemm x1, DequantizeLinear x1)",
                  "integer kernels (QLinearConv, QGemm, QLinearMatMul ...) passing integer tensors to each other "
                  "(QOperator: onnxruntime runs them as they are)"),
    "QDQ": ("24 quantized nodes (DequantizeLinear x16, QuantizeLinear x8)",
            "QuantizeLinear / DequantizeLinear pairs around float ops (QDQ: onnxruntime fuses each pair and its op "
            "into an integer kernel as it loads the file)"),
}


@pytest.fixture(scope="module")
def ort_exports(tmp_path_factory):
    """digits_cnn quantized by onnxruntime's quantize_static as QDQ and as QOperator (8 calibration rows)."""
    return ort_digits_exports(tmp_path_factory.mktemp("ort"))


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
@pytest.mark.parametrize("verb", ["analyze", "sweep", "report"])
def test_measuring_commands_name_the_format(ort_exports, tmp_path, capsys, monkeypatch, fmt, verb):
    monkeypatch.chdir(tmp_path)
    q, data = ort_exports[fmt], str(EXAMPLE / "digits_cnn_calib.npz")
    nodes, holds = HOLDS[fmt]
    assert main([verb, str(q), "--data", data, *(["-o", "r.html"] if verb == "report" else [])]) == 2
    assert capsys.readouterr().err == (
        f"error: {q} is already quantized ({fmt}): {nodes}; {verb} quantizes a float model and measures it, so it "
        f"would quantize this file again. It holds {holds}. To measure this file's error against the float model it "
        f"was made from, run workbench-cli compare FLOAT.onnx {q} --data {data} (per-tensor SQNR; evaluate "
        f"FLOAT.onnx {q} --data {data} for the outputs), or {verb} the float model.\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_render_sqnr_names_the_format(ort_exports, tmp_path, capsys, fmt):
    q, data, out = ort_exports[fmt], str(EXAMPLE / "digits_cnn_calib.npz"), tmp_path / "g.svg"
    nodes, holds = HOLDS[fmt]
    assert main(["render", str(q), "--colour", "sqnr", "--data", data, "-o", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"error: {q} is already quantized ({fmt}): {nodes}; render --colour sqnr quantizes a float model and "
        f"measures it, so it would quantize this file again. It holds {holds}. To draw this file coloured by its SQNR "
        f"against the float model it was made from, run workbench-cli render FLOAT.onnx --compare {q} --data {data} "
        f"-o {out}; without --colour sqnr render draws {q} as it is (--colour dtype: the dtypes it holds).\n")
    assert not out.exists()
