"""``compare``'s refusals say what to do, and doing it works."""

from __future__ import annotations

import json

import onnx
import pytest

from workbench.cli import main
from workbench.core import api


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


def test_compare_of_a_qonnx_file_says_to_convert_it_and_that_works(corpus, tmp_path, capsys):
    """The refusal said "it is compared as QDQ" while refusing to compare it."""
    mlp = corpus / "digits_mlp"
    model, data = str(mlp / "model_opset17.onnx"), str(mlp / "calib.npz")
    qdq, qonnx, back = tmp_path / "m.qdq.onnx", tmp_path / "m.qonnx.onnx", tmp_path / "OUT.onnx"
    assert main(["quantize", model, "--data", data, "--samples", "8", "--no-auto", "-o", str(qdq)]) == 0
    assert main(["convert", str(qdq), str(qonnx), "--to", "qonnx"]) == 0
    capsys.readouterr()
    assert main(["compare", model, str(qonnx), "--data", data, "--samples", "4"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {qonnx} is a QONNX file (Quant nodes of qonnx.custom_op.general), which onnxruntime cannot run, so "
        f"it cannot be compared as it is. Convert it to QDQ first (workbench-cli convert {qonnx} OUT.onnx --to qdq) "
        "and compare OUT.onnx, or compare the QDQ file it was exported from.")
    assert main(["convert", str(qonnx), str(back), "--to", "qdq"]) == 0
    assert main(["compare", model, str(back), "--data", data, "--samples", "4"]) == 0


def test_compare_splits_a_batch_one_file_row_by_row(corpus, tmp_path, capsys):
    """A QDQ file whose input batch is fixed at 1 (a QONNX round trip fixes it) beside a float model of any
    batch: the weights vs activations split ran it on batches of rows and onnxruntime's InvalidArgument
    came out as a traceback."""
    mlp = corpus / "digits_mlp"
    model, data = str(mlp / "model_opset17.onnx"), str(mlp / "calib.npz")
    qdq, qonnx, back = tmp_path / "m.qdq.onnx", tmp_path / "m.qonnx.onnx", tmp_path / "back.onnx"
    assert main(["quantize", model, "--data", data, "--samples", "8", "--no-auto", "-o", str(qdq)]) == 0
    assert main(["convert", str(qdq), str(qonnx), "--to", "qonnx"]) == 0
    assert main(["convert", str(qonnx), str(back), "--to", "qdq"]) == 0
    assert onnx.load(str(back)).graph.input[0].type.tensor_type.shape.dim[0].dim_value == 1
    capsys.readouterr()
    assert main(["compare", model, str(back), "--data", data, "--samples", "6"]) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    split = api.noise_split(api.open_model(model), api.open_model(back).proto, data, samples=6, batch_size=1)
    assert split.samples == 6
    assert line == f"weights vs activations (on 6 samples; output SQNR, graph as written): {split.describe()}"


def test_compare_quantized_then_float_is_swapped_with_a_note(corpus, tmp_path, capsys):
    """``compare QUANTIZED FLOAT`` was refused as "already quantized" without saying the second file is the float
    model; it now runs in the order FLOAT QUANTIZED, with a note, and gives the same diff as that order."""
    cnn = corpus / "digits_cnn"
    model, data, q = str(cnn / "model_opset17.onnx"), str(cnn / "calib.npz"), tmp_path / "q.onnx"
    assert main(["quantize", model, "--data", data, "--samples", "8", "--no-auto", "--no-latency-check",
                 "-o", str(q)]) == 0
    capsys.readouterr()
    assert main(["compare", model, str(q), "--data", data, "--samples", "4", "--json", str(tmp_path / "a.json")]) == 0
    right = capsys.readouterr()
    assert main(["compare", str(q), model, "--data", data, "--samples", "4", "--json", str(tmp_path / "b.json")]) == 0
    swapped = capsys.readouterr()
    notes = [line for line in swapped.err.splitlines() if line.startswith(("note:", "error:", "warning:"))]
    assert notes == [f"note: {q} is quantized and {model} is not: compared in the order FLOAT QUANTIZED, as "
                     f"`workbench-cli compare {model} {q}`"]
    assert swapped.out.replace("b.json", "a.json") == right.out
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert json.loads((tmp_path / "a.json").read_text())["counts"]["qdq_pairs"] > 0
