"""``evaluate``'s metric line names the output the metric read, and ``--metric-output`` picks another, as
autotune's does (minilm_l6_v2: cosine on token_embeddings, its first output, or on sentence_embedding)."""

from __future__ import annotations

from qdq_helpers import cli_quantized

from workbench.cli import main


def _rows(text: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in text.splitlines()
            if line.startswith(("token_embeddings", "sentence_embedding"))}


def test_minilm_metric_line_names_its_output_and_metric_output_picks_one(corpus, tmp_path, capsys):
    d = corpus / "minilm_l6_v2"
    q = cli_quantized(corpus, "minilm_l6_v2", tmp_path / "q.onnx", "--no-auto", "--no-latency-check",
                      model="model.onnx", capsys=capsys)
    base = ["evaluate", str(d / "model.onnx"), str(q), "--data", str(d / "eval.npz"), "--samples", "16",
            "--metric", "cosine"]
    assert main(base) == 0
    text = capsys.readouterr().out
    line = text.splitlines()[-1]
    cosine = _rows(text)["token_embeddings"][2]  # the table's cosine of that output is what the metric read
    assert line == ("metric cosine on output token_embeddings (the first output; others: sentence_embedding; "
                    f"--metric-output NAME reads another): float 1.0000  quantized {float(cosine):.4f}")

    assert main([*base, "--metric-output", "sentence_embedding"]) == 0
    text = capsys.readouterr().out
    cosine = _rows(text)["sentence_embedding"][2]
    assert _rows(text)["sentence_embedding"][2] != _rows(text)["token_embeddings"][2]
    assert text.splitlines()[-1] == (
        "metric cosine on output sentence_embedding (as --metric-output asked; others: token_embeddings; "
        f"--metric-output NAME reads another): float 1.0000  quantized {float(cosine):.4f}")

    assert main([*base, "--metric-output", "pooled"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [f"error: --metric-output pooled: {d / 'model.onnx'} has no output 'pooled' "
                                "(outputs: token_embeddings, sentence_embedding). Name one of the model's outputs."]
    assert main(base[:-2] + ["--metric-output", "sentence_embedding"]) == 2  # no metric to read it
    assert "--metric-output sentence_embedding: no metric to read it (give --metric)." in capsys.readouterr().err


def test_single_output_metric_line_names_it(corpus, tmp_path, capsys):
    d = corpus / "digits_cnn"
    q = cli_quantized(corpus, "digits_cnn", tmp_path / "q.onnx", "--no-auto", capsys=capsys)
    assert main(["evaluate", str(d / "model_opset17.onnx"), str(q), "--data", str(d / "eval.npz"), "--samples", "32",
                 "--metric", "top1"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("metric top1 on output logits: float ")
