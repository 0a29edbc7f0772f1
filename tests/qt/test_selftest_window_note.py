"""``workbench --self-test``'s window step says why it analysed no unit when the latency check kept every unit
float: on this machine the example measured 1.11x float quantized (cached from a quiet run), and the summary
read 'self-test OK ... calibrated in a child process (0 units analysed, 8.7 s)', as if the calibration had
quantized nothing by mistake. The latency measurements are replaced (latency_fakes), not timed."""

from __future__ import annotations

import re

from latency_fakes import quantized_faster, slow_quantized

from workbench.qt import selftest


def _note(qapp, window, open_file) -> str:
    open_file(window, selftest.example_dir() / "digits_cnn.onnx")
    return selftest._calibrate_in_window(qapp, window)


def test_every_unit_kept_float_is_named_as_the_latency_check(qapp, qtbot, window, open_file, monkeypatch):
    slow_quantized(monkeypatch)
    note = _note(qapp, window, open_file)
    assert "0 units analysed" not in note
    assert re.search(r"every unit kept float by the latency check: 5 units measured slower quantized", note), note


def test_units_analysed_are_counted(qapp, qtbot, window, open_file, monkeypatch):
    quantized_faster(monkeypatch)
    note = _note(qapp, window, open_file)
    assert re.search(r"\(5 units analysed, \d+\.\d s\)$", note), note
