"""``compare`` holds one batch of tapped tensors at a time and loads the float file once; its printed
per-tensor SQNR figures equal onnxruntime's (float file tapped as written, quantized file run with
graph optimizations off, float64 sums over the calibration rows)."""

from __future__ import annotations

import math
import re
import weakref
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper

import workbench.core.inspection.diff_error as diff_error
from workbench.cli import main
from workbench.core import api

LINE = re.compile(r"^\s+(-?[\d.]+|inf|-inf) dB  (\S+) \(quantized: (\S+)\)$")


def _tapped(path, names: list[str], optimize: bool) -> ort.InferenceSession:
    proto = onnx.load(str(path))
    have = {o.name for o in proto.graph.output}
    proto.graph.output.extend(helper.make_empty_tensor_value_info(n) for n in dict.fromkeys(names) if n not in have)
    so = ort.SessionOptions()
    if not optimize:
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(proto.SerializeToString(), so, providers=["CPUExecutionProvider"])


@pytest.fixture
def digits(corpus, tmp_path):
    folder = corpus / "digits_cnn"
    model, data = folder / "model_opset17.onnx", folder / "calib.npz"
    quant = tmp_path / "q.onnx"
    assert main(["quantize", str(model), "--data", str(data), "--no-auto", "--no-latency-check", "-o", str(quant)]) == 0
    return model, quant, data


def test_printed_sqnr_equals_onnxruntime(digits, capsys):
    model, quant, data = digits
    capsys.readouterr()
    assert main(["compare", str(model), str(quant), "--data", str(data), "--worst", "1000",
                 "--split-samples", "0"]) == 0
    rows = [LINE.match(ln) for ln in capsys.readouterr().out.splitlines()]
    rows = [(m.group(2), m.group(3), m.group(1)) for m in rows if m]
    assert len(rows) == 10
    f_sess = _tapped(model, [f for f, _, _ in rows], optimize=True)
    q_sess = _tapped(quant, [q for _, q, _ in rows], optimize=False)
    x = np.load(data)["input"]
    sums = {f: [0.0, 0.0] for f, _, _ in rows}
    for start in range(0, len(x), 8):  # the analysis batch
        feed = {"input": x[start:start + 8]}
        f_out = dict(zip([f for f, _, _ in rows], f_sess.run([f for f, _, _ in rows], feed), strict=True))
        q_out = dict(zip([q for _, q, _ in rows], q_sess.run([q for _, q, _ in rows], feed), strict=True))
        for f, q, _ in rows:
            a, b = np.asarray(f_out[f], np.float64), np.asarray(q_out[q], np.float64)
            sums[f][0] += float(np.sum(a * a))
            sums[f][1] += float(np.sum((a - b) ** 2))
    for f, _, printed in rows:
        assert printed == f"{10 * math.log10(sums[f][0] / sums[f][1]):.2f}", f


class _Tracked(np.ndarray):
    """An ndarray a weak reference can follow (plain ndarrays take none)."""


def test_taps_of_a_batch_released_before_the_next(digits, monkeypatch):
    model, quant, data = digits
    alive: list[weakref.ref] = []
    runs = []
    real = diff_error._run

    def tracking(sess, names, feed, which):
        runs.append(sum(r() is not None for r in alive))  # arrays of earlier runs still held by compare
        if which == "the float model":
            alive.clear()
        out = [np.asarray(a).view(_Tracked) for a in real(sess, names, feed, which)]
        alive.extend(weakref.ref(a) for a in out)
        return out

    monkeypatch.setattr(diff_error, "_run", tracking)
    diff = api.compare_models(api.open_model(str(model)), onnx.load(str(quant)), str(data))
    assert len(diff.sqnr) == 10 and len(runs) == 2 * 13  # 100 rows in batches of 8, two models each
    assert runs[0::2] == [0] * 13  # the float run of a batch: nothing of the previous batch left
    assert runs[1::2] == [10] * 13  # the quantized run: the float taps of this batch only


def test_float_file_read_once(digits, monkeypatch):
    model, quant, data = digits
    reads = []
    real = Path.read_bytes

    def counting(self, *a, **k):
        reads.append(str(self))
        return real(self, *a, **k)

    float_model = api.open_model(str(model))
    quant_proto = onnx.load(str(quant))
    monkeypatch.setattr(Path, "read_bytes", counting)
    api.compare_models(float_model, quant_proto, str(data))
    assert reads.count(str(model)) == 1


def test_printed_split_equals_noise_split_of_the_file(digits, capsys):
    """compare measures the weights vs activations split on the quantized graph it prepared (the opened file is
    dropped once that copy exists): the printed figures are those of the file as loaded."""
    model, quant, data = digits
    split = api.noise_split(api.open_model(str(model)), onnx.load(str(quant)), str(data))
    capsys.readouterr()
    assert main(["compare", str(model), str(quant), "--data", str(data)]) == 0
    line = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("weights vs activations")]
    assert len(line) == 1
    assert (f"only the weights quantized {split.weights_db:.2f} dB, only the activations {split.activations_db:.2f} dB "
            f"(both {split.all_db:.2f} dB)") in line[0]
