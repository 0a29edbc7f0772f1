"""``compare``'s weights vs activations split names the quantized file given on the command line."""

from __future__ import annotations

import pytest

from workbench.cli import main
from workbench.core import api


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


def test_compare_split_names_the_quantized_file(corpus, tmp_path, capsys, monkeypatch):
    mlp = corpus / "digits_mlp"
    model, data = str(mlp / "model_opset17.onnx"), str(mlp / "calib.npz")
    qdq = tmp_path / "m.qdq.onnx"
    assert main(["quantize", model, "--data", data, "--samples", "8", "--no-auto", "-o", str(qdq)]) == 0
    real, labels = api.noise_split, []

    def spy(*a, **kw):
        labels.append(kw.get("quant_label"))
        return real(*a, **kw)

    monkeypatch.setattr(api, "noise_split", spy)
    capsys.readouterr()
    assert main(["compare", model, str(qdq), "--data", data, "--samples", "4"]) == 0
    assert labels == [str(qdq)]
    assert "weights vs activations (on 4 samples" in capsys.readouterr().out
