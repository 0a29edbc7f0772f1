"""``cost`` of a file ``quantize`` wrote in float (the latency fallback kept every unit float) counts the
file as it is, every node 32 x 32, not the BOPs a recipe would give it."""

from __future__ import annotations

import json

import onnx

from workbench.cli import main
from workbench.core.pipeline import latency_check
from workbench.core.runtime.latency import LatencyComparison

# digits_cnn hand count (tests/test_cost.py): three Convs and the Gemm
MACS = 9216 + 294912 + 294912 + 2560


def _slower_when_quantized(monkeypatch) -> None:
    """Any model with a DequantizeLinear measures 1.5x float, the float one 1.0x (no timing in the test)."""
    def compare(float_model, quant_model, feed, **_):
        ratio = 1.5 if any(n.op_type == "DequantizeLinear" for n in quant_model.graph.node) else 1.0
        return LatencyComparison(1e-3, 1e-3 * ratio, 9, 1e-3, 1e-3 * ratio)

    monkeypatch.setattr(latency_check, "compare", compare)


def test_cost_counts_the_float_file_the_latency_fallback_wrote(corpus, tmp_path, capsys, monkeypatch):
    d = corpus / "digits_cnn"
    _slower_when_quantized(monkeypatch)
    out = tmp_path / "x.onnx"
    assert main(["quantize", str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--samples", "8",
                 "--no-auto", "-o", str(out)]) == 0
    assert "the model written is the float model" in capsys.readouterr().err
    assert not any(n.op_type in ("QuantizeLinear", "DequantizeLinear") for n in onnx.load(out).graph.node)

    assert main(["cost", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["recipe"] is None and "written by workbench-cli quantize with no unit quantized" in doc["as_written"]
    assert [(r["weight_bits"], r["activation_bits"], r["kernel_bits"]) for r in doc["rows"]] == [(32, 32, [32, 32])] * 4
    t = doc["totals"]
    assert t["macs"] == MACS and t["bops"] == t["bops_kernel"] == t["bops_float"] == MACS * 32 * 32
    assert t["memory_bits"] == t["memory_float_bits"]

    # a preset given is not counted on that file (it says so); the float model it was written from counts it
    assert main(["cost", str(out), "--preset", "s8s8"]) == 0
    text = capsys.readouterr().out
    assert "as written: BOPs / 1.0 (as onnxruntime runs them: / 1.0)" in text
    assert "(--preset s8s8 not counted: give it with the float model quantize read)" in text
    assert main(["cost", str(d / "model_opset17.onnx"), "--preset", "s8s8"]) == 0
    assert "recipe s8s8: BOPs / 16.0" in capsys.readouterr().out
