"""What a unit's activation inputs are read as (planning.reads.input_reads): the dtype and the deciding unit are
the plan's own (QuantPlan.grid_of, activations, writers), so the Inspector names the unit the plan's
"tensor X uses the activation spec of Y" note names."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from workbench.core.issues import IssueCode
from workbench.core.model.load import prepare_proto
from workbench.core.planning.plan import build_plan
from workbench.core.planning.reads import InputRead, input_reads
from workbench.core.recipe.recipe import Recipe
from workbench.core.recipe.spec import NodeSettings, PartialSpec


def _vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _w(name, shape):
    return numpy_helper.from_array(np.random.default_rng(0).standard_normal(shape).astype(np.float32), name)


def _model(nodes, inputs, outputs, inits):
    m = helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, inits),
                          opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return prepare_proto(m)


def test_a_conv_reads_its_producers_grid_not_its_own_dtype():
    nodes = [helper.make_node("Conv", ["X", "W1"], ["a"], name="conv1"),
             helper.make_node("Relu", ["a"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "W2"], ["Y"], name="conv2")]
    model = _model(nodes, [_vi("X", [1, 2, 4, 4])], [_vi("Y", [1, 2, 4, 4])], [_w("W1", [2, 2, 1, 1]),
                                                                              _w("W2", [2, 2, 1, 1])])
    recipe = Recipe(preset="cpu-u8s8", overrides={"conv2": NodeSettings(activation=PartialSpec(dtype="int16"))})
    plan = build_plan(model, recipe)
    assert input_reads(plan, "conv2") == [InputRead("r", "uint8", "conv1", False)]
    assert input_reads(plan, "conv1") == [InputRead("X", "uint8", "", True)]  # a graph input: no unit writes it
    assert input_reads(plan, "relu") == []  # folded into conv1


def test_an_if_output_is_set_by_the_branch_units_that_write_it():
    # Y is the If's output, written by the MatMul of each branch: the plan gives Y the spec of one of them
    then_g = helper.make_graph([helper.make_node("MatMul", ["X", "W1"], ["t"], name="then_mm")], "then", [],
                               [_vi("t", [1, 4])])
    else_g = helper.make_graph([helper.make_node("MatMul", ["X", "W2"], ["e"], name="else_mm")], "else", [],
                               [_vi("e", [1, 4])])
    nodes = [helper.make_node("If", ["cond"], ["Y"], name="branch", then_branch=then_g, else_branch=else_g),
             helper.make_node("MatMul", ["Y", "W3"], ["Z"], name="after")]
    model = _model(nodes, [helper.make_tensor_value_info("cond", TensorProto.BOOL, []), _vi("X", [1, 4])],
                   [_vi("Z", [1, 4])], [_w("W1", [4, 4]), _w("W2", [4, 4]), _w("W3", [4, 4])])
    recipe = Recipe(preset="cpu-u8s8", overrides={"after": NodeSettings(activation=PartialSpec(dtype="uint16"))})
    plan = build_plan(model, recipe)
    assert set(plan.proxies.values()) == {"Y"}
    shared = [i for i in plan.issues if i.code == IssueCode.SPEC_SHARED]
    assert len(shared) == 1 and shared[0].node in ("then_mm", "else_mm")
    assert shared[0].message.startswith(f"tensor 'Y' uses the activation spec of '{shared[0].node}' (uint8")
    # it said no unit wrote Y (source ""): "set by another node reading it", which no node is
    assert input_reads(plan, "after") == [InputRead("Y", "uint8", shared[0].node, False)]
