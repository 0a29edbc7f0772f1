"""The weights vs activations line of ``compare`` / ``analyze`` / ``report``: a weight-only file is
said to be weight-only (it was called "QOperator or dynamic"), the split's sample cap is named and
``--split-samples N`` moves it (0 turns the split off)."""

from __future__ import annotations

import json
import math

import numpy as np
import onnxruntime as ort

from workbench.cli import main


def _sqnr_db(float_path, quant_path, rows: np.ndarray) -> float:
    """Output SQNR (dB) of ``quant_path`` against ``float_path`` on ``rows``, both unfused (ORT_DISABLE_ALL)."""
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ref, out = (ort.InferenceSession(str(p), opts, providers=["CPUExecutionProvider"]).run(None, {"input": rows})[0]
                for p in (float_path, quant_path))
    ref, out = ref.astype(np.float64), out.astype(np.float64)
    return 10 * math.log10(np.sum(ref ** 2) / np.sum((ref - out) ** 2))


def test_compare_weight_only_file_is_all_weights(corpus, tmp_path, capsys):
    mlp = corpus / "digits_mlp"
    model, data = mlp / "model_opset17.onnx", mlp / "calib.npz"
    w4 = tmp_path / "w4.onnx"
    assert main(["quantize", str(model), "--preset", "w4-block", "-o", str(w4)]) == 0
    capsys.readouterr()
    doc = tmp_path / "diff.json"
    assert main(["compare", str(model), str(w4), "--data", str(data), "--samples", "40", "--split-samples", "12",
                 "--json", str(doc)]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("weights vs activations"))
    split = json.loads(doc.read_text())["split"]
    expected = _sqnr_db(model, w4, np.load(data)["input"][:12])
    assert abs(split["weights_db"] - expected) < 1e-3 and split["all_db"] == split["weights_db"]
    assert (split["samples"], split["activations_db"], split["weights_share"]) == (12, None, 1.0)
    assert line == ("weights vs activations (on 12 of 40 samples, --split-samples N for more; output SQNR, graph as "
                    "written): w4.onnx is weight-only (float activations): 100% of the output noise comes from the "
                    f"weights (only the weights quantized {split['weights_db']:.2f} dB)")


def test_compare_dynamic_file_says_why_no_split(corpus, tmp_path, capsys):
    mlp = corpus / "digits_mlp"
    model, dyn = mlp / "model_opset17.onnx", tmp_path / "dyn.onnx"
    assert main(["quantize", str(model), "--preset", "dynamic-u8", "-o", str(dyn)]) == 0
    capsys.readouterr()
    assert main(["compare", str(model), str(dyn), "--data", str(mlp / "calib.npz"), "--samples", "8"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "weights vs activations: not measured (the quantized file is dynamic: its activation scales are computed "
        "at run time by DynamicQuantizeLinear, so there is no fixed activation quantization to take out)")


def _split_line(capsys) -> str | None:
    return next((ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("weights vs activations")), None)


def test_analyze_split_samples(corpus, capsys):
    mlp = corpus / "digits_mlp"
    common = ["analyze", str(mlp / "model_opset17.onnx"), "--data", str(mlp / "calib.npz"), "--no-auto",
              "--no-latency-check", "--top", "0"]
    assert main(common) == 0  # the defaults: 32 eval samples, the split's cap of 16
    assert _split_line(capsys).startswith("weights vs activations (on 16 of 32 samples, --split-samples N for "
                                          "more; output SQNR, graph as written): only the weights quantized ")
    assert main([*common, "--eval-samples", "8", "--split-samples", "5"]) == 0
    assert _split_line(capsys).startswith("weights vs activations (on 5 of 8 samples, --split-samples N for more; ")
    assert main([*common, "--eval-samples", "8", "--split-samples", "64"]) == 0
    assert _split_line(capsys).startswith("weights vs activations (on 8 samples; output SQNR")
    assert main([*common, "--eval-samples", "8", "--split-samples", "0"]) == 0
    assert _split_line(capsys) is None


def test_report_split_samples(corpus, tmp_path, capsys):
    mlp = corpus / "digits_mlp"
    out = tmp_path / "r.html"
    assert main(["report", str(mlp / "model_opset17.onnx"), "--data", str(mlp / "calib.npz"), "--no-auto",
                 "--no-latency-check", "--eval-samples", "8", "--split-samples", "3", "-o", str(out)]) == 0
    page = out.read_text()
    assert "Measured on 3 of the 8 samples (the split's cap; report --split-samples N measures more)" in page
    assert main(["report", str(mlp / "model_opset17.onnx"), "--data", str(mlp / "calib.npz"), "--no-auto",
                 "--no-latency-check", "--eval-samples", "8", "--split-samples", "0", "-o", str(out)]) == 0
    assert "Weights or activations?" not in out.read_text()


def test_analyze_weight_only_recipe_says_the_noise_is_the_weights(corpus, capsys):
    mlp = corpus / "digits_mlp"
    assert main(["analyze", str(mlp / "model_opset17.onnx"), "--preset", "w4-block", "--data", str(mlp / "calib.npz"),
                 "--eval-samples", "8", "--top", "0"]) == 0
    assert _split_line(capsys) == ("weights vs activations: the recipe is weight-only (float activations), so all of "
                                   "the output noise comes from the weights (the end-to-end figures above)")
