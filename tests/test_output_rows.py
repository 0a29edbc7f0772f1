"""The end-to-end output SQNR over every calibration row, with its worst row.

The Errors summary measured the model outputs on the analysis rows only (the first 32 by default): on
ppocr_mobile_v2_cls it said 63.2 dB while `evaluate` gave 23.8 dB on all 64 calibration rows, because a
few rows hold most of the error and the first 32 leave them out. The calibrate job now measures the outputs
over every calibration row (it runs only the float and the fused quantized model) and gives the lowest
per-row SQNR and its row beside the pooled figure; `evaluate` and `analyze` print that worst row too.
Every figure here is checked against numpy on onnxruntime's outputs.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main
from workbench.core import api
from workbench.core.analysis import evaluate as ev
from workbench.core.analysis.evaluate import evaluate
from workbench.core.jobs import _calibration, job_calibrate
from workbench.core.progress import CancelToken

ROWS, OUTLIER, ANALYSED = 24, 20, 8


def _model(nodes, inits, out_shape) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def _float_and_clipped():
    """y = 1.5 x, and the same through an int8 Q/DQ pair of scale 0.05 (clips at 6.35: the outlier row is clipped)."""
    w = numpy_helper.from_array(np.array(1.5, np.float32), "w")
    f = _model([helper.make_node("Mul", ["x", "w"], ["y"])], [w], ["N", 4])
    q = _model([helper.make_node("Mul", ["x", "w"], ["m"]),
                helper.make_node("QuantizeLinear", ["m", "s", "z"], ["mq"]),
                helper.make_node("DequantizeLinear", ["mq", "s", "z"], ["y"])],
               [w, numpy_helper.from_array(np.array(0.05, np.float32), "s"),
                numpy_helper.from_array(np.array(0, np.int8), "z")], ["N", 4])
    return f, q


def _rows() -> np.ndarray:
    x = np.random.default_rng(3).normal(size=(ROWS, 4)).astype(np.float32)
    x[OUTLIER] *= 30.0  # one row with a large outlier
    return x


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0].astype(np.float64)


def _figures(f: np.ndarray, q: np.ndarray) -> tuple[float, np.ndarray]:
    """Pooled SQNR and each row's SQNR (dB) of ``q`` against ``f`` ([rows, ...])."""
    e = (f - q).reshape(len(f), -1)
    f = f.reshape(len(f), -1)
    return 10 * math.log10((f ** 2).sum() / (e ** 2).sum()), 10 * np.log10((f ** 2).sum(1) / (e ** 2).sum(1))


@pytest.mark.parametrize("chunk", [None, 6, 3])
def test_worst_row_over_batches_and_chunks(tmp_path, monkeypatch, chunk):
    """Batches of 5 rows; float64 steps of whole rows (chunk 6: one row of 4 elements a step) or a row in
    pieces (chunk 3): the worst row and the pooled figure equal numpy's on onnxruntime's outputs."""
    x = _rows()
    np.savez(tmp_path / "d.npz", x=x)
    f, q = _float_and_clipped()
    if chunk:
        monkeypatch.setattr(ev, "_CHUNK", chunk)
    (out,) = evaluate(f, q, tmp_path / "d.npz", batch_size=5).outputs
    pooled, per_row = _figures(_run(f, x), _run(q, x))
    assert out.sqnr_db == pytest.approx(pooled, rel=1e-9)
    assert out.worst_row == OUTLIER == int(np.argmin(per_row))
    assert out.worst_row_sqnr_db == pytest.approx(per_row[OUTLIER], rel=1e-9)
    others = np.delete(np.arange(ROWS), OUTLIER)
    assert _figures(_run(f, x[others]), _run(q, x[others]))[0] > pooled + 10  # that one row holds the error
    assert out.worst_row_text() == f"worst row {per_row[OUTLIER]:.2f} dB, row {OUTLIER}"


def test_rows_left_out_keep_their_data_index(tmp_path):
    """A row with a NaN input is left out; the worst row is still named by its index in the file."""
    x = _rows()
    x[2, 1] = np.nan
    np.savez(tmp_path / "d.npz", x=x)
    f, q = _float_and_clipped()
    rep = evaluate(f, q, tmp_path / "d.npz", batch_size=5)
    keep = [i for i in range(ROWS) if i != 2]
    _pooled, per_row = _figures(_run(f, x[keep]), _run(q, x[keep]))
    assert rep.left_out == [2] and rep.samples == ROWS - 1
    assert rep.outputs[0].worst_row == OUTLIER
    assert rep.outputs[0].worst_row_sqnr_db == pytest.approx(per_row[keep.index(OUTLIER)], rel=1e-9)


def test_an_output_without_a_row_axis_has_no_worst_row(tmp_path):
    """An output whose first axis is not the rows' (a sum over the whole batch) gives the pooled figure only."""
    x = _rows()
    np.savez(tmp_path / "d.npz", x=x)
    red = helper.make_node("ReduceSum", ["x"], ["y"], keepdims=0)
    f = _model([red], [], [])
    q = _model([helper.make_node("Mul", ["x", "k"], ["x2"]), helper.make_node("ReduceSum", ["x2"], ["y"], keepdims=0)],
               [numpy_helper.from_array(np.array(1.01, np.float32), "k")], [])
    (out,) = evaluate(f, q, tmp_path / "d.npz", batch_size=5).outputs
    assert out.worst_row is None and out.worst_row_sqnr_db is None and out.worst_row_text() == ""
    assert out.sqnr_db == pytest.approx(40.0, abs=0.01)  # -20 log10(0.01): pooled over the 5 batches' sums


def _mlp(tmp_path):
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.normal(size=s) / 4).astype(np.float32), n)
             for n, s in (("w1", (4, 16)), ("w2", (16, 4)))]
    m = _model([helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
                helper.make_node("Relu", ["h"], ["r"], name="relu"),
                helper.make_node("MatMul", ["r", "w2"], ["y"], name="mm2")], inits, ["N", 4])
    onnx.save(m, tmp_path / "m.onnx")
    x = _rows()
    np.savez(tmp_path / "c.npz", x=x)
    return m, x


def test_calibrate_job_measures_the_outputs_over_every_calibration_row(tmp_path):
    """The job's output SQNR is over all 24 calibration rows, not the 8 analysis rows, with the worst row (one
    the analysis rows leave out) and the analysis row count; checked against numpy on onnxruntime's outputs of
    the float model and the model the job measured."""
    m, x = _mlp(tmp_path)
    recipe = api.make_recipe("cpu-u8s8")
    payload = {"model_path": str(tmp_path / "m.onnx"), "recipe": recipe.to_json(),
               "data": {"kind": "npz", "path": str(tmp_path / "c.npz")}, "samples": None, "calibration": None,
               "reuse": True, "analysis_samples": ANALYSED}
    res = job_calibrate(payload, lambda *a: None, CancelToken())
    assert {e["node"] for e in res["errors"]} == {"mm1", "mm2"}
    quant = api.quantize(api.open_model(tmp_path / "m.onnx"), recipe, calibration=_calibration(res)).proto
    f, q = _run(m, x), _run(quant, x)
    pooled, per_row = _figures(f, q)
    first, _ = _figures(f[:ANALYSED], q[:ANALYSED])
    (out,) = res["outputs"]
    assert out["samples"] == ROWS and out["analysis_samples"] == ANALYSED  # was 8 rows: the analysis rows
    assert out["sqnr_db"] == pytest.approx(pooled, rel=1e-6)
    assert abs(pooled - first) > 5  # the first 8 rows alone give another figure
    worst = int(np.argmin(per_row))
    assert out["worst_row"] == worst >= ANALYSED  # a row the per-node analysis does not see
    assert out["worst_row_sqnr_db"] == pytest.approx(per_row[worst], rel=1e-6)
    # the calibration's own row limit bounds the figure too
    res16 = job_calibrate({**payload, "samples": 16}, lambda *a: None, CancelToken())
    assert res16["outputs"][0]["samples"] == 16 and res16["outputs"][0]["analysis_samples"] == ANALYSED


def test_analysis_rows_counted_without_rows_left_out(tmp_path):
    """A NaN row among the first analysis rows is left out of both figures: the count of per-node rows says so."""
    _m, x = _mlp(tmp_path)
    x[1, 0] = np.nan
    np.savez(tmp_path / "c.npz", x=x)
    payload = {"model_path": str(tmp_path / "m.onnx"), "recipe": api.make_recipe("cpu-u8s8").to_json(),
               "data": {"kind": "npz", "path": str(tmp_path / "c.npz")}, "samples": None, "calibration": None,
               "reuse": True, "analysis_samples": ANALYSED}
    (out,) = job_calibrate(payload, lambda *a: None, CancelToken())["outputs"]
    assert out["samples"] == ROWS - 1 and out["analysis_samples"] == ANALYSED - 1


def test_cli_analyze_and_evaluate_print_the_worst_row(tmp_path, capsys):
    m, x = _mlp(tmp_path)
    data = str(tmp_path / "c.npz")
    written = tmp_path / "q.onnx"
    assert main(["quantize", str(tmp_path / "m.onnx"), "--data", data, "--no-auto", "--no-latency-check",
                 "-o", str(written)]) == 0
    f, q = _run(m, x), _run(onnx.load(written), x)
    pooled, per_row = _figures(f, q)
    worst = int(np.argmin(per_row))
    capsys.readouterr()
    assert main(["evaluate", str(tmp_path / "m.onnx"), str(written), "--data", data]) == 0
    line = next(t for t in capsys.readouterr().out.splitlines() if t.startswith("y "))
    assert line.endswith(f"  (worst row {per_row[worst]:.2f} dB, row {worst})"), line
    assert f" {pooled:.2f} " in line
    assert main(["analyze", str(tmp_path / "m.onnx"), "--data", data, "--no-auto", "--no-latency-check",
                 "--eval-samples", str(ROWS)]) == 0
    assert (f"  output y: SQNR {pooled:.2f} dB (worst row {per_row[worst]:.2f} dB, row {worst}), cosine "
            in capsys.readouterr().out)
