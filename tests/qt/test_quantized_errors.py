"""The Errors dock of an already-quantized file: it says what errors need (the float model) instead
of asking to calibrate, and its "Compare with its float model..." opens the float model and shows
the per-edge SQNR diff of the file against it."""

from __future__ import annotations

import onnx
import pytest
from bundled_example import EXAMPLE

from workbench.core import api
from workbench.core.errors import WorkbenchError


@pytest.fixture(scope="module")
def cnn_export(tmp_path_factory):
    """Our QDQ export (cpu-u8s8) of digits_cnn (the bundled example) and its float model."""
    float_path = EXAMPLE / "digits_cnn.onnx"
    out = tmp_path_factory.mktemp("qerrors") / "digits_cnn.qdq.onnx"
    model = api.open_model(float_path)
    api.export(api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(EXAMPLE / "digits_cnn_calib.npz"),
                            samples=16), out)
    return float_path, out


def test_quantized_file_errors_panel_offers_the_compare(qtbot, window, open_file, cnn_export):
    float_path, export = cnn_export
    win = window
    open_file(win, export)
    qtbot.waitUntil(lambda: "already quantized" in win.errors.summary.text(), timeout=300_000)
    text = win.errors.summary.text()
    assert text.startswith(f"{export.name} is already quantized: per-node errors need the float model")
    assert "calibrate" not in text.lower()
    button = win.errors.compare_button
    assert not button.isHidden() and button.isEnabled()
    assert not win.errors.color_button.isEnabled()

    with qtbot.waitSignal(win.diffReady, timeout=540_000) as sig:
        win.compare_quantized_with_float(float_path)
    tab = sig.args[0]
    assert win.doc.model_path == float_path.resolve() and win.doc.quant_summary is None
    assert win.tabs.currentWidget() is tab
    proto = onnx.load(str(export))
    qs = sorted(n.name for n in proto.graph.node if n.op_type == "QuantizeLinear")
    assert sorted(r["Quantized node"] for r in tab.rows("Q/DQ pairs")) == qs and qs
    # back on a float model: the usual empty text, no compare button
    assert win.errors.compare_button.isHidden()
    assert win.errors.summary.text().startswith("No results yet: calibrate")
    with qtbot.waitSignal(tab.canvas.layoutReady, timeout=300_000, raising=False):
        pass


def test_float_model_is_not_compared_with_a_float_model(window, open_file, dialogs):
    win = window
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    assert win.errors.compare_button.isHidden()
    with pytest.raises(WorkbenchError, match="is a float model"):
        win.compare_quantized_with_float(EXAMPLE / "digits_cnn.onnx")


def test_the_compare_job_keeps_the_edit_baseline(qtbot, window, open_file, cnn_export, save_prompts):
    """The float model opens only when the comparison ends, through the open path's check of edits made
    meanwhile; the compare job had no baseline for that check (an edit made meanwhile would have been replaced
    without the Save / Discard question)."""
    float_path, export = cnn_export
    win = window
    open_file(win, export)
    win.compare_quantized_with_float(float_path)
    assert win._open_job is not None and win._open_job.edit_baseline == win._edit_state()
    qtbot.waitUntil(lambda: win._open_job is None, timeout=300_000)
    assert save_prompts == [] and win.doc.model_path == float_path.resolve()


def test_a_quantized_file_has_no_kept_float_outlines(qtbot, window, open_file, cnn_export):
    """The plan over a file quantized already (a preset's, over its Q/DQ nodes) marked nodes the file runs as
    integer kernels "kept float" (78 on nudenet_320n's export); the outline is the recipe's, a file has none."""
    _float_path, export = cnn_export
    open_file(window, export)
    assert window.doc.quant_summary is not None
    plan = window.doc.plan
    # the plan over the file's Q/DQ has no Conv / Gemm unit at all now (their weights are DequantizeLinear
    # outputs, which the plan does not quantize again), so nothing it holds can draw an outline
    assert plan is None or not any(u.excluded for u in plan.units.values())
    assert window.canvas.float_nodes() == set()
