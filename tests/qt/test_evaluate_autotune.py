"""Evaluate and Autotune in the app (pytest-qt, offscreen), on corpus models.

Evaluate on all-MiniLM-L6-v2: Run > Evaluate with the paraphrase-retrieval metric file (opted in
with "Allow code") shows retrieval top-1 for the float and the quantized model side by side, the
same figures as the core computes headless, with the sample count and onnxruntime's optimisation
level; without the opt-in the metric file is refused with a one-line message.

Autotune on digits_transformer: Run > Autotune plots one point per tried recipe as they arrive, a
click on a point applies that recipe as one undo step, and Ctrl+Z gives back the recipe from
before.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bundled_example import EXAMPLE
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence

from workbench.core import api
from workbench.core.api import CalibrationResult, Recipe

ROOT = Path(__file__).resolve().parents[2]
RETRIEVAL = ROOT / "examples" / "metrics" / "minilm_retrieval.py"


def _run_menu(window):
    return next(a.menu() for a in window.menuBar().actions() if a.text() == "&Run")


@pytest.mark.slow
def test_evaluate_minilm_retrieval_float_and_quantized(qtbot, window, open_file, corpus, dialogs):
    folder = corpus / "minilm_l6_v2"
    open_file(window, folder / "model.onnx", timeout=540_000)
    assert window.act_evaluate.shortcut() == QKeySequence("F9")
    assert window.act_evaluate in _run_menu(window).actions()
    panel = window.evaluate_panel
    settings = panel.settings
    # defaults for the new model: eval.npz beside it; no gt_label there, so cosine
    assert Path(settings.data.text()) == folder / "eval.npz"
    assert settings.metric_spec() == "cosine"
    window.calibration.samples.setValue(8)  # few calibration samples keep the test short

    # a metric file without the opt-in: refused before any job, naming the file and the fix
    settings.set_metric(str(RETRIEVAL))
    window.act_evaluate.trigger()
    assert not window.runs.busy
    assert len(dialogs) == 1 and "minilm_retrieval.py" in dialogs[0][2] and "Allow code" in dialogs[0][2]
    dialogs.clear()

    settings.allow_code.setChecked(True)
    assert not window.docks["Evaluate"].isHidden()  # the first Evaluate brought the panel forward
    with qtbot.waitSignal(window.runs.finished, timeout=540_000):
        window.act_evaluate.trigger()
    assert panel.result is not None, window.status_label.text()
    rep = panel.result["report"]

    # the same numbers as the core headless: same recipe, the job's cached ranges, all 48 rows
    model = api.open_model(folder / "model.onnx")
    quant = api.quantize(model, window.doc.recipe, calibration=CalibrationResult.from_json(window.doc.calibration))
    ref = api.evaluate(model, quant.proto, folder / "eval.npz",
                       metric=api.load_metric(RETRIEVAL, allow_code=True))
    assert rep.samples == ref.samples == 48
    assert rep.float_metric == ref.float_metric == 1.0  # the corpus README: retrieval 1.00 over 24 pairs
    assert rep.quant_metric == pytest.approx(ref.quant_metric)
    for shown, want in zip(rep.outputs, ref.outputs, strict=True):
        assert shown.name == want.name
        assert shown.sqnr_db == pytest.approx(want.sqnr_db, abs=1e-6)

    # shown side by side: metric row float | quantized | change, one row per output, bars with a legend
    table = panel.metric_table
    assert table.rowCount() == 1
    assert [table.item(0, c).text() for c in range(4)] == [
        "minilm_retrieval", api.fmt_metric(ref.float_metric), api.fmt_metric(ref.quant_metric),
        f"{ref.quant_metric - ref.float_metric:+.4f}"]
    outputs = panel.output_table
    assert [outputs.item(r, 0).text() for r in range(outputs.rowCount())] == [o.name for o in ref.outputs]
    assert outputs.item(1, 1).text() == f"{ref.outputs[1].sqnr_db:.4f}"
    assert outputs.item(1, 2).text() == f"{ref.outputs[1].cosine:.4f}"
    labels = [label.text for _sample, label in panel.legend.items]
    assert labels == [f"float {api.fmt_metric(ref.float_metric)}", f"quantized {api.fmt_metric(ref.quant_metric)}"]
    assert "48 samples of eval.npz" in panel.summary.text()
    assert "ORT_ENABLE_ALL" in panel.summary.text() and rep.optimization_level == "ORT_ENABLE_ALL"
    # results come forward: the Evaluate dock is shown beside the SQNR bars (not hidden behind them)
    ev = window.docks["Evaluate"]
    assert ev.isVisible() and ev not in window.tabifiedDockWidgets(window.docks["Errors"])
    assert "retrieval" in window.status_label.text()


@pytest.mark.slow
def test_autotune_digits_transformer_apply_point_and_undo(qtbot, window, open_file, corpus):
    folder = corpus / "digits_transformer"
    assert not window.autotune_panel.run_button.isEnabled()  # no model yet
    open_file(window, folder / "model_opset17.onnx")
    assert window.act_autotune.shortcut() == QKeySequence("Shift+F9")
    assert window.act_autotune in _run_menu(window).actions()
    window.calibration.samples.setValue(16)
    settings, panel = window.evaluate_panel.settings, window.autotune_panel
    assert settings.metric_spec() == "top1"  # eval.npz has gt_label
    settings.set_metric("cosine")
    settings.samples.setValue(64)
    panel.target_kind.setCurrentIndex(panel.target_kind.findData("max_drop"))
    panel.target.setValue(0.0005)
    before = window.doc.recipe.model_copy(deep=True)

    # cancel once the first point is drawn: the job stops, the point stays, the recipe is untouched
    with qtbot.waitSignal(window.runs.partial, timeout=540_000):
        window.act_autotune.trigger()
    assert not panel.run_button.isEnabled() and panel.cancel_button.isEnabled()
    with qtbot.waitSignal(window.runs.cancelled, timeout=540_000):
        panel.cancel_button.click()
    qtbot.waitUntil(lambda: not window.runs.busy, timeout=300_000)
    assert panel.final is None and len(panel.points) >= 1 and "cancelled" in panel.summary.text()
    assert panel.run_button.isEnabled() and not panel.cancel_button.isEnabled()
    assert window.doc.recipe.model_dump() == before.model_dump()

    arrived: list[int] = []
    window.runs.partial.connect(lambda kind, data: arrived.append(len(panel.points)))
    with qtbot.waitSignal(window.runs.finished, timeout=540_000):
        window.act_autotune.trigger()
    final = panel.final
    assert final is not None, window.status_label.text()
    # points were drawn while the job ran, one per tried recipe, before the final result
    assert arrived == list(range(1, len(final["curve"]) + 1)) and len(arrived) >= 3
    assert final["met"] and final["metric_after"] >= final["metric_float"] - 0.0005
    assert len(panel.scatter.points()) == len(final["curve"])
    assert panel.plot_item.getAxis("bottom").labelText == "weight size (KiB)"
    legend = [label.text for _s, label in panel.legend.items]
    assert "meets the target" in legend and any(t.startswith("target ") for t in legend)
    assert window.docks["Autotune"].isVisible()

    # a real click on the point that met the target with the fewest units promoted applies it
    index = next(i for i, e in enumerate(panel.points) if e["point"]["promoted"] == len(final["promoted"]))
    chosen = Recipe.model_validate_json(panel.points[index]["recipe"])
    assert chosen.model_dump() == Recipe.model_validate_json(final["recipe"]).model_dump()
    depth = window.doc.undo_stack.count()
    qtbot.mouseClick(panel.plot.viewport(), Qt.MouseButton.LeftButton, pos=panel.point_position(index).toPoint())
    assert window.doc.undo_stack.count() == depth + 1
    assert window.doc.recipe.model_dump() == chosen.model_dump() != before.model_dump()
    excluded = {n for n, u in window.doc.plan.units.items() if u.excluded}
    assert set(final["promoted"]) <= excluded
    assert panel.applied == index

    # Ctrl+Z restores the recipe from before the click, exactly
    qtbot.keyClick(window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert window.doc.recipe.model_dump() == before.model_dump()
    assert window.doc.recipe.to_json() == before.to_json()
    assert panel.applied is None or panel.points[panel.applied]["recipe"] == before.to_json()

    # opening another model forgets the curve and the evaluation settings of this one
    open_file(window, corpus / "digits_cnn" / "model_opset17.onnx")
    assert panel.points == [] and panel.final is None and not panel.scatter.points().size
    assert Path(settings.data.text()) == corpus / "digits_cnn" / "eval.npz" and settings.metric_spec() == "top1"


class _Spot:
    def __init__(self, index: int) -> None:
        self.index = index

    def data(self) -> int:
        return self.index


def test_a_click_on_points_drawn_on_top_of_each_other_applies_the_fewest_promoted(qtbot, window):
    """Two recipes with the same metric and size sit on one spot: the click applies the one with fewer
    units promoted (the earliest tried on a tie), whichever pyqtgraph lists first."""
    panel = window.autotune_panel
    panel.points = [{"point": {"promoted": n}} for n in (3, 1, 2, 1)]
    picked: list[int] = []
    panel.pointClicked.disconnect()  # the window's handler would apply these recipe-less points
    panel.pointClicked.connect(picked.append)
    panel._on_clicked(None, [_Spot(0), _Spot(3), _Spot(1), _Spot(2)])
    panel._on_clicked(None, [_Spot(2), _Spot(0)])
    panel._on_clicked(None, [])
    assert picked == [1, 2]


def test_autotune_target_keeps_a_fine_cosine_drop(qtbot, window):
    """A max drop of 5e-05 (cosine) became 1e-04 in a 4-decimal spin box."""
    window.autotune_panel.target.setValue(0.00005)
    assert window.autotune_panel.target_fields()["max_drop"] == 0.00005


def test_autotune_cancelled_before_any_recipe_says_so_and_its_axes_have_no_multiplier(qtbot, window, open_file):
    """Cancelled while calibrating, the panel read "Autotune stopped after 0 recipes; the points stay
    clickable." (there were none); a top1 axis of 0.986-0.996 read "top1 (x0.001)" with ticks 986-996."""

    open_file(window, EXAMPLE / "digits_cnn.onnx")
    window.evaluate_panel.settings.data.setText(str(EXAMPLE / "digits_cnn_eval.npz"))
    with qtbot.waitSignal(window.runs.finished, timeout=540_000):
        window.evaluation.start_autotune()
        window.runs.cancel()
    panel = window.autotune_panel
    assert not panel.points
    assert panel.summary.text() == "Autotune stopped before any recipe was measured: nothing to apply."
    assert not any(panel.plot_item.getAxis(side).autoSIPrefix for side in ("left", "bottom"))
