"""The Sensitivity panel's summary says only what is true and ends each sentence: it read "5 units (5 measured
end to end, the rest by own output); ... Suggestion: keep 1 in float (/f/f.0/Conv) Click a row to select the
node." on digits_cnn, every unit measured end to end and no full stop before "Click"."""

from __future__ import annotations

import math

from workbench.core.analysis.sensitivity import UnitSensitivity
from workbench.core.api import SweepResult
from workbench.qt.sensitivity_panel import SensitivityPanel
from workbench.qt.sweep_text import measured_text

NAN = math.nan


def _row(node: str, only_quant: float, gain: float) -> UnitSensitivity:
    return UnitSensitivity(node, "Conv", only_quant, 40.0 + gain if not math.isnan(only_quant) else NAN, 30.0,
                           gain if not math.isnan(only_quant) else NAN)


def _panel(qtbot, rows, suggestion) -> SensitivityPanel:
    panel = SensitivityPanel()
    qtbot.addWidget(panel)
    panel.set_result(SweepResult(rows=rows, all_quant_db=40.0, samples=8, tasks=2 * len(rows)), suggestion)
    return panel


def test_every_unit_measured_and_a_pending_suggestion(qtbot):
    rows = [_row("/f/f.0/Conv", 35.0, 3.0)] + [_row(f"/f/f.{i}/Gemm", 50.0, 0.1) for i in range(1, 5)]
    panel = _panel(qtbot, rows, ["/f/f.0/Conv"])
    assert panel.summary.text() == ("5 units, all measured end to end; all quantized: 40.00 dB over the first 8 "
                                    "calibration rows. Suggestion: keep 1 in float (/f/f.0/Conv). Rows in bold: "
                                    "suggested to keep in float. Click a row to select the node.")
    panel.set_float({"/f/f.0/Conv"})
    assert panel.summary.text().endswith("Suggestion: keep 1 in float (/f/f.0/Conv) - applied. Rows in bold: "
                                         "suggested to keep in float; greyed: kept in float by the current recipe. "
                                         "Click a row to select the node.")


def test_some_units_by_their_own_output_only(qtbot):
    rows = [_row("a", 35.0, 1.0), _row("b", 45.0, 0.2), _row("c", NAN, NAN)]
    panel = _panel(qtbot, rows, [])
    assert panel.summary.text() == ("3 units (2 measured end to end, the other 1 by its own output only); all "
                                    "quantized: 40.00 dB over the first 8 calibration rows. Click a row to select "
                                    "the node.")


def test_measured_text():
    assert measured_text(5, 5) == "5 units, all measured end to end"
    assert measured_text(1, 1) == "1 unit, measured end to end"
    assert measured_text(36, 16) == "36 units (16 measured end to end, the other 20 by their own output only)"
    assert measured_text(4, 0) == "4 units, none measured end to end (their own output only)"
