"""api.node_roles: the roles a recipe can quantize on a node agree with the planner and with the file."""

from __future__ import annotations

import onnx
import pytest

from workbench.core import api


def _float_inits(path) -> set[str]:
    return {t.name for t in onnx.load(str(path)).graph.initializer if t.data_type == onnx.TensorProto.FLOAT}


@pytest.mark.parametrize("name", ["digits_cnn/model_opset17.onnx", "digits_transformer/model_opset17.onnx",
                                  "digits_transformer/model_opset14.onnx"])
def test_roles_cover_what_the_planner_quantizes(corpus, name):
    model = api.open_model(corpus / name)
    recipe = api.make_recipe("cpu-u8s8")
    plan = api.plan(model, recipe)
    inits = _float_inits(corpus / name)  # read from the file, not from the prepared model
    planned = {"activation": "activation", "const": "activation", "weight": "weight", "bias": "bias"}
    for node in model.graph.node:
        roles = api.node_roles(model, recipe, node.name)
        unit = plan.units.get(node.name)
        if unit is not None and not unit.excluded:
            # every role the plan quantizes on the unit is offered
            assert {planned[q.role.value] for q in unit.quant_inputs} <= set(roles.roles), node.name
        if node.op_type in ("Conv", "Gemm", "MatMul"):
            has_weight = len(node.input) > 1 and node.input[1] in inits
            assert ("weight" in roles.roles) == has_weight, node.name
            if has_weight:
                assert unit is not None and unit.weight == node.input[1]
        else:
            assert "weight" not in roles.roles and "bias" not in roles.roles, node.name
        if not roles.roles:
            assert unit is None and roles.note, node.name


def test_weightless_ops_and_dynamic_recipes(corpus):
    model = api.open_model(corpus / "digits_cnn" / "model_opset17.onnx")
    recipe = api.make_recipe("cpu-u8s8")
    by_op = {n.op_type: n.name for n in model.graph.node}
    assert api.node_roles(model, recipe, by_op["Conv"]).roles == ("weight", "activation", "bias")
    assert api.node_roles(model, recipe, by_op["AveragePool"]).roles == ("activation",)
    relu = api.node_roles(model, recipe, by_op["Relu"])
    assert relu.roles == () and "folded" in relu.note
    flatten = api.node_roles(model, recipe, by_op["Flatten"])
    assert flatten.roles == () and "reuses the input's scale" in flatten.note
    dynamic = next(p for p, preset in api.PRESETS.items() if preset.mode == "dynamic")
    assert api.node_roles(model, api.make_recipe(dynamic), by_op["Conv"]).roles == ("weight",)
    with pytest.raises(KeyError):
        api.node_roles(model, recipe, "no such node")
