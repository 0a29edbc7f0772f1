"""The histogram caption's share of values outside the clip range: a clip range that cut off a few of a
real activation's values read "0.00% of values outside" (two decimals of a percent, and a bin the clip cuts
was counted whole); it now reads "<0.01%" for a share the decimals would round away, is 0 only when no value
lies outside, and is within a bin's share of the values onnxruntime gives."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from bundled_example import EXAMPLE

from workbench.core import api
from workbench.core.api import QParams
from workbench.core.wording import share
from workbench.qt.hist_plot import draw, outside_share

TENSOR = "/f/f.0/Conv_output_0"
ROWS = 64  # 65536 values: one of them is 0.0015%


def _conv_values() -> tuple[dict, np.ndarray]:
    """The app's histogram of digits_cnn's first Conv output on ROWS calibration rows, and those values (onnxruntime)."""
    model = api.open_model(EXAMPLE / "digits_cnn.onnx")
    data = {"kind": "npz", "path": str(EXAMPLE / "digits_cnn_calib.npz")}
    hist = api.activation_histograms(model, [TENSOR], data, samples=ROWS)["hists"][TENSOR]
    feeds = np.load(EXAMPLE / "digits_cnn_calib.npz")
    name = model.proto.graph.input[0].name
    sess = api.make_session(api.add_outputs(model.proto, [TENSOR]))
    values = np.concatenate([sess.run([TENSOR], {name: feeds[name][i:i + 1]})[0].ravel() for i in range(ROWS)])
    return hist, values.astype(np.float64)


def test_a_few_values_outside_read_as_a_small_share_not_zero(qtbot):
    hist, values = _conv_values()
    assert hist["values"] == values.size and np.isclose(hist["rmax"], values.max())
    second = float(np.sort(values)[1])  # the clip range's bottom: the lowest value alone lies below it
    qp = QParams(np.array(-second / 128, np.float32), np.array(0, np.int8), "int8")
    lo, hi = api.clip_range(qp)
    exact = float(np.mean((values < lo) | (values > hi)))
    assert exact == 1 / values.size < 0.00005, (exact, values.size)
    plot = pg.PlotWidget()
    qtbot.addWidget(plot)
    text = draw(plot, hist, qp, fill=(80, 120, 200, 150), label="output values")
    assert text.endswith("; <0.01% of values outside"), text
    wide = QParams(np.array(np.abs(values).max() * 1.01 / 127, np.float32), np.array(0, np.int8), "int8")
    assert draw(plot, hist, wide, fill=(80, 120, 200, 150), label="output values").endswith(
        "; 0.00% of values outside")


def test_the_share_follows_the_values_within_a_bin():
    hist, values = _conv_values()
    counts, edges = np.asarray(hist["counts"]), np.asarray(hist["edges"])
    extremes = (hist["rmin"], hist["rmax"])
    bin_share = counts.max() / counts.sum()
    for q in (0.9, 0.99, 0.999):  # clip tops inside a bin: it was counted whole
        hi = float(np.quantile(values, q))
        exact = float(np.mean(values > hi))
        got = outside_share(counts, edges, (float(values.min()) - 1.0, hi), extremes)
        assert abs(got - exact) < bin_share, (q, got, exact)
    assert outside_share(counts, edges, (-1e9, 1e9), extremes) == 0.0
    assert outside_share(counts, edges, (-1e9, float(values.max()) * 0.999999), extremes) >= 1 / counts.sum()


def test_share_words():
    assert [share(f) for f in (0.0, 0.00001, 0.00005, 0.0123, 0.99999, 1.0)] == [
        "0.00%", "<0.01%", "0.01%", "1.23%", ">99.99%", "100.00%"]
