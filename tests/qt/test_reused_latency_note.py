"""Export right after Calibrate writes the calibrated model as it is and reuses its latency check: a reused
slowdown was an info line ("its latency check reused: 2.09x float", the wall clock's ratio); now it is a
warning with the ratio the check decides on (thread CPU time) and what to do."""

from __future__ import annotations

from workbench.qt.reused_latency import reused_latency_note

PLAIN = " The file is the model calibrated and analysed, written as it is (its latency check reused"


def test_a_reused_slowdown_is_a_warning_with_what_to_do():
    lat = {"float_s": 2e-3, "quant_s": 1e-3, "runs": 5, "float_cpu_s": 1e-3, "quant_cpu_s": 2.09e-3, "cached": True}
    assert reused_latency_note(lat) == (
        f"{PLAIN}: 2.09x float). Warning: that is slower than the float model: keep more of it float (--exclude, or "
        "exclude nodes in the app's Inspector) or keep the float model for speed; --remeasure-latency "
        "(WORKBENCH_REMEASURE_LATENCY=1 in the app's environment) measures again.")


def test_a_faster_or_missing_figure_is_a_plain_note():
    assert reused_latency_note({"float_s": 1e-3, "quant_s": 0.6e-3, "runs": 5}) == f"{PLAIN}: 0.60x float)."
    assert reused_latency_note(None) == f"{PLAIN})."
