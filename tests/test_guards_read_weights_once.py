"""The plan's guards read each float weight once (minilm_l6_v2: 90 MB of weights, copied at each read)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.io import external
from workbench.core.pipeline import plan_passes
from workbench.core.planning import stats_guard


def _model(w: np.ndarray):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4])
    mask = numpy_helper.from_array(np.array([0.0, np.finfo(np.float32).min, 0.0, 0.0], np.float32), "mask")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"), helper.make_node("Add", ["h", "mask"], ["y"])]
    graph = helper.make_graph(nodes, "g", [x], [y], [numpy_helper.from_array(w, "w"), mask])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _open(tmp_path, w):
    path = tmp_path / "m.onnx"
    path.write_bytes(_model(w).SerializeToString())
    return api.open_model(path)


def test_each_float_weight_is_read_once_by_the_guards(tmp_path, monkeypatch):
    model = _open(tmp_path, np.eye(4, dtype=np.float32))
    reads: list[str] = []
    real = external.tensor_array

    def counting(t):
        reads.append(t.name)
        return real(t)

    monkeypatch.setattr(stats_guard, "tensor_array", counting)
    monkeypatch.setattr(type(model), "initializer", lambda self, name: reads.append(name) or real(
        self._initializers[name]))
    facts = plan_passes.GraphFacts(model.proto)
    the_plan = plan_passes.resolve_plan(model, api.make_recipe("cpu-u8s8"), facts)
    plan_passes.refuse_nonfinite_weights(model, the_plan, facts.extremes)
    assert stats_guard.infinite_tensors(facts.ix, facts.extremes) == set()
    assert facts.mask_values == {"mask": pytest.approx(3.4028235e38), "y": pytest.approx(3.4028235e38)}
    assert sorted(reads) == ["mask", "w"]


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_non_finite_weight_is_still_refused(tmp_path, bad):
    w = np.eye(4, dtype=np.float32)
    w[1, 2] = bad
    model = _open(tmp_path, w)
    facts = plan_passes.GraphFacts(model.proto)
    the_plan = plan_passes.resolve_plan(model, api.make_recipe("cpu-u8s8"), facts)
    with pytest.raises(api.RecipeError, match="'w' holds 1 NaN/Inf value"):
        plan_passes.refuse_nonfinite_weights(model, the_plan, facts.extremes)
