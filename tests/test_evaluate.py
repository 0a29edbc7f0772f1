"""evaluate(): float vs perturbed copy of a tiny model; SQNR against closed-form values."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core.analysis.evaluate import evaluate
from workbench.core.errors import Cancelled, DataError, ModelError
from workbench.core.model.load import prepare_proto
from workbench.core.progress import CancelToken


def tiny_model(w: float, b: np.ndarray, *, batch: str | int = "N") -> onnx.ModelProto:
    """y = x * w (scalar), z = x + b (per feature); x float32 [batch, 4]."""
    g = helper.make_graph(
        [helper.make_node("Mul", ["x", "w"], ["y"], name="mul"),
         helper.make_node("Add", ["x", "b"], ["z"], name="add")],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [batch, 4])],
        [numpy_helper.from_array(np.array(w, np.float32), "w"),
         numpy_helper.from_array(b.astype(np.float32), "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


@pytest.fixture
def arrays():
    rng = np.random.default_rng(0)
    return {"x": rng.normal(size=(50, 4)).astype(np.float32), "gt_label": rng.integers(0, 4, size=50)}


def save_npz(path, **arrays):
    np.savez(path, **arrays)
    return path


@pytest.fixture
def data(tmp_path, arrays):
    return save_npz(tmp_path / "eval.npz", **arrays)


B = np.array([0.5, -1.0, 2.0, 0.0])


def test_sqnr_of_a_scaled_output_is_minus_20_log10_eps(data, arrays):
    eps, d = 0.01, np.array([0.0, 0.1, 0.0, -0.2])
    float_m, quant_m = tiny_model(1.5, B), tiny_model(1.5 * (1 + eps), B + d)
    rep = evaluate(float_m, quant_m, data, batch_size=7)
    assert rep.samples == 50
    y, z = rep.output("y"), rep.output("z")
    # y_q = (1+eps) y  ->  SQNR = 10 log10(sum y^2 / sum (eps y)^2) = -20 log10(eps) = 40 dB
    assert y.sqnr_db == pytest.approx(-20 * math.log10(eps), abs=1e-3)
    assert y.cosine == pytest.approx(1.0, abs=1e-9)
    x = arrays["x"].astype(np.float64)
    assert y.max_abs_error == pytest.approx(np.abs(x * 1.5 * eps).max(), rel=1e-4)
    # z_q = z + d  ->  SQNR = 10 log10(sum z^2 / (N sum d^2))
    zf = x + B
    expected = 10 * math.log10((zf ** 2).sum() / (50 * (d ** 2).sum()))
    assert z.sqnr_db == pytest.approx(expected, abs=1e-4)
    assert z.max_abs_error == pytest.approx(0.2, rel=1e-5)
    assert z.mse == pytest.approx((d ** 2).mean(), rel=1e-4)
    zq = zf + d
    assert z.cosine == pytest.approx((zf * zq).sum() / np.sqrt((zf ** 2).sum() * (zq ** 2).sum()), rel=1e-6)


def test_identical_models_and_all_model_forms(tmp_path, data):
    m = tiny_model(2.0, B)
    path = tmp_path / "m.onnx"
    onnx.save(m, path)
    rep = evaluate(prepare_proto(m), str(path), str(data), samples=20)
    assert rep.samples == 20
    for o in rep.outputs:
        assert o.sqnr_db == math.inf and o.max_abs_error == 0.0 and o.cosine == pytest.approx(1.0)
    assert rep.to_json()["outputs"][0]["sqnr_db"] == "inf"


def test_stacked_layout_runs_one_row_per_feed(tmp_path, arrays):
    stacked = save_npz(tmp_path / "s.npz", x=arrays["x"][:, None, :])  # [N, 1, 4], input fixed to [1, 4]
    calls = []
    rep = evaluate(tiny_model(1.0, B, batch=1), tiny_model(1.1, B, batch=1), stacked,
                   progress=lambda d, t, m: calls.append((d, t)))
    assert rep.samples == 50 and len(calls) == 50 and calls[-1] == (50, 50)
    assert rep.output("y").sqnr_db == pytest.approx(-20 * math.log10(0.1), abs=1e-3)


def test_stacked_layout_with_a_scalar_input(tmp_path):
    # y = x * s with s a scalar graph input (like silero's sr): rows of s are 0-d feeds
    g = helper.make_graph([helper.make_node("Mul", ["x", "s"], ["y"], name="mul")], "scalar",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3]),
                           helper.make_tensor_value_info("s", TensorProto.FLOAT, [])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    q = onnx.ModelProto()
    q.CopyFrom(m)
    q.graph.node[0].op_type = "Add"  # y = x + s instead
    x = np.arange(12, dtype=np.float32).reshape(4, 1, 3)
    s = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    rep = evaluate(m, q, save_npz(tmp_path / "s.npz", x=x, s=s))
    f = x[:, 0, :] * s[:, None]
    err = f - (x[:, 0, :] + s[:, None])
    assert rep.samples == 4
    assert rep.output("y").sqnr_db == pytest.approx(10 * math.log10((f ** 2).sum() / (err ** 2).sum()), abs=1e-6)


def test_task_metric_on_both_models(data, arrays):
    # argmax of y = x * w is argmax of x for w > 0 and argmin for w < 0
    rep = evaluate(tiny_model(1.0, B), tiny_model(-1.0, B), data, metric="top1")
    x, labels = arrays["x"], arrays["gt_label"]
    assert rep.float_metric == pytest.approx(np.mean(x.argmax(1) == labels))
    assert rep.quant_metric == pytest.approx(np.mean(x.argmin(1) == labels))
    assert rep.output("y").sqnr_db == pytest.approx(10 * math.log10(1 / 4))  # error = 2y
    for name in ("output_sqnr", "sqnr"):  # autotune's spelling works here too (it was 'Unknown metric')
        rep = evaluate(tiny_model(1.0, B), tiny_model(1.01, B), data, metric=name)
        assert rep.float_metric == math.inf
        assert rep.quant_metric == pytest.approx(40.0, abs=1e-3)  # error 0.01 y: -20 log10(0.01)


def test_bad_data_and_models_raise_workbench_errors(tmp_path, data, arrays):
    m = tiny_model(1.0, B)
    with pytest.raises(DataError, match="no array for input 'x'"):
        evaluate(m, m, save_npz(tmp_path / "a.npz", y=arrays["x"]))
    with pytest.raises(DataError, match="'x'"):
        evaluate(m, m, save_npz(tmp_path / "b.npz", x=np.full((3, 4), "a")))
    assert evaluate(m, m, save_npz(tmp_path / "c.npz", x=arrays["x"].astype(np.float64))).samples == 50
    with pytest.raises(DataError, match="missing.npz"):
        evaluate(m, m, tmp_path / "missing.npz")
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not onnx")
    with pytest.raises(ModelError, match="broken.onnx"):
        evaluate(m, broken, data)
    with pytest.raises(DataError, match="shape"):
        evaluate(m, m, save_npz(tmp_path / "d.npz", x=np.zeros((3, 5), np.float32)))
    # a quantized model that fails at run time: y = Reshape(x, [3, -1]) cannot take 7 x 4 values
    q = onnx.ModelProto()
    q.CopyFrom(m)
    q.graph.initializer.append(numpy_helper.from_array(np.array([3, -1], np.int64), "shape"))
    q.graph.node[0].CopyFrom(helper.make_node("Reshape", ["x", "shape"], ["y"], name="mul"))
    with pytest.raises(DataError, match=r"onnxruntime failed on the quantized model at samples 0\.\.6"):
        evaluate(m, q, data, batch_size=7)


def test_cancel_stops_between_batches(data):
    token = CancelToken()

    def progress(done, total, msg):
        if done >= 10:
            token.cancel()

    with pytest.raises(Cancelled):
        evaluate(tiny_model(1.0, B), tiny_model(1.1, B), data, batch_size=5, progress=progress, cancel=token)


def test_cli_evaluate_prints_the_task_metric_of_both_models(tmp_path, data, arrays, capsys):
    from workbench.cli import main

    f, q = tmp_path / "f.onnx", tmp_path / "q.onnx"
    onnx.save(tiny_model(1.0, B), f)
    onnx.save(tiny_model(-1.0, B), q)
    x, labels = arrays["x"], arrays["gt_label"]
    assert main(["evaluate", str(f), str(q), "--data", str(data), "--metric", "top1"]) == 0
    line = next(s for s in capsys.readouterr().out.splitlines() if s.startswith("metric top1"))
    assert line == (f"metric top1 on output y (the first output; others: z; --metric-output NAME reads another): "
                    f"float {np.mean(x.argmax(1) == labels):.4f}  "
                    f"quantized {np.mean(x.argmin(1) == labels):.4f}")
    user = tmp_path / "m.py"
    user.write_text("def metric(outputs, batch):\n    return -0.0\n")
    assert main(["evaluate", str(f), str(q), "--data", str(data), "--metric", str(user)]) == 2  # needs --allow-code
    assert "allow-code" in capsys.readouterr().err
    assert main(["evaluate", str(f), str(q), "--data", str(data), "--metric", str(user), "--allow-code"]) == 0
    assert "metric m.py: float 0.0000  quantized 0.0000" in capsys.readouterr().out  # never -0.0000; named by file


def test_missing_quantized_model_file_says_so(tmp_path, data):
    f = tmp_path / "f.onnx"
    onnx.save(tiny_model(1.0, B), f)
    with pytest.raises(ModelError, match=r"nope.onnx: no such model file \(the quantized model\)"):
        evaluate(str(f), str(tmp_path / "nope.onnx"), data)


def test_outputs_larger_than_a_chunk_give_the_whole_batch_figures(data, arrays, monkeypatch):
    """The float64 sums run in chunks of _CHUNK elements (bounded memory); with chunks of 6 elements
    (a batch of 7 rows is 28 per output) the figures equal the one-chunk run and numpy's."""
    from workbench.core.analysis import evaluate as ev

    eps, d = 0.01, np.array([0.0, 0.1, 0.0, -0.2])
    float_m, quant_m = tiny_model(1.5, B), tiny_model(1.5 * (1 + eps), B + d)
    whole = evaluate(float_m, quant_m, data, batch_size=7)
    monkeypatch.setattr(ev, "_CHUNK", 6)
    chunked = evaluate(float_m, quant_m, data, batch_size=7)
    x = arrays["x"].astype(np.float64)
    zf, zq = x + B, x + B + d
    for a, b in zip(whole.outputs, chunked.outputs, strict=True):
        assert b.sqnr_db == pytest.approx(a.sqnr_db, rel=1e-12) and b.max_abs_error == a.max_abs_error
        assert b.cosine == pytest.approx(a.cosine, rel=1e-12) and b.mse == pytest.approx(a.mse, rel=1e-12)
    assert chunked.output("z").sqnr_db == pytest.approx(
        10 * math.log10((zf ** 2).sum() / ((zf - zq) ** 2).sum()), abs=1e-4)


def test_cli_evaluate_scores_gt_label_without_being_asked(tmp_path, data, arrays, capsys):
    """report takes gt_label in the data as "score top1"; evaluate ignored it unless --metric top1 was given.
    Now both do; without gt_label evaluate stays with its per-output table (no task metric line)."""
    from workbench.cli import main

    f, q = tmp_path / "f.onnx", tmp_path / "q.onnx"
    onnx.save(tiny_model(1.0, B), f)
    onnx.save(tiny_model(-1.0, B), q)
    x, labels = arrays["x"], arrays["gt_label"]
    assert main(["evaluate", str(f), str(q), "--data", str(data)]) == 0
    captured = capsys.readouterr()
    line = next(s for s in captured.out.splitlines() if s.startswith("metric "))
    assert line == (f"metric top1 on output y (the first output; others: z; --metric-output NAME reads another): "
                    f"float {np.mean(x.argmax(1) == labels):.4f}  "
                    f"quantized {np.mean(x.argmin(1) == labels):.4f}")
    assert f"note: metric top1, from gt_label in {data} (--metric names another)" in captured.err.splitlines()
    bare = save_npz(tmp_path / "bare.npz", x=x)
    assert main(["evaluate", str(f), str(q), "--data", str(bare)]) == 0
    captured = capsys.readouterr()
    assert not any(s.startswith("metric ") for s in captured.out.splitlines()) and "gt_label" not in captured.err


def test_one_hot_gt_label_is_not_taken_as_top1_and_is_refused_when_asked(tmp_path, data, arrays, capsys):
    """A one-hot gt_label ([N, classes]) made the default top1 run both models and then fail ("gives N
    predictions but gt_label has N x classes entries"), naming a metric the user never asked for. Without
    --metric it now gets the per-output table and a note why; with --metric top1 it is refused before any run
    (report, which always scores gt_label, refuses it up front too)."""
    from workbench.cli import main

    f, q = tmp_path / "f.onnx", tmp_path / "q.onnx"
    onnx.save(tiny_model(1.0, B), f)
    onnx.save(tiny_model(-1.0, B), q)
    x, labels = arrays["x"], arrays["gt_label"]
    one_hot = save_npz(tmp_path / "one_hot.npz", x=x, gt_label=np.eye(x.shape[1], dtype=np.int64)[labels])
    assert main(["evaluate", str(f), str(q), "--data", str(one_hot)]) == 0
    captured = capsys.readouterr()
    assert not any(s.startswith("metric ") for s in captured.out.splitlines()) and "top1" not in captured.err
    assert f"note: no task metric: {one_hot}: array 'gt_label' has shape [{len(x)}, {x.shape[1]}], not one label " \
           "per row (one-hot?)" in captured.err.splitlines()
    assert main(["evaluate", str(f), str(q), "--data", str(one_hot), "--metric", "top1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"error: {one_hot}: array 'gt_label' has shape [{len(x)}, {x.shape[1]}], not one label per row (one-hot?)")
