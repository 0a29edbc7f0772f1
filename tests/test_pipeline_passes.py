"""The quantize pipeline as passes: order, skipped passes, typed issues, bias correction as a recipe
field (so a project replays it), and onnx.checker on every file written."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.errors import ExportError
from workbench.core.io.save import save_model
from workbench.core.issues import IssueCode, PlanIssue, Severity
from workbench.core.model.load import prepare_proto
from workbench.core.pipeline.quantize import QUANTIZE_PASSES
from workbench.core.planning.plan import Role
from workbench.core.recipe.recipe import Recipe
from workbench.core.recipe.spec import PlanMode


def _conv_model() -> onnx.ModelProto:
    rng = np.random.default_rng(1)
    w = (rng.normal(size=(8, 4, 3, 3)) * 0.2).astype(np.float32)
    b = (rng.normal(size=8) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4, 5, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture
def calib(tmp_path):
    rng = np.random.default_rng(2)
    path = tmp_path / "calib.npz"
    np.savez(path, x=(rng.random((24, 4, 5, 6)) * 2.0 + 1.0).astype(np.float32))
    return str(path)


def test_static_run_goes_through_every_pass_in_order(calib):
    res = api.quantize(prepare_proto(_conv_model()), api.make_recipe("cpu-u8s8", reduce_range=True), data=calib)
    ran = [name for name, _ in res.passes]
    # smoothquant (no smoothquant in the recipe), refuse-float16-only (a unit is quantized) and
    # bias-correction (off) do not apply
    assert ran == ["refuse-quantized", "plan", "non-finite-guard", "size-guard", "island-guard", "calibrate", "sentinel-guard",
                   "require-ranges", "write", "constant-input-bias"]
    assert [p.name for p in QUANTIZE_PASSES] == [
        "refuse-quantized", "smoothquant", "plan", "refuse-float16-only", "non-finite-guard", "size-guard", "island-guard",
        "latency-placement", "calibrate", "sentinel-guard", "require-ranges", "write", "bias-correction",
        "constant-input-bias", "placement-guard", "latency-check", "latency-fallback"]
    assert res.plan.mode == PlanMode.STATIC and res.plan.mode == "static"
    roles = {q.role for u in res.plan.units.values() for q in u.quant_inputs}
    assert roles == {Role.ACTIVATION, Role.WEIGHT, Role.BIAS}


def test_dynamic_run_skips_calibration(calib):
    res = api.quantize(prepare_proto(_conv_model()), api.make_recipe("dynamic-u8"))
    ran = [name for name, _ in res.passes]
    assert "calibrate" not in ran and "sentinel-guard" not in ran and res.calibration is None
    assert res.plan.mode == PlanMode.DYNAMIC


def test_bias_correction_is_a_recipe_field_that_round_trips(calib):
    model = prepare_proto(_conv_model())
    recipe = api.make_recipe("cpu-u8s8", reduce_range=True)
    by_flag = api.quantize(model, recipe, data=calib, bias_correction=True)
    with_field = recipe.model_copy(update={"bias_correction": True})
    again = Recipe.from_json(with_field.to_json())
    assert again.bias_correction is True and '"bias_correction": true' in with_field.to_json()
    by_field = api.quantize(model, again, data=calib)
    plain = api.quantize(model, recipe, data=calib)
    assert ("bias-correction", True) in by_field.passes and ("bias-correction", True) not in plain.passes
    b = {i.name: numpy_helper.to_array(i) for i in by_field.proto.graph.initializer}
    # same graph and weights (the metadata differ: the stamped recipe holds the field)
    assert by_field.proto.graph.SerializeToString() == by_flag.proto.graph.SerializeToString()
    assert by_field.proto.graph.SerializeToString() != plain.proto.graph.SerializeToString()
    stamped = {p.key: p.value for p in by_field.proto.metadata_props}["workbench.recipe"]
    assert Recipe.from_json(stamped).bias_correction is True  # a replay of the written recipe corrects too
    assert any(v.dtype == np.int32 for v in b.values())  # the corrected bias is still int32
    # the default (False) is not written, so recipes saved before the field existed read back unchanged
    assert "bias_correction" not in recipe.to_json()


def test_every_issue_is_typed(calib):
    rng = np.random.default_rng(3)
    # a float16 weight: the plan leaves the unit float and says why with a code
    w = (rng.normal(size=(8, 4, 3, 3)) * 0.2).astype(np.float16)
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["xh"], to=TensorProto.FLOAT16, name="cast"),
         helper.make_node("Conv", ["xh", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4, 5, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)], [numpy_helper.from_array(w, "w")])
    model = prepare_proto(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    plan = api.plan(model, api.make_recipe("cpu-u8s8"))
    assert plan.issues and all(isinstance(i.code, IssueCode) and isinstance(i.severity, Severity)
                               for i in plan.issues)
    assert IssueCode.FLOAT16 in {i.code for i in plan.issues}
    with pytest.raises(Exception, match="16-bit float"):
        api.quantize(model, api.make_recipe("cpu-u8s8"), data=calib)
    with pytest.raises(ValueError):
        PlanIssue("n", "loud", "not a severity", code=IssueCode.FLOAT16)


def test_save_model_runs_the_checker_on_the_file_and_leaves_nothing(tmp_path):
    # a node reading a tensor nobody produces: valid protobuf, invalid ONNX
    graph = helper.make_graph([helper.make_node("Relu", ["missing"], ["y"], name="r")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    bad = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    for external in (False, True):
        target = tmp_path / f"bad_{external}.onnx"
        with pytest.raises(ExportError, match="onnx.checker"):
            save_model(bad, target, external=external)
        assert sorted(p.name for p in tmp_path.iterdir()) == []
