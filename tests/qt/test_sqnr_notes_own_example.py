"""The SQNR and own-noise legends name the open model's own node quantized only as another unit's input, and no
example when it has none: both said "a SiLU's Sigmoid read by its Mul" on every model, digits_cnn (no SiLU)
included."""

from __future__ import annotations

import numpy as np
import onnx
from latency_fakes import quantized_faster
from onnx import TensorProto, helper, numpy_helper
from outlier_chain import outlier_chain
from test_app_stale_results import calibrated

from workbench.core import api
from workbench.qt.canvas.legend import legend_entries
from workbench.qt.error_rank import LOCAL_NOTES, SQNR_NOTES, input_only_nodes, local_notes, sqnr_notes

SCALE = "linear between the stops; bit-exact shown as 100 dB, all noise (-inf) as -100 dB (red)"


def _silu_model(tmp_path):
    """x -> conv -> SiLU (sig: Sigmoid, mul: Mul of the Conv output and sig) -> out."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Sigmoid", ["c"], ["s"], name="sig"),
             helper.make_node("Mul", ["c", "s"], ["y"], name="mul")]
    inits = [numpy_helper.from_array(rng.standard_normal((4, 1, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(np.zeros(4, np.float32), "b")]
    f = TensorProto.FLOAT
    graph = helper.make_graph(nodes, "silu", [helper.make_tensor_value_info("x", f, ["N", 1, 6, 6])],
                              [helper.make_tensor_value_info("y", f, ["N", 4, 6, 6])], inits)
    path = tmp_path / "silu.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    return path


def test_a_silu_model_names_its_sigmoid_read_by_its_mul(tmp_path):
    model = api.open_model(_silu_model(tmp_path))
    nodes = input_only_nodes(model.proto.graph, api.plan(model, api.make_recipe("cpu-u8s8")))
    assert nodes == [("sig", "Sigmoid", "mul", "Mul")]
    assert sqnr_notes(nodes) == [SCALE, "no value (grey): float nodes; 1 node quantized only as another unit's input "
                                        "(e.g. Sigmoid sig, read by Mul mul: its rounding counts in that unit's SQNR)"]
    assert local_notes(nodes)[-1] == ("no value (grey): float nodes; units whose input noise was not measured; 1 node "
                                      "quantized only as another unit's input (e.g. Sigmoid sig, read by Mul mul: its "
                                      "rounding counts in that unit's own noise)")
    assert sqnr_notes([]) == SQNR_NOTES and local_notes([]) == LOCAL_NOTES


def test_digits_cnn_legend_names_its_maxpool_not_a_silu(qtbot, window, open_file, corpus, monkeypatch):
    quantized_faster(monkeypatch)  # nothing kept float by a timing on a loaded machine
    win = window
    calibrated(qtbot, win, open_file, corpus / "digits_cnn" / "model_opset17.onnx", choose=False)
    win.color_by_sqnr()
    title, _rows, notes = legend_entries(win.canvas)
    assert title == "SQNR (dB)" and notes == [
        SCALE, "no value (grey): float nodes; 2 nodes quantized only as another unit's input (e.g. MaxPool "
               "/f/f.6/MaxPool, read by Conv /f/f.7/Conv: its rounding counts in that unit's SQNR)"]
    win.color_by_local()
    notes = legend_entries(win.canvas)[2]
    assert notes[-1].endswith("2 nodes quantized only as another unit's input (e.g. MaxPool /f/f.6/MaxPool, read by "
                              "Conv /f/f.7/Conv: its rounding counts in that unit's own noise)")
    assert not any("SiLU" in n or "Sigmoid" in n for n in notes)


def test_a_model_without_such_nodes_gets_no_example(qtbot, window, open_file, tmp_path, monkeypatch):
    """The MatMul chain: every node is a unit's, so the grey entry says float nodes and nothing more."""
    quantized_faster(monkeypatch)
    win = window
    calibrated(qtbot, win, open_file, outlier_chain(tmp_path), samples=40, choose=False)
    win.color_by_sqnr()
    assert legend_entries(win.canvas)[2] == [SCALE, "no value (grey): float nodes"]
