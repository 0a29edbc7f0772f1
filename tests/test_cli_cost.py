"""``workbench-cli cost``: per-node MACs, BOPs and weight memory of digits_cnn, float vs quantized."""

from __future__ import annotations

import json

import pytest

from workbench.cli import main

# digits_cnn hand count (see tests/test_cost.py): Conv 9,216 + 294,912 + 294,912, Gemm 2,560
CONV_MACS, GEMM_MACS = 9216 + 294912 + 294912, 2560
WEIGHTS, BIASES = 16 * 9 + 32 * 16 * 9 + 64 * 32 * 9 + 10 * 256, 16 + 32 + 64 + 10


@pytest.mark.slow
def test_cost_digits_cnn_text_and_json(corpus, capsys, tmp_path):
    model = str(corpus / "digits_cnn" / "model_opset17.onnx")
    assert main(["cost", model, "--preset", "s8s8"]) == 0
    out = capsys.readouterr().out
    total = next(line for line in out.splitlines() if line.startswith("total"))
    assert total.split()[1] == "601,600"
    assert "/head/head.2/Gemm" in out and "2,560" in out and "recipe s8s8: BOPs / 16.0" in out

    assert main(["cost", model, "--preset", "s8s8", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    t = doc["totals"]
    assert t["macs"] == 601_600 and t["bops_float"] == 601_600 * 32 * 32 and t["bops"] == 601_600 * 8 * 8
    assert t["memory_float_bits"] == (WEIGHTS + BIASES) * 32
    assert t["memory_bits"] == WEIGHTS * 8 + BIASES * 32
    assert [r["macs"] for r in doc["rows"]] == [9216, 294912, 294912, 2560]

    # an MX recipe: weight-only MXFP4 on the Gemm (4-bit elements, float activations), Convs float
    recipe = tmp_path / "mx.json"
    recipe.write_text(json.dumps({"preset": "w4-block", "rules": [{"op_type": "Gemm", "weight": {"dtype": "mxfp4"}}]}))
    assert main(["cost", model, "--recipe", str(recipe), "--json"]) == 0
    t = json.loads(capsys.readouterr().out)["totals"]
    assert t["macs"] == 601_600
    assert t["bops"] == CONV_MACS * 32 * 32 + GEMM_MACS * 4 * 32
    assert t["memory_bits"] == (WEIGHTS - 2560) * 32 + 2560 * 4 + BIASES * 32
    assert main(["cost", model, "--recipe", str(recipe)]) == 0
    assert "+80 B" in capsys.readouterr().out  # 10 x 256 MXFP4 weights: 80 blocks of 32, one E8M0 byte each


def test_cost_warns_of_an_exclude_that_matches_no_node(corpus, capsys):
    """quantize warned of ``--exclude nomatch*`` (it keeps nothing float); cost counted silently as if it did."""
    model = str(corpus / "digits_cnn" / "model_opset17.onnx")
    assert main(["cost", model, "--exclude", "/f/f.0/conv", "--json"]) == 0
    out = capsys.readouterr()
    assert out.err == ("warning: exclude '/f/f.0/conv' matches no node name of the model, so it keeps nothing float; "
                       "use a name shown by `workbench-cli inspect` (case-sensitive; * matches any run of characters, "
                       "e.g. '/f/f.0/*')\n")
    assert json.loads(out.out)["totals"]["bops"] == 601_600 * 8 * 8  # every unit counted 8-bit
    assert main(["cost", model, "--exclude", "/f/f.0/Conv", "--json"]) == 0
    out = capsys.readouterr()
    assert out.err == "" and json.loads(out.out)["totals"]["bops"] == 9216 * 32 * 32 + (601_600 - 9216) * 8 * 8
