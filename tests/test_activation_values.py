"""The float activations both histogram views count (workbench.core.report.activation_values): a graph input
read from the rows, an intermediate tensor as onnxruntime computes it, non-finite values left out, and whether
the data held more rows than were run."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from workbench.core import api
from workbench.core.data.loader import open_data_source
from workbench.core.report.activation_values import activation_values


def _model(tmp_path):
    """Y = Relu(X * 2) (float32 X: (1, 5)), the product named ``P``; six rows of X with NaN and +-Inf in them."""
    graph = helper.make_graph(
        [helper.make_node("Mul", ["X", "two"], ["P"]), helper.make_node("Relu", ["P"], ["Y"])], "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["n", 5])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["n", 5])],
        [helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(proto, tmp_path / "m.onnx")
    x = np.random.default_rng(0).normal(size=(6, 5)).astype(np.float32)
    x[1, 2], x[2, 0], x[4, 4] = np.nan, np.inf, -np.inf
    np.savez(tmp_path / "d.npz", X=x)
    return api.open_model(tmp_path / "m.onnx"), tmp_path / "d.npz", x


def test_values_are_the_rows_and_onnxruntime_outputs_without_non_finite_ones(tmp_path):
    model, data, x = _model(tmp_path)
    seen = []
    values, rows, more = activation_values(model, ["X", "P"], open_data_source(str(data), model), samples=4,
                                           label="Histograms", progress=lambda *a: seen.append(a))
    assert (rows, more) == (4, True)
    assert seen == [(i, 4, "Histograms") for i in range(1, 5)]
    probe = onnx.load(tmp_path / "m.onnx")
    probe.graph.output.append(onnx.ValueInfoProto(name="P"))
    sess = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    want_p = np.concatenate([sess.run(["P"], {"X": x[i:i + 1]})[0] for i in range(4)]).astype(np.float64).ravel()
    want_x = x[:4].astype(np.float64).ravel()
    assert values["X"].dtype == np.float64 and values["X"].tolist() == want_x[np.isfinite(want_x)].tolist()
    assert values["P"].tolist() == want_p[np.isfinite(want_p)].tolist()
    assert values["X"].size == 4 * 5 - 2  # the NaN of row 1 and the Inf of row 2


def test_all_rows_run_is_not_more(tmp_path):
    model, data, x = _model(tmp_path)
    values, rows, more = activation_values(model, ["Y"], open_data_source(str(data), model), samples=6,
                                           label="Histograms")
    assert (rows, more) == (6, False)
    y = np.maximum(x.astype(np.float64) * 2, 0).ravel()
    assert values["Y"].tolist() == y[np.isfinite(y)].tolist()
    _, rows, more = activation_values(model, ["Y"], open_data_source(str(data), model), samples=60, label="")
    assert (rows, more) == (6, False)
