"""``inspect --units`` of an already-quantized file printed no units line and no word about why."""

from __future__ import annotations

import pytest
from qdq_helpers import cli_quantized

from workbench.cli import main


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


def test_inspect_units_of_a_quantized_file_says_why_there_are_none(corpus, tmp_path, capsys):
    mlp = corpus / "digits_mlp"
    quant = cli_quantized(corpus, "digits_mlp", tmp_path / "m.int8.onnx", "--no-auto", capsys=capsys)
    assert main(["inspect", str(quant), "--units"]) == 0
    captured = capsys.readouterr()
    assert not any(line.startswith("units:") for line in captured.out.splitlines())
    assert captured.err.strip() == (
        f"note: --units lists the node units a preset would quantize in a float model; {quant} is already "
        "quantized, so there are none (its quantized nodes are listed above); inspect the float model it was "
        "made from for its units")
    assert main(["inspect", str(mlp / "model_opset17.onnx"), "--units"]) == 0
    captured = capsys.readouterr()
    assert "units:       3 quantizable node units with cpu-u8s8: Gemm 3" in captured.out.splitlines()
    assert captured.err == ""
