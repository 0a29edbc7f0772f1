"""The histogram job draws a unit's output, activation inputs and weight (the Errors panel's three tabs), and the
weight's grid is the one the QDQ model was written with.

Checked against numpy on the real tensors: ppocrv4_rec's p2o.Conv.2 (input p2o.Add.7) and p2o.Conv.0 (whose
input is the graph input x), each tensor read from its own onnxruntime session; the weight grid against the
weight SQNR onnxruntime measured on the written model (digits_cnn, every unit with a weight).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from bundled_example import EXAMPLE
from onnx import helper

from workbench.core import api
from workbench.core.jobs import job_calibrate, job_histogram
from workbench.core.progress import CancelToken
from workbench.core.report.unit_histograms import why_missing
from workbench.core.runtime import unit_latency
from workbench.core.runtime.latency import LatencyComparison


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


ROWS = 4


def _reference(model_path: Path, data: Path, tensors: list[str]) -> dict[str, np.ndarray]:
    """The float values of ``tensors`` over the first ROWS rows, each from its own onnxruntime session with it as
    the graph output (a graph input straight from the data)."""
    proto = api.open_model(model_path).proto  # the model as opened (what the app and the job run)
    feeds = np.load(data)
    name = proto.graph.input[0].name
    rows = [{name: feeds[name][i:i + 1]} for i in range(ROWS)]
    out = {}
    for t in tensors:
        if t == name:
            out[t] = np.concatenate([r[name].astype(np.float64).ravel() for r in rows])
            continue
        p = onnx.ModelProto()
        p.CopyFrom(proto)
        del p.graph.output[:]
        p.graph.output.append(helper.make_empty_tensor_value_info(t))
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        sess = ort.InferenceSession(p.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        out[t] = np.concatenate([sess.run([t], r)[0].astype(np.float64).ravel() for r in rows])
    return out


@pytest.mark.parametrize(("conv", "inp", "weight", "output"), [
    ("p2o.Conv.2", "p2o.Add.7", "conv2d_158.w_0", "p2o.Add.11"),
    ("p2o.Conv.0", "x", "conv2d_10.w_0", "batch_norm_2.tmp_2"),
])
def test_ppocr_unit_histograms_match_numpy(corpus, conv, inp, weight, output):
    folder = corpus / "ppocrv4_rec"
    path, data = folder / "model.onnx", folder / "calib.npz"
    w = onnx.numpy_helper.to_array(next(t for t in api.open_model(path).proto.graph.initializer if t.name == weight))
    channels = w.shape[0]
    scale = (np.abs(w.reshape(channels, -1)).max(axis=1) / 127.0).astype(np.float32)
    qp = api.QParams(scale, np.zeros(channels, np.int8), "int8", 0)  # a per-channel grid along axis 0
    got = job_histogram({"model_path": str(path), "data": str(data), "tensor": output, "samples": ROWS,
                         "inputs": [inp], "weight": weight, "weight_qparams": qp.to_json(), "channel": 5},
                        lambda *a: None, CancelToken())
    ref = _reference(path, data, [output, inp])
    assert got["rows"] == ROWS and got["data_rows"] == 64
    for hist, values in ((got, ref[output]), (got["inputs"][0], ref[inp])):
        counts, edges = np.histogram(values, bins=128)
        assert hist["values"] == values.size and sum(hist["counts"]) == values.size
        assert hist["counts"] == counts.tolist()
        np.testing.assert_allclose(hist["edges"], edges, rtol=0, atol=1e-9)
    wh = got["weight"]
    counts, edges = np.histogram(w.astype(np.float64), bins=128)
    assert wh["tensor"] == weight and wh["counts"] == counts.tolist() and wh["values"] == w.size
    assert (wh["channel"], wh["channels"]) == (5, channels)
    assert wh["channel_counts"] == np.histogram(w[5].astype(np.float64), bins=np.asarray(wh["edges"]))[0].tolist()
    own = api.QParams.from_json(wh["channel_qparams"])
    assert own.scale.shape == () and float(own.scale) == pytest.approx(float(scale[5]))
    lo, hi = api.clip_range(own)
    assert lo == pytest.approx(-128 * float(scale[5])) and hi == pytest.approx(127 * float(scale[5]))


def test_an_input_without_values_says_why(corpus):
    model = api.open_model(corpus / "ppocrv4_rec" / "model.onnx")
    assert why_missing(model, "conv2d_158.w_0") == "a constant (an initializer), not an activation"
    assert "not a tensor of the main graph" in why_missing(model, "no_such_tensor")
    assert why_missing(model, "x") is None and why_missing(model, "p2o.Add.7") is None
    got = api.activation_histograms(model, ["p2o.Add.7", "conv2d_158.w_0"],
                                    str(corpus / "ppocrv4_rec" / "calib.npz"), samples=1)
    assert got["hists"]["conv2d_158.w_0"] == {"tensor": "conv2d_158.w_0",
                                              "missing": "a constant (an initializer), not an activation"}
    assert got["hists"]["p2o.Add.7"]["values"] > 0


def test_written_weight_grid_gives_the_weight_sqnr_onnxruntime_measured(monkeypatch):
    payload = {"model_path": str(EXAMPLE / "digits_cnn.onnx"), "recipe": api.make_recipe("cpu-u8s8").to_json(),
               "data": str(EXAMPLE / "digits_cnn_calib.npz"), "samples": 20, "calibration": None, "reuse": False,
               "analysis_samples": 4, "choose": False}
    # every unit probe of the latency placement pays (as measured here, the first Conv and the AveragePool do not):
    # all three Convs and the Gemm stay int8
    monkeypatch.setattr(unit_latency, "compare", lambda f, q, feed, **k: LatencyComparison(1e-3, 0.5e-3, 5))
    result = job_calibrate(payload, lambda *a: None, CancelToken())
    proto = onnx.load(str(EXAMPLE / "digits_cnn.onnx"))
    inits = {t.name: onnx.numpy_helper.to_array(t).astype(np.float64) for t in proto.graph.initializer}
    assert len(result["weights"]) == 4
    for entry in result["weights"]:
        qp = api.QParams.from_json(entry["qparams"])
        w = inits[entry["weight"]]
        assert qp.qtype == "int8" and qp.axis == 0 and qp.scale.shape == (w.shape[0],)
        shape = [-1] + [1] * (w.ndim - 1)
        s, z = qp.scale.astype(np.float64).reshape(shape), qp.zero_point.astype(np.float64).reshape(shape)
        dq = (np.clip(np.round(w / s) + z, -128, 127) - z) * s  # QuantizeLinear / DequantizeLinear, per channel
        sqnr = 10 * np.log10((w ** 2).sum() / ((w - dq) ** 2).sum())
        assert sqnr == pytest.approx(entry["sqnr_db"], abs=1e-3), entry["node"]
