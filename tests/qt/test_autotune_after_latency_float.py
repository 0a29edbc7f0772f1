"""Autotune after a calibration whose latency check kept every unit float: the all-quantized point quantizes the
units the latency check excluded (a measurement of speed on this machine, not the user's exclusions), and the
user's own exclusions stay. On digits_transformer the curve started from the recipe with every unit excluded by
the latency edit, so its "all quantized" point was the float model (cosine 1.0000, 0 QuantizeLinear). The latency
measurements are replaced (latency_fakes.slow_quantized: every quantized model 1.5x float), not timed.
"""

from __future__ import annotations

from cli_projects import run_job
from latency_fakes import slow_quantized

from workbench.core import api
from workbench.core.api import CalibrationResult, Recipe
from workbench.qt.commands import push_edit, set_exclude
from workbench.qt.quantize_anyway import LATENCY_EDIT, latency_kept_units

#: the node the user keeps float before calibrating (an override of its own: the latency check leaves it alone)
MINE = "/cls/Gemm"


def _quantize_lines(model, recipe: Recipe, calibration: dict) -> int:
    res = api.quantize(model, recipe, calibration=CalibrationResult.from_json(calibration))
    return sum(n.op_type == "QuantizeLinear" for n in res.proto.graph.node)


def test_autotune_starts_from_the_units_the_latency_check_kept_float_quantized(qtbot, window, open_file, corpus,
                                                                                monkeypatch):
    slow_quantized(monkeypatch)
    folder = corpus / "digits_transformer"
    open_file(window, folder / "model_opset17.onnx")
    doc = window.doc
    window.calibration.choose_first.setChecked(False)  # the preset as it is: one edit, the latency check's
    window.calibration.samples.setValue(16)
    window.calibration.analysis_samples.setValue(8)
    push_edit(doc, set_exclude(doc.recipe, [MINE], True), "Exclude")
    units = sorted(doc.plan.units)
    assert len(units) == 36

    state, res = run_job(qtbot, window, window.act_calibrate.trigger)
    assert state == "succeeded", res
    kept = sorted(set(units) - {MINE})
    assert res["latency_kept"] == kept and latency_kept_units(doc) == set(kept)
    assert LATENCY_EDIT in doc.undo_stack.command(doc.undo_stack.index() - 1).text()
    assert all(u.excluded for u in doc.plan.units.values())  # nothing quantized: the float model
    recipe_after_calibration = doc.recipe.to_json()

    settings, panel = window.evaluate_panel.settings, window.autotune_panel
    settings.set_metric("cosine")
    settings.samples.setValue(32)
    panel.target_kind.setCurrentIndex(panel.target_kind.findData("max_drop"))
    panel.target.setValue(0.5)  # met by the all-quantized point: one recipe measured
    state, final = run_job(qtbot, window, window.act_autotune.trigger)
    assert state == "succeeded", final
    assert final["latency_lifted"] == kept and panel.final is not None

    start = next(e for e in final["curve"] if e["point"]["promoted"] == 0)
    recipe = Recipe.model_validate_json(start["recipe"])
    model = api.open_model(folder / "model_opset17.onnx")
    plan = api.plan(model, recipe)
    # the latency check's 35 units quantized, the user's own exclusion kept
    assert sorted(n for n, u in plan.units.items() if not u.excluded) == kept
    assert recipe.overrides[MINE].exclude and set(recipe.overrides) == {MINE}
    lines = _quantize_lines(model, recipe, doc.calibration)
    assert lines > 0 and lines == _quantize_lines(model, set_exclude(api.make_recipe("cpu-u8s8"), [MINE], True),
                                                  doc.calibration)
    assert start["point"]["fraction_int8"] > 0.9
    # its metric is the quantized model's, not the float one's (cosine 1.0000 before)
    assert final["metric_before"] == start["point"]["metric"] != final["metric_float"]
    assert final["metric_before"] < 1.0
    text = panel.summary.text()
    assert f"all quantized {api.fmt_metric(final['metric_before'])}" in text
    assert "The 35 units the latency check kept float (slower quantized on this machine) are quantized from the start" \
        in text
    # the document's recipe is untouched by the run: the latency edit stays until a point is applied
    assert doc.recipe.to_json() == recipe_after_calibration
