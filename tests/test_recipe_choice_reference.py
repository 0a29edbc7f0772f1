"""The recipe choice's float outputs of its held-out rows come from its calibration pass, which runs those rows
anyway: no session of its own runs the float model on them again, and the ranges stay those of a pass that
keeps nothing."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.calibration.calibrate import calibrate_split
from workbench.core.calibration.kept_outputs import KeptOutputs
from workbench.core.tuning import recipe_choice

ROWS, AT = 24, 18


def _model(tmp_path, out_shape: list, transpose: bool = False):
    """x [N, 8] -> MatMul -> Relu -> MatMul -> y [N, 4] (or, ``transpose``, y [4, N]: axis 0 not the batch)."""
    rng = np.random.default_rng(5)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["a"], name="mm1"),
        helper.make_node("Relu", ["a"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "w2"], ["z" if transpose else "y"], name="mm2"),
    ]
    if transpose:
        nodes.append(helper.make_node("Transpose", ["z"], ["y"], name="t", perm=[1, 0]))
    inits = [
        numpy_helper.from_array(rng.normal(size=(8, 16)).astype(np.float32), "w1"),
        numpy_helper.from_array(rng.normal(size=(16, 4)).astype(np.float32), "w2"),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
        inits,
    )
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    x = rng.normal(size=(ROWS, 8)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=x)
    return api.open_model(str(path)), x


def _plain(path, x: np.ndarray) -> list[np.ndarray]:
    """The float model's output on each row of ``x`` alone (onnxruntime CPU, default options)."""
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return [sess.run(["y"], {"x": x[i : i + 1]})[0] for i in range(len(x))]


def _ranges(cal) -> dict:
    return {t: (o.state()["data"] if "data" in o.state() else None) for t, o in cal.observers.items()}


def test_the_pass_keeps_the_held_rows_outputs_and_its_ranges_stay_those_of_a_pass_that_keeps_nothing(
    tmp_path,
):
    model, x = _model(tmp_path, ["N", 4])
    plan = api.plan(model, api.make_recipe("cpu-u8s8"))
    kept = KeptOutputs(["y"], AT, ROWS)
    first, full = calibrate_split(model, plan, tmp_path / "calib.npz", at=AT, kept=kept, finish_first=True)
    assert full.batch_size > 1  # the held rows ran in batches, cut here row by row
    assert kept.complete and len(kept.in_order()) == ROWS - AT
    want = _plain(tmp_path / "m.onnx", x)[AT:]
    for got, w in zip(kept.in_order(), want, strict=True):
        assert got[0].shape == w.shape == (1, 4)
        np.testing.assert_allclose(got[0], w, rtol=1e-6, atol=1e-6)
    first0, full0 = calibrate_split(model, plan, tmp_path / "calib.npz", at=AT, finish_first=True)
    assert {t: o.qparams() for t, o in full.observers.items()} == {
        t: o.qparams() for t, o in full0.observers.items()
    }
    assert [o.state() for o in first.observers.values()] == [o.state() for o in first0.observers.values()]
    assert [o.state() for o in full.observers.values()] == [o.state() for o in full0.observers.values()]


def test_an_output_whose_axis_0_is_not_the_batch_is_not_cut(tmp_path):
    model, _ = _model(tmp_path, [4, "N"], transpose=True)
    plan = api.plan(model, api.make_recipe("cpu-u8s8"))
    kept = KeptOutputs(["y"], AT, ROWS)
    _, full = calibrate_split(model, plan, tmp_path / "calib.npz", at=AT, kept=kept)
    assert full.batch_size > 1 and not kept.complete


def test_a_tensor_the_session_does_not_output_is_not_kept(tmp_path):
    model, _ = _model(tmp_path, ["N", 4])
    plan = api.plan(model, api.make_recipe("cpu-u8s8"))
    kept = KeptOutputs(["no_such_tensor"], AT, ROWS)
    calibrate_split(model, plan, tmp_path / "calib.npz", at=AT, kept=kept)
    assert not kept.complete and kept.rows == {}


@pytest.mark.parametrize("transpose", [False, True])
def test_the_choice_runs_the_float_model_again_only_when_the_pass_could_not_keep_its_outputs(
    tmp_path, monkeypatch, transpose
):
    model, x = _model(tmp_path, [4, "N"] if transpose else ["N", 4], transpose)
    runs = []
    real = recipe_choice._run
    monkeypatch.setattr(
        recipe_choice, "_run", lambda proto, *a, **k: runs.append(proto) or real(proto, *a, **k)
    )
    rep = api.choose_recipe(model, api.make_recipe("cpu-u8s8"), tmp_path / "calib.npz")
    assert rep.skipped is None and rep.held_out == 6
    assert sum(p is model.proto for p in runs) == (1 if transpose else 0)
    # each score is that of the quantized model against the float outputs of the held-out rows alone
    ref = np.concatenate(_plain(tmp_path / "m.onnx", x)[ROWS - 6 :], axis=1 if transpose else 0).astype(
        np.float64
    )
    for name, score in rep.scores.items():
        res = api.quantize(
            model,
            recipe_choice.variant(api.make_recipe("cpu-u8s8"), name),
            data=tmp_path / "calib.npz",
            samples=ROWS - 6,
        )
        sess = ort.InferenceSession(res.proto.SerializeToString(), providers=["CPUExecutionProvider"])
        got = np.concatenate(
            [sess.run(["y"], {"x": x[i : i + 1]})[0] for i in range(ROWS - 6, ROWS)],
            axis=1 if transpose else 0,
        ).astype(np.float64)
        want = 10 * np.log10(np.sum(ref**2) / np.sum((ref - got) ** 2))
        assert score == pytest.approx(want, abs=1e-4)
