"""``analyze`` (and ``sweep`` / ``report``) reuse the recipe choice an earlier run made on the same model, data,
samples and recipe (``quantize`` keeps its choice for them) instead of choosing again (nudenet_320n's analyze
spent 51.6 s of 93 s in it), and say so; ``analyze`` of an already-quantized file points to ``compare``."""

from __future__ import annotations

import re

import pytest

from workbench.cli import main
from workbench.core import api


def _no_choice(*a, **k):
    raise AssertionError("the recipe choice ran again")


def test_analyze_reuses_the_choice_and_measures_the_same(corpus, tmp_path, capsys, monkeypatch):
    d = corpus / "digits_cnn"
    args = [str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--samples", "32", "--no-latency-check"]
    assert main(["quantize", *args, "-o", str(tmp_path / "q.onnx")]) == 0
    chose = next(line for line in capsys.readouterr().err.splitlines() if line.startswith("recipe choice: "))
    monkeypatch.setattr(api, "choose_recipe", _no_choice)
    assert main(["analyze", *args, "--eval-samples", "8"]) == 0
    reused = capsys.readouterr()
    lines = [line for line in reused.err.splitlines() if line.startswith("recipe choice")]
    # the earlier run's cost is labelled as that run's, with when it was chosen: no "took" as if it ran now
    line, took = chose.split("; took ")
    assert len(lines) == 1 and re.fullmatch(
        re.escape(line + " [reused from an earlier run on the same model, data, samples and recipe, chosen ")
        + r"\d{4}-\d\d-\d\d \d\d:\d\d UTC" + re.escape(f" in {took}: ") + r".+\.json; delete it to choose again\]",
        lines[0]), lines[0]
    assert "took" not in lines[0] and re.fullmatch(r"[\d.]+ s \([\d.]+x its calibration pass\)", took)
    # the same figures as with the choice made afresh
    monkeypatch.undo()
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "empty"))
    assert main(["analyze", *args, "--eval-samples", "8"]) == 0
    fresh = capsys.readouterr()
    again = [line for line in fresh.err.splitlines() if line.startswith("recipe choice")]
    assert len(again) == 1 and again[0].split("; took ")[0] == chose.split("; took ")[0]  # its time varies
    assert fresh.out == reused.out and "SQNR" in fresh.out


def test_other_samples_choose_again(corpus, tmp_path, capsys, monkeypatch):
    d = corpus / "digits_cnn"
    args = [str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--no-latency-check", "--eval-samples", "4"]
    assert main(["analyze", *args, "--samples", "32"]) == 0
    capsys.readouterr()
    calls = []
    choose = api.choose_recipe
    monkeypatch.setattr(api, "choose_recipe", lambda *a, **k: calls.append(k["samples"]) or choose(*a, **k))
    assert main(["analyze", *args, "--samples", "24"]) == 0
    assert calls == [24] and "[reused" not in capsys.readouterr().err


#: what the already-quantized refusals say a QDQ file holds (workbench.core.inspection.already_quantized)
QDQ_HOLDS = ("It holds QuantizeLinear / DequantizeLinear pairs around float ops (QDQ: onnxruntime fuses each pair and "
             "its op into an integer kernel as it loads the file). ")

@pytest.mark.parametrize("verb", ["analyze", "sweep"])
def test_an_already_quantized_model_points_to_compare(corpus, tmp_path, capsys, verb):
    d = corpus / "digits_cnn"
    q = tmp_path / "q.onnx"
    assert main(["quantize", str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--samples", "8",
                 "--no-latency-check", "--no-auto", "-o", str(q)]) == 0
    capsys.readouterr()
    calib = str(d / "calib.npz")
    assert main([verb, str(q), "--data", calib]) == 2
    assert capsys.readouterr().err == (
        f"error: {q} is already quantized (QDQ): 22 quantized nodes (DequantizeLinear x15, QuantizeLinear x7); "
        f"{verb} quantizes a float model and measures it, so it would quantize this file again. {QDQ_HOLDS}To "
        f"measure this file's error against the float model it was made from, run "
        f"workbench-cli compare FLOAT.onnx {q} --data {calib} (per-tensor SQNR; evaluate FLOAT.onnx {q} --data "
        f"{calib} for the outputs), or {verb} the float model.\n")


def test_autotune_of_an_already_quantized_model_points_to_compare_before_any_work(corpus, tmp_path, capsys):
    """autotune started its calibration (a progress line) and then failed in quantize with "quantizing it again
    would stack a second rounding"; it is refused up front as analyze and sweep are."""
    d = corpus / "digits_cnn"
    q, out = tmp_path / "q.onnx", tmp_path / "t.onnx"
    assert main(["quantize", str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--samples", "8",
                 "--no-latency-check", "--no-auto", "-o", str(q)]) == 0
    capsys.readouterr()
    calib, ev = str(d / "calib.npz"), str(d / "eval.npz")
    assert main(["autotune", str(q), "--data", calib, "--eval", ev, "--max-drop", "0.01", "-o", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"error: {q} is already quantized (QDQ): 22 quantized nodes (DequantizeLinear x15, QuantizeLinear x7); "
        f"autotune quantizes a float model and measures it, so it would quantize this file again. {QDQ_HOLDS}To "
        f"measure this file's error against the float model it was made from, run "
        f"workbench-cli compare FLOAT.onnx {q} --data {ev} (per-tensor SQNR; evaluate FLOAT.onnx {q} --data "
        f"{ev} for the outputs), or autotune the float model.\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.onnx"]


def test_a_report_of_a_reused_choice_does_not_hold_the_cache_path(corpus, tmp_path, capsys, monkeypatch):
    """The report's choice line named the cache file (/root/.cache/workbench/recipe_choice/...json): a path in
    the user's home folder in a page made to be shared. The CLI's stderr still names it."""
    cache = tmp_path / "home" / "cache"
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(cache))
    d = corpus / "digits_cnn"
    args = [str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--samples", "32", "--no-latency-check"]
    assert main(["quantize", *args, "-o", str(tmp_path / "q.onnx")]) == 0
    capsys.readouterr()
    page = tmp_path / "r.html"
    assert main(["report", *args, "-o", str(page)]) == 0
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if x.startswith("recipe choice")]
    assert str(cache) in line and line.endswith(".json; delete it to choose again]")
    html = page.read_text()
    assert str(tmp_path / "home") not in html and "recipe_choice" not in html
    assert "[reused from an earlier run on the same model, data, samples and recipe]" in html
