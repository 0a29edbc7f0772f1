"""``report --sweep-json`` / ``--curve-json`` refuse a file made for another model."""

from __future__ import annotations

import json

import onnx
import pytest

from workbench.cli import main


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


def test_report_refuses_sweep_of_another_model(corpus, tmp_path, capsys):
    mlp, cnn = corpus / "digits_mlp", corpus / "digits_cnn"
    sweep = tmp_path / "mlp_sweep.json"
    assert main(["sweep", str(mlp / "model_opset17.onnx"), "--data", str(mlp / "calib.npz"), "--eval",
                 str(mlp / "eval.npz"), "--eval-samples", "4", "--executor", "inline", "--json", str(sweep)]) == 0
    capsys.readouterr()
    cnn_nodes = {n.name for n in onnx.load(cnn / "model_opset17.onnx").graph.node}
    first = next(r["node"] for r in json.loads(sweep.read_text())["rows"] if r["node"] not in cnn_nodes)
    out = tmp_path / "r.html"
    assert main(["report", str(cnn / "model_opset17.onnx"), "--data", str(cnn / "calib.npz"), "--eval-samples", "4",
                 "--sweep-json", str(sweep), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err]
    assert err.startswith(f"error: {sweep}: names node {first!r}, which ") and not out.exists()


def test_report_refuses_curve_naming_missing_node(corpus, tmp_path, capsys):
    cnn = corpus / "digits_cnn"
    names = [n.name for n in onnx.load(cnn / "model_opset17.onnx").graph.node if n.op_type in ("Conv", "Gemm")]
    curve = tmp_path / "curve.json"
    curve.write_text(json.dumps({"metric": "top1", "metric_float": 0.99, "curve": [
        {"promoted": 0, "metric": 0.9, "levels": {}},
        {"promoted": 2, "metric": 0.95, "levels": {"float": [names[0], "/fc9/Gemm"]}}]}))
    out = tmp_path / "r.html"
    assert main(["report", str(cnn / "model_opset17.onnx"), "--data", str(cnn / "calib.npz"), "--eval-samples", "4",
                 "--curve-json", str(curve), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{curve}: names node '/fc9/Gemm'" in err and not out.exists()


def test_report_refuses_sweep_of_another_recipe(corpus, tmp_path, capsys):
    """sweep --json records the recipe it measured; a table of a16w8 was embedded under a cpu-u8s8
    report without a word."""
    cnn = corpus / "digits_cnn"
    # --no-latency-check: no timed probes in the runs compared (the match itself ignores the units they keep float:
    # test_report_sweep_placement)
    common = [str(cnn / "model_opset17.onnx"), "--data", str(cnn / "calib.npz"), "--samples", "8", "--no-latency-check"]
    a16, same = tmp_path / "a16w8.json", tmp_path / "same.json"
    assert main(["sweep", *common, "--preset", "a16w8", "--no-auto", "--json", str(a16)]) == 0
    assert main(["sweep", *common, "--json", str(same)]) == 0
    assert json.loads(a16.read_text())["recipe"] != json.loads(same.read_text())["recipe"]
    capsys.readouterr()
    out = tmp_path / "r.html"
    assert main(["report", *common, "--eval-samples", "4", "--sweep-json", str(a16), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"error: {a16}: the sweep measured another recipe (preset a16w8) than this report's (preset cpu-u8s8" in err
    assert not out.exists()
    assert main(["report", *common, "--eval-samples", "4", "--sweep-json", str(same), "-o", str(out)]) == 0
    assert out.exists()


def test_report_names_the_default_preset_of_a_sweep(corpus, tmp_path, capsys):
    """A sweep of the default preset records its recipe without a preset key (exclude_defaults): the
    refusal said "(preset ?)"; it names cpu-u8s8 and the fields the two recipes differ in."""
    cnn = corpus / "digits_cnn"
    common = [str(cnn / "model_opset17.onnx"), "--data", str(cnn / "calib.npz"), "--samples", "8", "--no-auto"]
    sweep = tmp_path / "default.json"
    assert main(["sweep", *common, "--eval-samples", "4", "--executor", "inline", "--json", str(sweep)]) == 0
    assert "preset" not in json.loads(json.loads(sweep.read_text())["recipe"])
    capsys.readouterr()
    out = tmp_path / "r.html"
    assert main(["report", *common, "--preset", "s8s8", "--eval-samples", "4", "--sweep-json", str(sweep),
                 "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == (f"error: {sweep}: the sweep measured another recipe (preset cpu-u8s8) than this report's "
                   "(preset s8s8, as the recipe choice and the options make it); they differ in preset. Run "
                   "`workbench-cli sweep --json FILE` with the report's model, data and recipe options.")
    assert not out.exists()


def test_report_refuses_an_unreadable_sweep_recipe_before_quantizing(corpus, tmp_path, capsys, monkeypatch):
    """A sweep whose recording of the recipe is no recipe (hand-edited, another version's preset) was
    compared field by field as if it were one; it is refused when read, before any quantization."""
    from workbench.core import api

    mlp = corpus / "digits_mlp"
    sweep = tmp_path / "s.json"
    sweep.write_text(json.dumps({"rows": [], "recipe": json.dumps({"preset": "int3-magic"})}))
    monkeypatch.setattr(api, "quantize", lambda *a, **k: (_ for _ in ()).throw(AssertionError("quantized")))
    out = tmp_path / "r.html"
    assert main(["report", str(mlp / "model_opset17.onnx"), "--data", str(mlp / "calib.npz"), "--no-auto",
                 "--sweep-json", str(sweep), "-o", str(out)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {sweep}: field recipe: invalid recipe at preset: unknown preset 'int3-magic'; use one of cpu-u8s8, "
        "s8s8, a16w8, w4-block, fp8-e4m3, dynamic-u8; the sweep's recipe cannot be read. Run `workbench-cli sweep "
        "--json FILE` again with the report's model, data and recipe options.")
    assert not out.exists()
