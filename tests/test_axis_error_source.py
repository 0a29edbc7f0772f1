"""A weight axis out of range: the plan's RecipeError names the node (``node``) and says where to fix
it by where the value came from (a node override, a rule); it always said "fix the axis in the rule"
and named no node the Problems dock could select."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from workbench.core import api
from workbench.core.errors import RecipeError

CONV = "/f/f.0/Conv"


def _plan_error(model, **fields) -> RecipeError:
    with pytest.raises(RecipeError) as info:
        api.plan(model, api.make_recipe("cpu-u8s8", **fields))
    return info.value


def test_axis_error_names_the_node_and_where_the_axis_was_set(corpus: Path):
    path = corpus / "digits_cnn" / "model_opset17.onnx"
    proto = onnx.load(str(path))
    conv = next(n for n in proto.graph.node if n.name == CONV)
    rank = len(next(t for t in proto.graph.initializer if t.name == conv.input[1]).dims)
    assert rank == 4
    model = api.open_model(path)

    err = _plan_error(model, overrides={CONV: {"weight": {"axis": -8}}})
    assert err.node == CONV and "axis -8 is out of range for a 4-D weight (valid: -4 to 3)" in str(err)
    assert f"node override of '{CONV}'" in err.hint and "rule" not in err.hint

    err = _plan_error(model, rules=[{"op_type": "Conv", "weight": {"axis": 4}}])
    assert err.node == CONV and "rule op_type=Conv (Recipe panel)" in err.hint

    api.plan(model, api.make_recipe("cpu-u8s8", overrides={CONV: {"weight": {"axis": -4}}}))  # in range: planned
