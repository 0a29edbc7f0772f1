"""``cost`` counts what ``quantize`` writes when given the project it saved (``cost PROJECT.wbproj``): the units
its recipe choice and latency placement kept float count 32 x 32. ``cost MODEL --data`` counted them 8/8 without
a word; it now says that it counts the preset's plan, not a written model, and how to count the written one."""

from __future__ import annotations

import json

import onnx

from workbench.cli import main
from workbench.core.pipeline import latency_check, latency_placement
from workbench.core.runtime import unit_latency
from workbench.core.runtime.latency import LatencyComparison


def _dq_fed(path) -> set[str]:
    """Nodes of a written QDQ model with an input from a DequantizeLinear (run on quantized values)."""
    graph = onnx.load(path).graph
    dq = {o for n in graph.node if n.op_type == "DequantizeLinear" for o in n.output}
    return {n.name for n in graph.node if n.op_type != "QuantizeLinear" and any(i in dq for i in n.input)}


def test_cost_of_the_saved_project_counts_the_written_model(corpus, tmp_path, capsys, monkeypatch):
    # latency fakes: every unit probe measures quantized 2x slower (the placement keeps the activation MatMuls
    # float), the whole model quantized measures faster (no fallback)
    monkeypatch.setattr(unit_latency, "compare",
                        lambda f, q, feed, **k: LatencyComparison(float_s=1e-3, quant_s=2e-3, runs=5))
    monkeypatch.setattr(latency_check, "compare",
                        lambda f, q, feed, **k: LatencyComparison(float_s=1e-3, quant_s=0.5e-3, runs=5))
    # all four activation MatMuls kept float (the 85 % int8 share would keep 2 of these 14 units float)
    monkeypatch.setattr(latency_placement, "MIN_INT8_SHARE", 0.0)
    d = corpus / "digits_transformer"
    model, calib = str(d / "model_opset17.onnx"), str(d / "calib.npz")
    out, project = tmp_path / "q.onnx", tmp_path / "q.wbproj"
    assert main(["quantize", model, "--data", calib, "--samples", "16", "--remeasure-latency", "-o", str(out),
                 "--save-project", str(project)]) == 0
    capsys.readouterr()
    written = _dq_fed(out)

    assert main(["cost", model, "--data", calib, "--json"]) == 0
    plan_rows = {r["node"]: (r["weight_bits"], r["activation_bits"]) for r in json.loads(capsys.readouterr().out)["rows"]}
    assert main(["cost", str(project), "--json"]) == 0
    rows = {r["node"]: (r["weight_bits"], r["activation_bits"]) for r in json.loads(capsys.readouterr().out)["rows"]}
    assert set(rows) == set(plan_rows) and len(rows) == 14
    # every MatMul / Gemm counted as the file runs it: 8/8 when it reads a DequantizeLinear, else 32/32
    assert {n: bits == (8, 8) for n, bits in rows.items()} == {n: n in written for n in rows}
    kept = sorted(n for n in rows if rows[n] == (32, 32) and plan_rows[n] == (8, 8))
    assert kept == ["/enc/layers.0/self_attn/MatMul_1", "/enc/layers.0/self_attn/MatMul_2",
                    "/enc/layers.1/self_attn/MatMul_1", "/enc/layers.1/self_attn/MatMul_2"]

    assert main(["cost", model, "--data", calib]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert ("note: these figures count the plan of preset cpu-u8s8 with quantize's float-island guards, not a "
            "written model: quantize chooses the recipe (MSE ranges, compute-only, units kept float or 16-bit) and "
            "keeps units float whose integer kernel measures slower, so it can quantize fewer; to count what it "
            "writes, run quantize with --save-project P.wbproj and then cost P.wbproj") in lines
    assert main(["cost", str(project)]) == 0  # the project's data gives the shapes
    text = capsys.readouterr().out
    assert f"project {project} (recipe cpu-u8s8 as saved): BOPs" in text and "count the plan of" not in text
    assert f"the shapes of {calib}" in text


def test_cost_of_a_project_refuses_another_recipe(corpus, tmp_path, capsys):
    d = corpus / "digits_cnn"
    project = tmp_path / "p.wbproj"
    assert main(["quantize", str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--samples", "8",
                 "--no-latency-check", "-o", str(tmp_path / "q.onnx"), "--save-project", str(project)]) == 0
    capsys.readouterr()
    assert main(["cost", str(project), "--preset", "s8s8"]) == 2
    assert capsys.readouterr().err == (f"error: --preset: {project} is a project; cost counts the recipe it saved. "
                                       "Drop --preset, or give the model the project records in place of the "
                                       "project.\n")
