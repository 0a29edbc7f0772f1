"""The sensitivity sweep colours the canvas by each unit's value, not its rank.

digits_cnn (cpu-u8s8, 16 calibration rows) swept on the first 8 rows in this process: every unit alone
quantized leaves the output at 47.4 to 56.0 dB, so nothing is worth keeping float, yet the canvas drew
/f/f.0/Conv in the palette's red (the most sensitive unit at the red end whatever its value). Now the
SQNR figures sit on the app's SQNR bands (all green here), the gain if float on 0 dB green ... 10 dB red,
and the legend and the panel's key say so. The Rows box sets how many rows the next sweep measures.
"""

from __future__ import annotations

import math

import pytest
from bundled_example import EXAMPLE

from workbench.core import api
from workbench.core.analysis.executors import InlineExecutor
from workbench.core.analysis.sensitivity import sensitivity_sweep
from workbench.qt.canvas.colors import error_color
from workbench.qt.canvas.legend import legend_entries
from workbench.qt.sweep_colours import BEST_DB, GAIN_WORST_DB, WORST_DB, colour_value

DIGITS = "digits_cnn/model_opset17.onnx"


def drawn(db: float) -> object:
    """The fill the canvas gives a colour value of ``db`` (it draws in steps of 0.25 dB)."""
    return error_color(round(db * 4) / 4)


@pytest.fixture(scope="module")
def sweep():
    model = api.open_model(EXAMPLE / "digits_cnn.onnx")
    data = str(EXAMPLE / "digits_cnn_calib.npz")
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data, samples=16)
    return sensitivity_sweep(model, result, data, samples=8, top=32, executor=InlineExecutor())


def test_harmless_units_are_green_and_the_gain_has_its_own_bands(qtbot, window, open_file, sweep):
    rows = {r.node: r for r in sweep.rows}
    assert len(rows) == 5 and min(r.only_quant_db for r in sweep.rows) > BEST_DB  # every unit harmless alone
    open_file(window, EXAMPLE / "digits_cnn.onnx")
    panel, canvas = window.sensitivity, window.canvas
    panel.set_result(sweep)
    window.color_by_sensitivity()
    assert panel.current_figure() == "only_quant_db"
    green = error_color(BEST_DB)
    for node in rows:
        assert canvas.node_color(node) == green, node  # the least bad of them was drawn red
    title, legend, notes = legend_entries(canvas)
    assert title == "Sensitivity: Only quantized (dB)"
    assert [label for label, _c in legend] == ["<= 5 dB", "15 dB", "25 dB", "35 dB", ">= 45 dB", "no value"]
    assert any("by the value" in n for n in notes)
    assert "&lt;= 5 dB" in panel.key.text() and "&gt;= 45 dB" in panel.key.text()

    # own output: /f/f.3/Conv's 39.58 dB sits between the 35 and 45 dB stops, as in the Errors colours
    panel.figure.setCurrentIndex(panel.figure.findData("local_db"))
    window.color_by_sensitivity()
    for node, r in rows.items():
        assert canvas.node_color(node) == drawn(r.local_db), node
    assert canvas.node_color("/f/f.3/Conv") != green

    # gain if float: /f/f.0/Conv buys 2.89 dB, drawn at 45 - 2.89 / 10 * 40 = 33.4 on the stops, not red
    panel.figure.setCurrentIndex(panel.figure.findData("gain_db"))
    window.color_by_sensitivity()
    gain = rows["/f/f.0/Conv"].gain_db
    assert gain == pytest.approx(2.892, abs=0.01)
    assert colour_value("gain_db", gain) == pytest.approx(
        BEST_DB - gain / GAIN_WORST_DB * (BEST_DB - WORST_DB)
    )
    for node, r in rows.items():
        assert canvas.node_color(node) == drawn(colour_value("gain_db", r.gain_db)), node
    assert canvas.node_color("/f/f.0/Conv") != error_color(WORST_DB)
    assert canvas.node_color("/f/f.7/Conv") == green  # a negative gain: keeping it float helps nothing
    _title, legend, notes = legend_entries(canvas)
    assert legend[0][0] == ">= 10.0 dB" and legend[-2][0] == "<= 0.0 dB"
    assert any("10 dB or more red" in n for n in notes)
    assert "&gt;= 10 dB" in panel.key.text()
    assert canvas.tooltip_text("/f/f.0/Conv").count(f"{gain:.1f} dB") == 1  # the real gain, not the colour's


def test_the_rows_box_sets_the_rows_the_sweep_measures(qtbot, window, open_file, corpus):
    from workbench.qt import settings

    open_file(window, corpus / DIGITS)
    panel = window.sensitivity
    assert panel.rows.value() == 8 and "first 8 calibration rows" in panel.key.text()
    panel.rows.setValue(3)
    assert settings.sweep_rows() == 3 and "first 3 calibration rows" in panel.key.text()
    with qtbot.waitSignal(window.runs.finished, timeout=540_000):
        window.act_sensitivity.trigger()
    assert window.doc.sensitivity is not None, window.status_label.text()
    assert window.doc.sensitivity.samples == 3
    assert "over the first 3 calibration rows" in panel.summary.text()
    assert all(math.isfinite(r.local_db) for r in window.doc.sensitivity.rows)


class _Canvas:
    """What legend_entries reads of a canvas coloured by a figure on its own scale, given no notes."""

    error_notes = None
    _state = None

    def __init__(self, scale):
        self.error_scale = scale

    def color_mode(self) -> str:
        return "error"

    def error_label(self) -> str:
        return "Sensitivity: Gain if float (dB)"

    def float_nodes(self) -> set[str]:
        return set()


def test_legend_without_notes_says_by_value_and_colours_each_row_by_its_value(qapp):
    """The fallback note said "colour by rank" and the rows "(most sensitive)" / "(least sensitive)", while
    the canvas draws each unit by its value: the rows now read as values (the ends as bounds), each in the
    colour the canvas gives that value, and the note says so."""
    _title, rows, notes = legend_entries(_Canvas((0.0, GAIN_WORST_DB, True)))
    assert [label for label, _c in rows] == [
        ">= 10.0 dB",
        "7.5 dB",
        "5.0 dB",
        "2.5 dB",
        "<= 0.0 dB",
        "no value",
    ]
    for (label, colour), value in zip(rows, (10.0, 7.5, 5.0, 2.5, 0.0), strict=False):
        assert colour == error_color(colour_value("gain_db", value)), label
    assert notes == ["coloured by the value: 10 dB or more red, 0 dB or less green, linear between"]
    _title, rows, notes = legend_entries(_Canvas((20.0, 60.0, False)))  # higher is better
    assert [label for label, _c in rows][:5] == ["<= 20.0 dB", "30.0 dB", "40.0 dB", "50.0 dB", ">= 60.0 dB"]
    assert rows[0][1] == error_color(WORST_DB) and rows[4][1] == error_color(BEST_DB)
    assert notes == ["coloured by the value: 20 dB or less red, 60 dB or more green, linear between"]
