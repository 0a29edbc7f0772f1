"""evaluate on a model whose batch is fixed to 1 (a QONNX export converted back to QDQ) against its
dynamic-batch original: one sample per run instead of an onnxruntime shape error."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from bundled_example import EXAMPLE

from workbench import cli
from workbench.core import api


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


MODEL, CALIB, EVAL = (EXAMPLE / f for f in ("digits_cnn.onnx", "digits_cnn_calib.npz", "digits_cnn_eval.npz"))


def test_batch_one_export_evaluates_row_by_row(tmp_path, capsys):
    qx, qdq = tmp_path / "m.qonnx.onnx", tmp_path / "m.qdq.onnx"
    assert cli.main(["quantize", str(MODEL), "--data", str(CALIB), "--samples", "16", "--format", "qonnx",
                     "-o", str(qx)]) == 0
    assert cli.main(["convert", str(qx), str(qdq), "--to", "qdq"]) == 0
    capsys.readouterr()
    assert onnx.load(qdq).graph.input[0].type.tensor_type.shape.dim[0].dim_value == 1  # batch 1 kept
    report = api.evaluate(MODEL, qdq, EVAL, samples=40, metric="top1")
    assert report.samples == 40
    # independent: both models one row at a time in onnxruntime, top1 against gt_label
    z = np.load(EVAL)
    name = onnx.load(MODEL).graph.input[0].name
    x, y = z[name][:40], z["gt_label"][:40]
    f_sess, q_sess = ort.InferenceSession(str(MODEL)), ort.InferenceSession(str(qdq))
    f_top = [int(np.argmax(f_sess.run(None, {name: x[i:i + 1]})[0])) for i in range(40)]
    q_top = [int(np.argmax(q_sess.run(None, {name: x[i:i + 1]})[0])) for i in range(40)]
    assert report.float_metric == np.mean(np.asarray(f_top) == y)
    assert report.quant_metric == np.mean(np.asarray(q_top) == y)
