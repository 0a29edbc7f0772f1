"""`workbench-cli autotune` starts from the recipe `quantize` writes before its latency check: on a machine where
every quantized model measures slower than float (conftest's fake clock, 1.5x), `quantize` writes digits_transformer
with every unit float, while autotune's all-quantized point quantizes every unit the recipe does (the user's own
exclusions kept), as the app's autotune now does after a calibration whose latency check kept every unit float."""

from __future__ import annotations

import json

import onnx
import pytest

from workbench.cli import main
from workbench.core import api
from workbench.core.recipe.spec import NodeSettings, PartialSpec


def test_the_all_quantized_point_is_not_the_latency_checks_float_model(corpus, tmp_path, fake_latency, capsys):
    fake_latency.quantized_at(1.5)
    folder = corpus / "digits_transformer"
    model, calib, ev = (str(folder / n) for n in ("model_opset17.onnx", "calib.npz", "eval.npz"))
    # quantize: the latency check keeps every unit but the user's float too (1.5x of 1 ms, every trial as slow)
    assert main(["quantize", model, "--data", calib, "--samples", "16", "--no-auto", "--exclude", "/cls/Gemm",
                 "-o", str(tmp_path / "q.onnx")]) == 0
    assert "(0 of 36 node units quantized" in capsys.readouterr().out
    recipe = tmp_path / "mine.json"
    recipe.write_text(json.dumps({"preset": "cpu-u8s8", "overrides": {"/cls/Gemm": {"exclude": True}}}))
    curve = tmp_path / "curve.json"
    main(["autotune", model, "--recipe", str(recipe), "--data", calib, "--samples", "16", "--eval", ev,
          "--eval-samples", "32", "--metric", "cosine", "--max-drop", "0.5", "-o", str(tmp_path / "t.onnx"),
          "--curve-json", str(curve)])
    out = capsys.readouterr().out
    start = json.loads(curve.read_text())["curve"][0]
    assert start["step"] == "recipe as given" and start["levels"] == {}
    floats = next(line.split() for line in out.splitlines() if line.strip().startswith("float "))
    quantized = next(line.split() for line in out.splitlines() if line.strip().startswith("all quantized "))
    assert float(quantized[2].rstrip(";")) == pytest.approx(start["metric"], abs=1e-4)
    assert start["metric"] < float(floats[1].rstrip(";")) - 1e-4
    # the target holds there: the tuned model is that point, the recipe's 35 units quantized, as quantize writes
    # them without its latency check
    assert main(["quantize", model, "--recipe", str(recipe), "--data", calib, "--samples", "16", "--no-auto",
                 "--no-latency-check", "-o", str(tmp_path / "n.onnx")]) == 0
    assert "(35 of 36 node units quantized" in capsys.readouterr().out
    lines = [_count(onnx.load(tmp_path / name), "QuantizeLinear") for name in ("t.onnx", "n.onnx", "q.onnx")]
    assert lines[0] == lines[1] > 0 == lines[2]


def _count(proto: onnx.ModelProto, op: str) -> int:
    return sum(n.op_type == op for n in proto.graph.node)


def test_without_excluded_lifts_only_the_exclusion_it_names():
    """What the app's autotune does to the latency check's units: an override that only excluded goes, one with
    settings of its own keeps them; other nodes' exclusions and the exclude globs stay."""
    recipe = api.make_recipe("cpu-u8s8").with_excluded(["a", "b"]).with_overrides(
        ["c"], NodeSettings(exclude=True, activation=PartialSpec(dtype="int16")))
    recipe = recipe.model_copy(update={"exclude": ["d*"]})
    lifted = recipe.without_excluded(["a", "c", "d1", "z"])
    assert set(lifted.overrides) == {"b", "c"} and lifted.overrides["b"].exclude
    assert lifted.overrides["c"] == NodeSettings(activation=PartialSpec(dtype="int16"))
    assert lifted.exclude == ["d*"] and lifted.preset == recipe.preset
