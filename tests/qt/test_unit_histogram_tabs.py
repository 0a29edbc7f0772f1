"""Clicking a unit shows its output, input and weight histograms (a tab each), each with its clip range and grid
and a legend naming every colour; the counts are numpy's on the real tensors (digits_cnn, calibrated in the
window). A unit used to show only its output histogram."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from bundled_example import EXAMPLE
from latency_fakes import quantized_faster
from onnx import helper
from test_histogram_clip_notes import _calibrate

from workbench.core import api

CONV = "/f/f.3/Conv"


def _values(proto: onnx.ModelProto, tensor: str, rows: int) -> np.ndarray:
    p = onnx.ModelProto()
    p.CopyFrom(proto)
    del p.graph.output[:]
    p.graph.output.append(helper.make_empty_tensor_value_info(tensor))
    sess = ort.InferenceSession(p.SerializeToString(), providers=["CPUExecutionProvider"])
    data = np.load(EXAMPLE / "digits_cnn_calib.npz")
    name = proto.graph.input[0].name
    return np.concatenate([sess.run([tensor], {name: data[name][i:i + 1]})[0].astype(np.float64).ravel()
                           for i in range(rows)])


def _legend(plot) -> list[str]:
    return [label.text for _sample, label in plot.getPlotItem().legend.items]


def test_input_and_weight_histograms_of_the_clicked_unit(qtbot, window, open_file, monkeypatch):
    quantized_faster(monkeypatch)  # CONV quantized also where digits_cnn measures slower quantized
    win = window
    _calibrate(qtbot, win, open_file, EXAMPLE / "digits_cnn.onnx", samples=8)
    node = next(n for n in win.doc.model.graph.node if n.name == CONV)
    inp, weight = node.input[0], node.input[1]
    with qtbot.waitSignal(win.runs.histogramReady, timeout=300_000):
        win.errors.click_row([r.node for r in win.errors.rows].index(CONV))
    tabs = win.errors.hists
    assert win.errors.hist["rows"] == 8

    # the input: its values over the same 8 rows, with the clip range it is quantized to
    (hist, qp, _note, unit), = tabs.inputs
    values = _values(win.doc.model.proto, inp, 8)
    counts, edges = np.histogram(values, bins=128)
    assert unit == CONV and hist["tensor"] == inp and hist["counts"] == counts.tolist()
    np.testing.assert_allclose(hist["edges"], edges, atol=1e-9)
    assert qp is not None and api.clip_range(qp) == api.clip_range(api.QParams.from_json(win.doc.qparams[inp]))
    tabs.setCurrentIndex(1)
    caption = win.errors.hist_title.text()
    assert caption.startswith(f"{CONV} \u2190 input {inp}: {values.size} values in ") and "clip [" in caption
    assert _legend(tabs.input_plot) == ["input values (8 rows)", "clip range", "quantization grid"]

    # the weight: every value, its worst channel drawn over it with that channel's written grid
    w = onnx.numpy_helper.to_array(next(t for t in win.doc.model.graph.initializer if t.name == weight))
    figures = win.doc.weights[CONV]
    wh = win.errors.hist["weight"]
    assert wh["counts"] == np.histogram(w.astype(np.float64), bins=128)[0].tolist()
    channel = figures["worst_channel"]
    assert wh["channel"] == channel and wh["channels"] == w.shape[0]
    assert wh["channel_counts"] == np.histogram(w[channel].astype(np.float64), bins=np.asarray(wh["edges"]))[0].tolist()
    written = api.QParams.from_json(figures["qparams"])
    lo, hi = api.clip_range(api.QParams.from_json(wh["channel_qparams"]))
    scale = float(written.scale[channel])
    assert (lo, hi) == (-128 * scale, 127 * scale)
    assert lo <= float(w[channel].min()) and float(w[channel].max()) <= hi + scale / 2  # the channel fits its grid
    tabs.setCurrentIndex(2)
    caption = win.errors.hist_title.text()
    assert caption.startswith(f"{CONV} weight {weight}: {w.size} values in ")
    assert f"channel #{channel} of {w.shape[0]} (axis 0)" in caption and "int8" in caption
    assert _legend(tabs.weight_plot) == ["all channels", f"channel #{channel}", "clip range",
                                         "quantization grid"]
    tabs.setCurrentIndex(0)
    assert win.errors.hist_title.text().startswith(f"{CONV} \u2192 output ")
    assert _legend(tabs.output_plot) == ["output values (8 rows)", "clip range", "quantization grid"]
