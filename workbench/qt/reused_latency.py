"""The export status line's words on the latency figure an export reused from the calibration.

An export right after Calibrate (F5) writes the model the calibration analysed as it is, and reuses that
calibration's latency check (its figure may itself have come from the on-disk cache). A reused slowdown is a
warning with the ratio and what to do (:func:`workbench.core.api.reused_slowdown`), not a note: the file
written measured slower than its float model.
"""

from __future__ import annotations

from workbench.core import api


def reused_latency_note(lat: dict | None) -> str:
    """The sentence(s) for an export that wrote the calibrated model as it is. ``lat``: the calibration's
    latency check as a dict of LatencyComparison fields (None or {} when it did not run)."""
    ratio, warning = api.reused_slowdown(lat)
    text = f" The file is the model calibrated and analysed, written as it is (its latency check reused{ratio})."
    return f"{text} Warning: {warning}." if warning else text
