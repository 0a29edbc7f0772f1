"""The canvas legend of the sweep's colours says when the sweep is out of date, as the SQNR colours' legend does.

Found by a user pass: with digits_cnn coloured by the sweep's "Only quantized (dB)", keeping a Conv in
float made the Sensitivity dock say "Out of date: swept with an earlier recipe", while the canvas legend still
named the figure as current above the same colours."""

from __future__ import annotations

import pytest
from finished_runs import finished, finished_sweep
from latency_fakes import quantized_faster

from workbench.qt.app_window import COLOR_MODES
from workbench.qt.commands import push_edit, set_exclude

CURRENT = "Sensitivity: Only quantized (dB)"
STALE = CURRENT + ", out of date: an earlier recipe or data (F7 sweeps again)"


@pytest.fixture(autouse=True)
def _latency_scripted(monkeypatch):
    quantized_faster(monkeypatch)  # every unit quantized: the sweep measures each


def test_the_sweep_colours_legend_follows_the_sweep_out_of_date_and_back(qtbot, window, open_file, corpus):
    win = window
    finished_sweep(qtbot, win, open_file, corpus / "digits_cnn/model_opset17.onnx")
    assert win.canvas.error_label() == CURRENT and not win.sensitivity.stale
    colours = dict(win.canvas._errors)
    # a Conv the sweep does not suggest keeping float (its suggestion applied keeps the sweep current)
    conv = next(
        n.name for n in win.doc.model.graph.node if n.op_type == "Conv" and n.name not in win.doc.suggestion
    )

    push_edit(win.doc, set_exclude(win.doc.recipe, [conv], True), "Keep in float")
    assert win.sensitivity.stale and win.canvas.error_label() == STALE
    assert win.canvas._errors == colours  # the same figures, marked
    assert win.canvas.error_scale == win.sensitivity.canvas_scale()  # the legend's bands as before
    win.act_undo.trigger()
    assert not win.sensitivity.stale and win.canvas.error_label() == CURRENT

    win.color_mode.setCurrentIndex(
        COLOR_MODES.index("dtype")
    )  # another colour mode: the label follows, the mode stays
    win.calibration.samples.setValue(5)  # other rows
    assert win.canvas.error_label() == STALE and COLOR_MODES[win.color_mode.currentIndex()] == "dtype"
    win.calibration.samples.setValue(8)
    assert win.canvas.error_label() == CURRENT
    finished(qtbot, win, win.act_sensitivity)  # swept again: current
    assert win.canvas.error_label() == CURRENT
