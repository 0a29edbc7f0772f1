"""The latency check does not time a model with no unit quantized.

``quantize ppocr_mobile_v2_cls --exclude '*'`` timed the float model against itself and printed "latency
quantized / float = 0.99 (... measured in 2.6 s)": a wasted measurement under the quantized model's name. A plan
that quantizes nothing is no longer measured; the latency fallback's every-island-float trial still is (its
figure is the note on the model written). The measurement is replaced by a ratio keyed by whether the measured
model holds any Q/DQ (no timing in the test).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main
from workbench.core.pipeline import latency_check
from workbench.core.runtime.latency import LatencyComparison

QDQ = ("QuantizeLinear", "DequantizeLinear")


def _model(tmp_path: Path) -> tuple[str, str]:
    """X [4, 16] -> MatMul(W1) -> Relu -> MatMul(W2) -> Y, and 8 rows of calibration data."""
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array((rng.standard_normal((16, 16)) * 0.3).astype(np.float32), n)
             for n in ("W1", "W2")]
    nodes = [helper.make_node("MatMul", ["X", "W1"], ["a"], name="mm1"),
             helper.make_node("Relu", ["a"], ["r"], name="act"),
             helper.make_node("MatMul", ["r", "W2"], ["Y"], name="mm2")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 16])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4, 16])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, tmp_path / "m.onnx")
    np.savez(tmp_path / "calib.npz", X=rng.standard_normal((8, 4, 16)).astype(np.float32))
    return str(tmp_path / "m.onnx"), str(tmp_path / "calib.npz")


def _fake_compare(monkeypatch, quantized_ratio: float) -> list[bool]:
    """Replace the measurement: a model with Q/DQ measures ``quantized_ratio`` x float at 14 us a run (a
    microsecond model), a float one 1.00x. Returns, per call, whether the measured model held Q/DQ."""
    calls: list[bool] = []

    def compare(float_model, quant_model, feed, **_):
        has_qdq = any(n.op_type in QDQ for n in quant_model.graph.node)
        calls.append(has_qdq)
        ratio = quantized_ratio if has_qdq else 1.0
        return LatencyComparison(14e-6, 14e-6 * ratio, 9, 14e-6, 14e-6 * ratio)

    monkeypatch.setattr(latency_check, "compare", compare)
    return calls


def test_a_recipe_excluding_every_unit_is_not_timed(tmp_path, monkeypatch, capsys):
    model, data = _model(tmp_path)
    calls = _fake_compare(monkeypatch, 0.8)
    out = tmp_path / "q.onnx"
    assert main(["quantize", model, "--data", data, "--exclude", "*", "--no-auto", "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert calls == []  # measured float against float before
    assert "latency" not in captured.err
    assert f"wrote {out} (0 of 2 node units quantized" in captured.out
    assert not any(n.op_type in QDQ for n in onnx.load(str(out)).graph.node)


def test_a_quantized_model_is_timed_once(tmp_path, monkeypatch, capsys):
    model, data = _model(tmp_path)
    calls = _fake_compare(monkeypatch, 0.8)
    assert main(["quantize", model, "--data", data, "--no-auto", "-o", str(tmp_path / "q.onnx")]) == 0
    assert calls == [True]
    assert "note: latency quantized / float = 0.80" in capsys.readouterr().err


def test_the_fallback_still_times_the_float_model_it_writes(tmp_path, monkeypatch, capsys):
    model, data = _model(tmp_path)
    calls = _fake_compare(monkeypatch, 1.37)  # a microsecond slowdown: every island left float at once
    out = tmp_path / "q.onnx"
    assert main(["quantize", model, "--data", data, "--no-auto", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert calls == [True, False]  # the planned model, then the every-island-float trial
    assert "note: latency quantized / float = 1.37" in err
    assert "latency of the model written (the float model: every unit left float" in err
    assert "/ float = 1.00" in err
    assert not any(n.op_type in QDQ for n in onnx.load(str(out)).graph.node)
