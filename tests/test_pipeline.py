"""End to end through the public API on the real digits_cnn model (engine issue, show 1),
project save + headless replay giving the same bytes, and analysis rows."""

from __future__ import annotations

import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from workbench.cli import main
from workbench.core import api
from workbench.core.errors import AlreadyQuantizedError


def _accuracy(model_path, eval_npz) -> float:
    sess = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    d = np.load(eval_npz)
    logits = sess.run(None, {"input": d["input"]})[0]
    return float(np.mean(np.argmax(logits, axis=1) == d["gt_label"]))


@pytest.fixture
def digits(corpus):
    return corpus / "digits_cnn"


def test_digits_cnn_cpu_u8s8_accuracy(digits, tmp_path):
    model = api.open_model(digits / "model_opset17.onnx")
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(digits / "calib.npz"))
    out = api.export(result, tmp_path / "q.onnx")
    ops = [n.op_type for n in onnx.load(str(out)).graph.node]
    assert ops.count("Conv") == 3 and ops.count("QuantizeLinear") >= 4
    acc = _accuracy(out, digits / "eval.npz")
    assert acc >= 0.99, acc


def test_project_replay_is_byte_identical(digits, tmp_path, capsys):
    out1, out2, proj = tmp_path / "a.onnx", tmp_path / "b.onnx", tmp_path / "job.wbproj"
    assert main(["quantize", str(digits / "model_opset17.onnx"), "--data", str(digits / "calib.npz"),
                 "-o", str(out1), "--save-project", str(proj)]) == 0
    assert main(["quantize", str(proj), "-o", str(out2)]) == 0
    assert out1.read_bytes() == out2.read_bytes()


def test_analysis_rows_cover_units(digits):
    model = api.open_model(digits / "model_opset17.onnx")
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(digits / "calib.npz"))
    rows = api.analyze(model, result, str(digits / "eval.npz"), samples=16)
    assert rows and all(math.isfinite(r.sqnr_db) for r in rows)
    assert [r.sqnr_db for r in rows] == sorted(r.sqnr_db for r in rows)
    assert {r.op_type for r in rows} >= {"Conv", "Gemm"}
    # a unit's SQNR must be in a plausible band for 8-bit (not the 0 dB of a broken mapping)
    assert all(10.0 < r.sqnr_db < 80.0 for r in rows), [(r.node, r.sqnr_db) for r in rows]


def test_already_quantized_is_refused(corpus):
    model = api.open_model(corpus / "ddddocr_common_old_int8" / "model.onnx")
    with pytest.raises(AlreadyQuantizedError, match="quantized"):
        api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(corpus / "ddddocr_common_old_int8" / "calib.npz"))
