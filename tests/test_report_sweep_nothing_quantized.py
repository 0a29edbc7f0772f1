"""The HTML report of a sweep where every unit stayed float says that nothing was quantized, not a dB figure:
digits_cnn with every node excluded read "what keeping it float gains over all quantized (137.74 dB)", the float
rounding between the float model run optimised and the written one run as written (``sweep`` itself says "no
quantization noise ... no SQNR figure", test_sweep_all_float_note)."""

from __future__ import annotations

import html
import json
import re

from workbench.cli import main
from workbench.core.report.html import sweep_nothing_quantized


def _text(page: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def test_report_of_an_all_float_sweep_names_no_db_figure(corpus, tmp_path):
    d = corpus / "digits_cnn"
    common = [str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--samples", "8", "--no-auto",
              "--exclude", "*", "--eval-samples", "4"]
    sweep = tmp_path / "sweep.json"
    assert main(["sweep", *common, "--executor", "inline", "--json", str(sweep)]) == 0
    doc = json.loads(sweep.read_text())
    assert doc["rows"] == [] and float(doc["all_quant_db"]) > 100  # float rounding only: no quantization figure
    out = tmp_path / "r.html"
    assert main(["report", *common, "--sweep-json", str(sweep), "-o", str(out)]) == 0
    text = _text(out.read_text(encoding="utf-8"))
    expected = sweep_nothing_quantized(4)
    assert expected.startswith("End to end, from a sensitivity sweep (4 samples): nothing was quantized.")
    assert expected in text
    assert "gains over all quantized" not in text and f"{float(doc['all_quant_db']):.2f}" not in text
