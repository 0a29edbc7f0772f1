"""The note of ``analyze`` / ``sweep`` / ``render --colour sqnr`` on the units the latency check keeps float
counts units. On this Intel Xeon ``analyze`` of digits_cnn (README walk-through) printed "4 units or islands
measured slower quantized are float here" for its 5 units (the first Conv and the AveragePool probed alone, the
other 3 in 2 islands), while the render legend beside it read "5 units kept float"."""

from __future__ import annotations

import re

from workbench.cli import main

FLOAT_S = 2e-5  # a 20 us run: 1.25x is 5 us slower, so every unit is left float at once, island by island noted


def test_analyze_counts_the_units_the_latency_check_keeps_float(corpus, tmp_path, capsys, fake_latency):
    d = corpus / "digits_cnn"
    fake_latency.quantized_at(1.25, float_s=FLOAT_S)
    assert main(["analyze", str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--samples", "8",
                 "--no-auto"]) == 0
    err = capsys.readouterr().err
    notes = [line for line in err.splitlines() if "measured slower quantized" in line]
    assert len(notes) == 1, err
    assert re.match(r"note: 5 units measured slower quantized \(.*\) are float here, as `quantize` writes them", notes[0]), notes
    assert "units or islands" not in notes[0]
