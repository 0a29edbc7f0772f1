"""``quantize``'s latency lines read measured, decided, written: digits_cnn (a microsecond model) measured 1.11x
float as quantized and was written as the float model, and the CLI printed "latency quantized / float = 1.00"
(the float model it wrote, measured against float) right before "as quantized the model measured 1.11x": two
figures under one name. Now the quantized model's figure comes first, then the decision, then the written
model's figure under its own name. Latency is faked: every quantized model 1.11x float, the float model 1.00x."""

from __future__ import annotations

from workbench.cli import main
from workbench.core.pipeline import latency_check
from workbench.core.runtime import unit_latency
from workbench.core.runtime.latency import LatencyComparison

FLOAT_S = 30e-6  # digits_cnn's float run: 0.030 ms


def _measured(ratio: float) -> LatencyComparison:
    return LatencyComparison(float_s=FLOAT_S, quant_s=FLOAT_S * ratio, runs=301, float_median_s=FLOAT_S,
                             quant_median_s=FLOAT_S * ratio)


def _whole(f, q, feed, **k) -> LatencyComparison:
    return _measured(1.11 if any(n.op_type == "QuantizeLinear" for n in q.graph.node) else 1.0)


def test_digits_cnn_written_float_says_measured_decided_written(corpus, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(latency_check, "compare", _whole)
    monkeypatch.setattr(unit_latency, "compare", lambda f, q, feed, **k: _measured(0.5))  # every probe pays
    folder = corpus / "digits_cnn"
    out = tmp_path / "q.onnx"
    assert main(["quantize", str(folder / "model_opset17.onnx"), "--data", str(folder / "calib.npz"),
                 "-o", str(out)]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith(("note:", "warning:"))]
    latency = [line for line in err if "latency" in line or "does not pay" in line]
    assert [line.split(" (")[0] for line in latency] == [
        "note: latency quantized / float = 1.11",  # measured: the model as quantized
        "note: /f/f.0/Conv: kept float with its island of 5 node units",
        "warning: quantization does not pay at this size: as quantized the model measured 1.11x its float latency",
        "note: latency of the model written",  # written: the float model, its own figure
        "warning: no node unit is quantized: all 5 were kept float"]
    assert latency[2].endswith("so every unit is left float and the model written is the float model; "
                               "--no-latency-check writes it quantized, --remeasure-latency "
                               "(WORKBENCH_REMEASURE_LATENCY=1 in the app's environment) measures again")
    assert latency[3].startswith("note: latency of the model written (the float model: every unit left float; any "
                                 "difference from 1.00 is measurement noise) / float = 1.00 (wall clock: 0.030 ms vs "
                                 "0.030 ms; ")
    assert sum("= 1.00" in line or "1.00x" in line for line in err) == 1  # no other line calls 1.00 a ratio
