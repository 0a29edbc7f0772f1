"""Which model output autotune's metric reads: a built-in metric reads the first output, the CLI says
which one, and --metric-output picks another (on minilm_l6_v2 cosine read token_embeddings, not
sentence_embedding, and nothing said so)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from bundled_example import EXAMPLE
from onnx import helper

from workbench.cli import main
from workbench.core.formats.numerics import sqnr_db

CALIB, EVAL = str(EXAMPLE / "digits_cnn_calib.npz"), str(EXAMPLE / "digits_cnn_eval.npz")
POOLED = "/head/head.0/Flatten_output_0"


def _two_outputs(tmp_path: Path) -> str:
    """digits_cnn with its pooled features [N, 256] as the first output and the logits second."""
    proto = onnx.load(EXAMPLE / "digits_cnn.onnx")
    logits = list(proto.graph.output)
    del proto.graph.output[:]
    proto.graph.output.extend([helper.make_tensor_value_info(POOLED, onnx.TensorProto.FLOAT, ["N", 256]), *logits])
    path = tmp_path / "two.onnx"
    onnx.save(proto, path)
    return str(path)


def _sqnr(float_path: str, quant_path: str, output: str) -> float:
    x = np.load(EVAL)["input"][:16]
    run = [ort.InferenceSession(p, providers=["CPUExecutionProvider"]) for p in (float_path, quant_path)]
    f, q = (np.concatenate([s.run([output], {"input": x[i:i + 1]})[0] for i in range(16)]) for s in run)
    return sqnr_db(f, q)


def test_metric_output_is_named_and_chosen(tmp_path, capsys):
    model = _two_outputs(tmp_path)
    base = ["autotune", model, "--data", CALIB, "--samples", "8", "--eval", EVAL, "--eval-samples", "16",
            "--metric", "output_sqnr", "--min-score", "0", "-o", str(tmp_path / "q.onnx")]
    figures = {}
    for extra, output, how in (([], POOLED, "the first output"),
                               (["--metric-output", "logits"], "logits", "as --metric-output asked")):
        assert main([*base, *extra]) == 0
        lines = capsys.readouterr().out.splitlines()
        other = "logits" if output == POOLED else POOLED
        assert f"metric output_sqnr on output {output} ({how}; others: {other}; --metric-output NAME scores " \
               "another) on 16 eval rows:" in lines
        figure = next(ln for ln in lines if ln.startswith("  all quantized ")).split()[2].rstrip(";")
        figures[output] = float(figure)  # nothing promoted: q.onnx is the all-quantized model
        assert figures[output] == round(_sqnr(model, str(tmp_path / "q.onnx"), output), 4)
    assert abs(figures[POOLED] - figures["logits"]) > 0.5  # two outputs, two figures
    assert main([*base, "--metric-output", "probs"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: --metric-output probs: {model} has no output 'probs' "
                                               f"(outputs: {POOLED}, logits).")


def test_metric_output_is_the_output_top1_is_checked_on(tmp_path, capsys):
    """top1 with --metric-output logits was refused by the label check of the FIRST output ('... the first
    output, but ... has shape [N, 256]' is fine for top1, so the first output here is a 1-D score)."""
    proto = onnx.load(EXAMPLE / "digits_cnn.onnx")
    logits = proto.graph.output[0].name
    node = helper.make_node("ReduceMax", [logits], ["score"], keepdims=0, axes=[1])
    proto.graph.node.append(node)
    outs = list(proto.graph.output)
    del proto.graph.output[:]
    proto.graph.output.extend([helper.make_tensor_value_info("score", onnx.TensorProto.FLOAT, ["N"]), *outs])
    model = tmp_path / "score_first.onnx"
    onnx.save(proto, model)
    base = ["autotune", str(model), "--data", CALIB, "--samples", "8", "--eval", EVAL, "--eval-samples", "16",
            "--metric", "top1", "--max-drop", "0.5", "-o", str(tmp_path / "q.onnx")]
    assert main(base) == 2  # top1 on the 1-D first output: refused up front, naming it
    assert "'score' has shape [N]" in capsys.readouterr().err
    assert main([*base, "--metric-output", logits]) == 0
    out = capsys.readouterr().out
    assert f"metric top1 on output {logits} (as --metric-output asked" in out
