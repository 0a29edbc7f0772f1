"""``workbench-cli cost`` of a QONNX file counts its weights: a QONNX file keeps each float weight and quantizes it
with a Quant node, which the as-written count did not follow, so digits_cnn's QONNX export read 0 B of weights
on every quantized Conv and on the Gemm ('weight memory 0.001 MB', the float first Conv's 640 B alone) where its
QDQ export reads 0.103 MB -> 0.027 MB."""

from __future__ import annotations

import json

from workbench.cli import main

# digits_cnn's weights and biases (see tests/test_cli_cost.py)
WEIGHTS, BIASES = 16 * 9 + 32 * 16 * 9 + 64 * 32 * 9 + 10 * 256, 16 + 32 + 64 + 10


def _cost(path, capsys) -> dict:
    assert main(["cost", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_qonnx_file_weights_are_counted_as_its_qdq_file(corpus, tmp_path, capsys):
    folder = corpus / "digits_cnn"
    qdq, qonnx = tmp_path / "q.onnx", tmp_path / "q.qonnx.onnx"
    assert main(["quantize", str(folder / "model_opset17.onnx"), "--data", str(folder / "calib.npz"), "--no-auto",
                 "--no-latency-check", "-o", str(qdq)]) == 0
    assert main(["convert", str(qdq), str(qonnx), "--to", "qonnx"]) == 0
    capsys.readouterr()
    a, b = _cost(qdq, capsys), _cost(qonnx, capsys)
    fields = ("node", "weight_params", "bias_params", "weight_bits", "memory_bits", "memory_float_bits")
    assert [{k: r[k] for k in fields} for r in b["rows"]] == [{k: r[k] for k in fields} for r in a["rows"]]
    # every unit quantized: 8-bit weights, 32-bit biases, against 32-bit floats
    assert b["totals"]["memory_bits"] == WEIGHTS * 8 + BIASES * 32
    assert b["totals"]["memory_float_bits"] == (WEIGHTS + BIASES) * 32
