"""The report of a model the latency check kept all float says why nothing was calibrated. On this Intel Xeon,
``report`` of digits_cnn with ``--data calib.npz`` (README walk-through) read "calibration samples: none (no
calibration)" beside the data it was given and the recipe choice that calibrated on it: every unit was kept
float, so the model written needs no range."""

from __future__ import annotations

import html
import re

from workbench.cli import main

FLOAT_S = 2e-5  # a 20 us run: 1.25x is 5 us slower, so every unit is left float at once


def _text(page: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def test_calibration_samples_say_no_unit_is_quantized(corpus, tmp_path, fake_latency):
    d = corpus / "digits_cnn"
    fake_latency.quantized_at(1.25, float_s=FLOAT_S)
    out = tmp_path / "r.html"
    assert main(["report", str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--samples", "8",
                 "--eval", str(d / "eval.npz"), "--eval-samples", "4", "--no-auto", "-o", str(out)]) == 0
    text = _text(out.read_text(encoding="utf-8"))
    assert "quantized node units 0 kept in float 5" in text
    assert "calibration samples none: no unit is quantized, so the model written needs no range" in text
    assert "none (no calibration)" not in text
