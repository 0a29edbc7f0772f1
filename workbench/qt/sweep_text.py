"""Words of the Sensitivity panel: what each column means, its numbers, and why its headline differs from
the Errors panel's.

The sweep (:func:`workbench.core.analysis.sensitivity.sensitivity_sweep`) measures the first few calibration
rows (the app sweeps 8 unless its Rows box says otherwise) and runs the QDQ graph as written; the Errors panel's output SQNR is over every
calibration row and runs onnxruntime's fused kernels, as Evaluate does. A few rows can hold most of the error:
ppocr_mobile_v2_cls (cpu-u8s8, MSE ranges) measures 69.97 dB on the first 8 rows and 23.8 dB over all 64 (row
32 alone 2.7 dB); the same 64 rows through the QDQ graph as written give 24.7 dB. So the two figures are of
the same model; they differ in the rows and, by about a dB, in the kernels.
"""

from __future__ import annotations

import math

from workbench.core.wording import count

#: figure key -> the column title's tooltip
FIGURE_TIPS = {
    "only_quant_db": "End-to-end SQNR of the model outputs with only this unit quantized (everything else float). "
                     "Low: this unit alone hurts the output.",
    "only_float_db": "End-to-end SQNR with every unit quantized but this one.",
    "local_db": "SQNR of this unit's own output with only it quantized (its inputs float).",
    "gain_db": "Only float minus all quantized: what keeping this unit float buys end to end (dB).\n"
               "Negative: keeping it float made the output worse. The ranges downstream were calibrated\n"
               "with this unit quantized and no longer fit its float output, or its noise partly cancelled\n"
               "the noise of other units; such a unit is never suggested.\n"
               "0.00: no change end to end (e.g. its Q/DQ pairs also serve its neighbours, so they stay).",
}


def number_text(value: float) -> str:
    """A figure as its cell shows it: "-" for NaN, "exact" for +inf, two decimals, never "-0.00"."""
    if math.isnan(value):
        return "-"
    if value == math.inf:
        return "exact"
    text = f"{value:.2f}"
    return "0.00" if text == "-0.00" else text


def negative_gains_note(gains: list[float]) -> str:
    """" 3 units have a negative gain if float: keeping them float made the output worse (hover the column title
    for why)." for the gains shown below 0.00; "" when none is."""
    worse = sum(1 for g in gains if math.isfinite(g) and number_text(g).startswith("-"))
    if not worse:
        return ""
    return (f" {count(worse, 'unit')} {'has' if worse == 1 else 'have'} a negative gain if float: keeping "
            f"{'it' if worse == 1 else 'them'} float made the output worse (hover the column title for why).")


def measured_text(units: int, measured: int) -> str:
    """How many of the sweep's ``units`` rows were ``measured`` end to end (the others have their own output's
    figure only): "5 units, all measured end to end", "1 unit, measured end to end", "5 units (3 measured end
    to end, the other 2 by their own output only)", "5 units, none measured end to end (their own output only)"."""
    if measured >= units:
        return f"{count(units, 'unit')}, {'all ' if units > 1 else ''}measured end to end"
    if not measured:
        return f"{count(units, 'unit')}, none measured end to end (their own output only)"
    rest = units - measured
    return (f"{count(units, 'unit')} ({measured} measured end to end, the other {rest} by "
            f"{'its' if rest == 1 else 'their'} own output only)")


#: the Sensitivity panel's summary of a sweep of a model that quantizes no node unit: its SQNR against float is
#: only the float rounding between the float model run optimised and the written one run as written (digits_cnn
#: with every unit excluded: 137.74 dB), no quantization figure
NOTHING_QUANTIZED = ("Nothing was quantized: every node unit stayed float (the recipe, its exclusions, a guard or the "
                     "latency check kept them so), so the model computes in float like the float model: no "
                     "quantization noise, no SQNR figure and no unit to sweep.")


def rows_text(samples: int, all_quant_db: float) -> str:
    """"all quantized: 69.97 dB over the first 8 calibration rows" (the rows the sweep measured)."""
    return f"all quantized: {number_text(all_quant_db)} dB over the first {count(samples, 'calibration row')}"


def errors_note(samples: int, all_quant_db: float, outputs: list[dict]) -> str:
    """Why the sweep's all-quantized figure differs from the Errors panel's output SQNR (``outputs``: the
    calibrate job's, :func:`workbench.core.jobs._output_sqnr`); "" without them, or when they agree to
    0.05 dB on the same rows."""
    if not outputs or not isinstance(outputs[0].get("samples"), int):
        return ""
    rows = outputs[0]["samples"]
    dbs = [_db(o.get("sqnr_db")) for o in outputs]
    if len(outputs) == 1:
        shown = f"{dbs[0]:.1f} dB" if math.isfinite(dbs[0]) else "no noise" if dbs[0] == math.inf else "not measured"
        errors = f"The Errors panel's output SQNR, {shown}, is"
    else:
        errors = f"The Errors panel's output SQNR of {count(len(outputs), 'output')} is"
    if rows == samples and len(outputs) == 1 and abs(dbs[0] - all_quant_db) < 0.05:
        return ""
    worst = [o for o in outputs if isinstance(o.get("worst_row"), int) and o["worst_row"] >= samples]
    left_out = (f" (its worst row, {worst[0]['worst_row']} at {_db(worst[0].get('worst_row_sqnr_db')):.1f} dB, is not "
                "among the sweep's)" if worst and math.isfinite(_db(worst[0].get('worst_row_sqnr_db'))) else "")
    return (f" {errors} over all {count(rows, 'calibration row')}{left_out}, with onnxruntime's fused kernels "
            "(the sweep runs the QDQ graph as written).")


def _db(v) -> float:
    try:
        return float(v) if v is not None else math.nan
    except (TypeError, ValueError):
        return math.nan
