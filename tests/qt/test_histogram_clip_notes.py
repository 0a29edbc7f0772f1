"""The histogram says where its clip range and its counts come from, and why a tensor has none.

Found by a user pass: the clip range read [0, 7.499] over values drawn up to 6.345 with no word that the
range is of every calibration row and the counts of the first few; on minilm_l6_v2 after F5 (recipe
choice compute+mse) the histogram of an attention MatMul's output had no clip range and no reason."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from bundled_example import EXAMPLE
from latency_fakes import quantized_faster
from onnx import TensorProto, helper
from test_app_flow import run_job

from workbench.core import api
from workbench.core.tuning.recipe_choice import variant
from workbench.qt.clip_note import rows_note


def _calibrate(qtbot, win, open_file, path: Path, samples: int) -> None:
    open_file(win, path)
    win.calibration.choose_first.setChecked(False)  # the recipe as it is
    win.calibration.samples.setValue(samples)
    win.calibration.analysis_samples.setValue(4)
    status, res = run_job(qtbot, win, win.act_calibrate.trigger, timeout=300_000)
    assert status == "succeeded", res
    assert res["errors"], ("no unit quantized (the latency check kept them float?): use "
                           "latency_fakes.quantized_faster", res["latency_kept"])
    qtbot.waitUntil(lambda: bool(win.errors.rows), timeout=300_000)


def test_clip_range_says_it_is_of_every_calibration_row(qtbot, window, open_file, monkeypatch):
    quantized_faster(monkeypatch)  # no unit kept float by a timing on a loaded machine
    win = window
    _calibrate(qtbot, win, open_file, EXAMPLE / "digits_cnn.onnx", samples=20)
    assert win.doc.calibration["samples_seen"] == 20
    with qtbot.waitSignal(win.runs.histogramReady, timeout=300_000):
        win.focus_node("/f/f.3/Conv")
    text = win.errors.hist_title.text()
    assert "clip [" in text
    assert text.endswith("; range from 20 calibration rows; histogram of the first 8 of 20 calibration rows"), text


def _matmul_mul_model(path: Path) -> None:
    """x, y (1x4x4) -> MatMul (activation x activation) -> Mul by 0.5 -> out: under a compute-only
    recipe (MatMul quantized, Mul not) the MatMul's output has no quantized reader, as minilm's
    /bert/encoder/layer.5/attention/self/MatMul_output_0 under compute+mse."""
    half = helper.make_tensor("half", TensorProto.FLOAT, [], [0.5])
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "y"], ["mm"], name="mm_node"),
         helper.make_node("Mul", ["mm", "half"], ["out"], name="scale_node")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 4]),
              helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4, 4])], [half])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    rng = np.random.default_rng(0)
    np.savez(path.with_name("calib.npz"), x=rng.normal(size=(10, 4, 4)).astype(np.float32),
             y=rng.normal(size=(10, 4, 4)).astype(np.float32))


def test_a_float_output_of_a_quantized_matmul_says_why_it_has_no_clip_range(qtbot, window, open_file, tmp_path,
                                                                             monkeypatch):
    quantized_faster(monkeypatch)  # the activation x activation MatMul measured slower quantized here and was kept float
    win = window
    path = tmp_path / "model.onnx"
    _matmul_mul_model(path)
    open_file(win, path)
    win.doc.set_recipe(variant(api.make_recipe("cpu-u8s8"), "compute+mse"))  # the choice's pick on minilm
    _calibrate(qtbot, win, lambda *_a: None, path, samples=10)
    assert "mm" not in win.doc.qparams and "x" in win.doc.qparams  # MatMul quantized, its output float
    with qtbot.waitSignal(win.runs.histogramReady, timeout=300_000):
        win.focus_node("mm_node")
    text = win.errors.hist_title.text()
    assert "clip [" not in text
    assert text.endswith("; no clip range: mm stays float under this recipe (no quantized node reads it; "
                         "read by scale_node (Mul)), so it has no Q/DQ pair"), text


def test_before_calibration_the_histogram_says_how_many_rows_it_draws(qtbot, window, open_file):
    """The histogram draws the first 8 rows of the calibration data; with no clip range (nothing calibrated
    yet) its note did not say so, nor, with one, of how many rows."""
    win = window
    open_file(win, EXAMPLE / "digits_cnn.onnx")  # its 100-row calibration file beside it
    with qtbot.waitSignal(win.runs.histogramReady, timeout=300_000) as sig:
        win.focus_node("/f/f.3/Conv")
    assert (sig.args[0]["rows"], sig.args[0]["data_rows"]) == (8, 100)
    text = win.errors.hist_title.text()
    assert "; histogram of the first 8 of 100 calibration rows; no clip range yet: calibrate" in text, text
    with qtbot.waitSignal(win.runs.histogramReady, timeout=300_000) as sig:
        win.calibration.samples.setValue(5)  # fewer rows than a histogram draws: all of them, no more
    assert (sig.args[0]["rows"], sig.args[0]["data_rows"]) == (5, 100)
    assert "; histogram of all 5 calibration rows; no clip range yet" in win.errors.hist_title.text()


def test_rows_note_words_the_rows_drawn_of_how_many():
    assert rows_note({"samples_seen": 64}, 8, 64) == ("range from 64 calibration rows; histogram of the first 8 "
                                                      "of 64 calibration rows")
    assert rows_note(None, 3, 3) == "histogram of all 3 calibration rows"
    assert rows_note(None, 1, 1) == "histogram of the 1 calibration row"
    assert rows_note({"samples_seen": 64}, 8, None) == "range from 64 calibration rows; histogram of the first 8 rows"
    assert rows_note({"samples_seen": 64}, None, 64) == ""
