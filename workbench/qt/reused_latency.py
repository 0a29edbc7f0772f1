"""The export status line's words on the latency figure an export reused from the calibration.

An export right after Calibrate (F5) writes the model the calibration analysed as it is (or as QONNX, from its
ranges), and reuses that calibration's latency check (its figure may itself have come from the on-disk cache). A reused slowdown is a
warning with the ratio and what to do (:func:`workbench.core.api.reused_slowdown`), not a note: the file
written measured slower than its float model.
"""

from __future__ import annotations

from workbench.core import api


def reused_latency_note(lat: dict | None, qonnx: bool = False) -> str:
    """The sentence(s) for an export that wrote the calibrated model as it is (``qonnx``: as QONNX, from its
    recipe and ranges). ``lat``: the calibration's latency check as a dict of LatencyComparison fields (None or
    {} when it did not run)."""
    ratio, warning = api.reused_slowdown(lat)
    how = "written as QONNX from its ranges" if qonnx else "written as it is"
    text = f" The file is the model calibrated and analysed, {how} (its latency check reused{ratio})."
    return f"{text} Warning: {warning}." if warning else text


def reused_slowdown_short(lat: dict | None) -> str:
    """The status bar's words on a reused slowdown, short enough to be read before the bar cuts the line off
    (" Warning: it measures 2.47x float, quantization does not pay at this size (the whole line in the
    tooltip)."); "" when the reused figure is no slowdown. The status line of the tutorial's int16 export read
    "... written as it is (its ..." with the warning only in its tooltip."""
    ratio, warning = api.reused_slowdown(lat)
    if not warning:
        return ""
    gist = warning.split(":")[0].split(" (")[0]  # "quantization does not pay at this size", "that is slower ..."
    return f" Warning: it measures {ratio.removeprefix(': ')}, {gist} (the whole line in the tooltip)."
