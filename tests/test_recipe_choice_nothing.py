"""The recipe choice skips what it need not score: a model the preset leaves float, and a variant whose plan
is another's."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.tuning import recipe_choice
from workbench.core.tuning.recipe_choice import CHOICE_EXCLUDED, CHOICE_NOTHING, choose_recipe, variant

ROWS, FEAT = 40, 16


def _matmuls(tmp_path, eltwise: bool):
    """x [N, 16] -> MatMul(W1) [-> Mul 0.5] -> MatMul(W2) -> y [N, 8], and 40 calibration rows."""
    rng = np.random.default_rng(5)
    w1 = (rng.standard_normal((FEAT, FEAT)) / 4).astype(np.float32)
    w2 = (rng.standard_normal((FEAT, 8)) / 4).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["a"], name="mm1")]
    if eltwise:
        nodes.append(helper.make_node("Mul", ["a", "half"], ["b"], name="mul"))
    nodes.append(helper.make_node("MatMul", ["b" if eltwise else "a", "w2"], ["y"], name="mm2"))
    inits = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half")]
    graph = helper.make_graph(nodes, "mm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", FEAT])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])], inits)
    path = tmp_path / "mm.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    x = rng.standard_normal((ROWS, FEAT)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=x)
    return path, tmp_path / "calib.npz", x


def test_a_model_the_preset_leaves_float_is_not_calibrated_or_scored(tmp_path, monkeypatch):
    """Every node excluded: each variant would write the float model (the preset scored 200 dB, bit-exact,
    after a calibration pass and three quantizes); nothing runs and the recipe is returned as given. The reason
    names the recipe's exclusions, not the preset (``quantize --exclude '*'`` said "the preset quantizes no unit of
    this model", which would quantize all 3)."""
    path, data, _ = _matmuls(tmp_path, eltwise=True)
    model = api.open_model(path)
    ran: list[str] = []
    monkeypatch.setattr(recipe_choice, "calibrate_split", lambda *a, **k: ran.append("calibrate") or 1 / 0)
    monkeypatch.setattr(recipe_choice, "quantize", lambda *a, **k: ran.append("quantize") or 1 / 0)
    preset = api.make_recipe("cpu-u8s8")
    assert len([u for u in api.plan(model, preset).units.values() if not u.excluded]) == 3
    for recipe in (preset.with_excluded(["mm1", "mul", "mm2"]), preset.model_copy(update={"exclude": ["*"]})):
        rep = choose_recipe(model, recipe, data)
        assert rep.skipped == CHOICE_EXCLUDED and rep.recipe is recipe and rep.calibration is None
        assert rep.scores == {} and ran == []
        assert rep.summary() == f"recipe choice skipped: {CHOICE_EXCLUDED}"
        assert "preset" not in rep.summary()


def test_a_preset_whose_guards_leave_every_unit_float_says_so(tmp_path, monkeypatch):
    """Units the preset's guards keep float, not the recipe: the reason is the preset's (:data:`CHOICE_NOTHING`)."""
    path, data, _ = _matmuls(tmp_path, eltwise=True)
    recipe = api.make_recipe("cpu-u8s8")
    real = recipe_choice.make_plan

    def guarded(model, recipe, **kw):  # a guard that keeps every unit float
        plan = real(model, recipe, **kw)
        for unit in plan.units.values():
            unit.excluded = True
        return plan

    monkeypatch.setattr(recipe_choice, "make_plan", guarded)
    rep = choose_recipe(api.open_model(path), recipe, data)
    assert rep.skipped == CHOICE_NOTHING and rep.recipe is recipe and rep.calibration is None


def test_mse_is_not_scored_when_its_plan_is_the_compute_only_one(tmp_path):
    """MatMuls only: ``mse`` and ``compute+mse`` quantize the same tensors on the same grids, so write the
    same model; it is scored once, under ``compute+mse`` (which a tie prefers), with the score ``mse`` has."""
    path, data, x = _matmuls(tmp_path, eltwise=False)
    model = api.open_model(path)
    recipe = api.make_recipe("cpu-u8s8")
    rep = choose_recipe(model, recipe, data)
    assert rep.skipped is None and list(rep.scores) == ["preset", "compute+mse"]
    held = ROWS // 4
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ref = np.concatenate([sess.run(None, {"x": x[i:i + 1]})[0] for i in range(ROWS - held, ROWS)]).astype(np.float64)
    res = api.quantize(model, variant(recipe, "mse"), data=data, samples=ROWS - held)
    q = ort.InferenceSession(res.proto.SerializeToString(), providers=["CPUExecutionProvider"])
    got = np.concatenate([q.run(None, {"x": x[i:i + 1]})[0] for i in range(ROWS - held, ROWS)]).astype(np.float64)
    mse_db = float(10 * np.log10(np.sum(ref ** 2) / np.sum((ref - got) ** 2)))
    assert rep.scores["compute+mse"] == pytest.approx(mse_db, abs=1e-6)


def test_mse_is_scored_when_it_quantizes_more_than_the_compute_ops(tmp_path):
    path, data, _ = _matmuls(tmp_path, eltwise=True)
    rep = choose_recipe(api.open_model(path), api.make_recipe("cpu-u8s8"), data)
    assert list(rep.scores) == ["preset", "mse", "compute+mse"]
