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


def test_qonnx_file_says_onnxruntime_cannot_run_it(corpus, tmp_path, capsys):
    """``cost`` of a QONNX file printed 'as onnxruntime runs them: / 1.0', though onnxruntime cannot run its Quant
    nodes: its 'as run' column counts every node 32 x 32 (float kernels between the Quant nodes). The line says so
    and the note's convert command gives the file whose 'as run' figure is the QDQ export's (/ 16.0)."""
    folder = corpus / "digits_cnn"
    qdq, qonnx = tmp_path / "q.onnx", tmp_path / "q.qonnx.onnx"
    assert main(["quantize", str(folder / "model_opset17.onnx"), "--data", str(folder / "calib.npz"), "--no-auto",
                 "--no-latency-check", "-o", str(qdq)]) == 0
    assert main(["convert", str(qdq), str(qonnx), "--to", "qonnx"]) == 0
    capsys.readouterr()
    assert main(["cost", str(qonnx)]) == 0
    lines = capsys.readouterr().out.splitlines()
    back = tmp_path / "q.qdq.onnx"
    assert ("as written: BOPs / 16.0 (onnxruntime cannot run QONNX; 'BOPs as run' counts every node 32 x 32, the "
            "float kernels QONNX's executor computes between its Quant nodes: / 1.0), weight memory 0.103 MB -> "
            "0.026 MB (batch 1)") in lines
    assert not any("as onnxruntime runs them" in line for line in lines)
    assert (f"note: to count the kernels onnxruntime runs, convert it to QDQ (workbench-cli convert {qonnx} {back} "
            "--to qdq) and run cost on that file") in lines
    assert _cost(qonnx, capsys)["totals"]["bops_kernel"] == 601_600 * 32 * 32  # digits_cnn's MACs, all float

    assert main(["convert", str(qonnx), str(back), "--to", "qdq"]) == 0
    capsys.readouterr()
    assert main(["cost", str(back)]) == 0
    text = capsys.readouterr().out
    assert "as written: BOPs / 16.0 (as onnxruntime runs them: / 16.0)" in text and "cannot run QONNX" not in text
