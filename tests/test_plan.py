"""Planner: node units, Relu folding, aliases, weight axes, spec conflicts, issues, ambiguity."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from qdq_helpers import tiny_model

from workbench.core import api
from workbench.core.errors import RecipeError
from workbench.core.issues import IssueCode
from workbench.core.model.load import prepare_proto
from workbench.core.planning.plan import build_plan
from workbench.core.recipe.recipe import Recipe
from workbench.core.recipe.spec import NodeSettings, PartialSpec, Rule


def _plan(proto, **kw):
    return build_plan(prepare_proto(proto), Recipe(**kw))


def _model(nodes, inputs, outputs, inits, opset=13):
    g = helper.make_graph(nodes, "g", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _w(name, shape):
    return numpy_helper.from_array(np.random.default_rng(0).standard_normal(shape).astype(np.float32), name)


def test_conv_relu_is_one_unit_when_asymmetric():
    proto, _ = tiny_model("conv", opset=13)
    plan = _plan(proto, preset="cpu-u8s8")
    u = plan.units["conv"]
    assert u.nodes == ["conv", "relu"] and u.inputs == ["X"] and u.outputs == ["Y"]
    assert (u.weight, u.bias) == ("W", "B")
    assert list(plan.activations) == ["X", "Y"]
    assert [q.spec.axis for q in u.quant_inputs if q.role == "weight"] == [0]
    assert plan.issues == [] and plan.mode == "static" and plan.min_opset == 13


def test_symmetric_activations_do_not_fold_relu():
    proto, _ = tiny_model("conv", opset=13)
    plan = _plan(proto, preset="s8s8")
    assert plan.units["conv"].outputs == ["c"]
    assert plan.units["relu"].inputs == ["c"] and plan.units["relu"].outputs == ["Y"]
    assert set(plan.activations) == {"X", "c", "Y"}


def test_relu_with_two_consumers_is_not_folded():
    nodes = [helper.make_node("Conv", ["X", "W"], ["c"], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Add", ["c", "r"], ["Y"], name="add")]
    proto = _model(nodes, [_vi("X", [1, 2, 4, 4])], [_vi("Y", [1, 2, 4, 4])], [_w("W", [2, 2, 1, 1])])
    plan = _plan(proto, preset="cpu-u8s8")
    assert plan.units["conv"].nodes == ["conv"] and plan.units["conv"].outputs == ["c"]
    assert set(plan.activations) == {"X", "c", "r", "Y"}


def test_pass_through_ops_alias_their_input():
    nodes = [helper.make_node("Conv", ["X", "W"], ["c"], name="conv"),
             helper.make_node("MaxPool", ["c"], ["p"], name="pool", kernel_shape=[2, 2]),
             helper.make_node("Flatten", ["p"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "G"], ["Y"], name="gemm", transB=1)]
    proto = _model(nodes, [_vi("X", [1, 2, 4, 4])], [_vi("Y", [1, 5])], [_w("W", [2, 2, 1, 1]), _w("G", [5, 18])])
    plan = _plan(proto, preset="cpu-u8s8")
    assert plan.aliases == {"p": "c", "f": "c"}
    # the Gemm's output is a graph output no quantized unit reads: it stays float (QGemm, float output)
    assert list(plan.activations) == ["X", "c"]
    assert plan.units["gemm"].outputs == [] and plan.units["gemm"].float_outputs == ["Y"]
    assert plan.units["gemm"].inputs == ["f"]
    assert [q.spec.axis for q in plan.units["gemm"].quant_inputs if q.role == "weight"] == [0]


@pytest.mark.parametrize("op,shape,attrs,axis", [
    ("MatMul", [6, 5], {}, 1), ("MatMul", [3, 6, 5], {}, 2), ("Gemm", [6, 5], {}, 1),
    ("Gemm", [5, 6], {"transB": 1}, 0), ("ConvTranspose", [6, 5, 1, 1], {}, 1),
])
def test_weight_channel_axis(op, shape, attrs, axis):
    x_shape = [1, 6, 4, 4] if op == "ConvTranspose" else [3, 6] if len(shape) == 2 else [3, 4, 6]
    nodes = [helper.make_node(op, ["X", "W"], ["Y"], name="n", **attrs)]
    proto = _model(nodes, [_vi("X", x_shape)], [_vi("Y", None)], [_w("W", shape)])
    plan = _plan(proto, preset="cpu-u8s8")
    wq = [q for q in plan.units["n"].quant_inputs if q.role == "weight"][0]
    assert wq.spec.axis == axis


def test_w4_block_axis_is_the_reduction_axis():
    proto, _ = tiny_model("matmul", opset=13)
    plan = _plan(proto, preset="w4-block")
    assert plan.mode == "weight_only" and plan.min_opset == 21 and plan.activations == {}
    spec = plan.units["mm"].quant_inputs[0].spec
    assert (spec.axis, spec.block_size, spec.dtype) == (0, 32, "int4")


def test_dynamic_plan_has_no_activations():
    proto, _ = tiny_model("gemm", opset=13)
    plan = _plan(proto, preset="dynamic-u8")
    assert plan.mode == "dynamic" and plan.activations == {} and plan.units["gemm"].weight == "W"


def test_conflicting_specs_pick_producer_and_report():
    nodes = [helper.make_node("Conv", ["X", "W"], ["c"], name="conv"),
             helper.make_node("Conv", ["c", "W"], ["Y"], name="conv2")]
    proto = _model(nodes, [_vi("X", [1, 2, 4, 4])], [_vi("Y", [1, 2, 4, 4])], [_w("W", [2, 2, 1, 1])])
    recipe = dict(preset="cpu-u8s8", overrides={"conv2": NodeSettings(activation=PartialSpec(dtype="int8"))})
    plan = _plan(proto, **recipe)
    assert plan.activations["c"].dtype == "uint8"
    assert plan.activations["Y"].dtype == "int8"
    assert [(i.node, i.severity) for i in plan.issues] == [("conv", "info")]  # resolved: a note, not a warning
    assert plan.issues[0].message.startswith("tensor 'c' uses the activation spec of 'conv' (uint8, symmetric=False)")
    assert "asked for (int8, symmetric=False) and reads it on this grid" in plan.issues[0].message



def _fan_out_model():
    """conv -> c, read by conv2 and conv3: three requests for tensor 'c'."""
    nodes = [helper.make_node("Conv", ["X", "W"], ["c"], name="conv"),
             helper.make_node("Conv", ["c", "W"], ["Y"], name="conv2"),
             helper.make_node("Conv", ["c", "W"], ["Z"], name="conv3")]
    return _model(nodes, [_vi("X", [1, 2, 4, 4])], [_vi("Y", [1, 2, 4, 4]), _vi("Z", [1, 2, 4, 4])],
                  [_w("W", [2, 2, 1, 1])])


def test_equal_specs_of_several_readers_are_not_a_conflict():
    """An override restating the preset's settings makes conv3's spec another object with the same
    settings: no conflict (specs are compared by value; readers without rules share the preset's object)."""
    recipe = dict(preset="cpu-u8s8", overrides={"conv3": NodeSettings(activation=PartialSpec(observer="minmax"))})
    plan = _plan(_fan_out_model(), **recipe)
    assert [i for i in plan.issues if i.code == IssueCode.SPEC_SHARED] == []
    assert sorted(plan.activations) == ["X", "Y", "Z", "c"]


def test_a_reader_asking_other_observer_settings_is_reported():
    """Same dtype and symmetry, another observer: still a conflict, worded as 'other observer settings'."""
    recipe = dict(preset="cpu-u8s8", overrides={"conv3": NodeSettings(activation=PartialSpec(observer="percentile"))})
    plan = _plan(_fan_out_model(), **recipe)
    shared = [i for i in plan.issues if i.code == IssueCode.SPEC_SHARED]
    assert [(i.node, i.severity) for i in shared] == [("conv", "info")]
    assert "asked for other observer settings" in shared[0].message
    assert plan.activations["c"].observer == "minmax"

def test_uint8_full_range_weights_do_not_warn_about_saturation(monkeypatch):
    """onnxruntime's u8 x u8 kernels use 16-bit products: only int8 weights saturate without VNNI."""
    import workbench.core.recipe.hardware as presets

    monkeypatch.setattr(presets, "cpu_needs_reduce_range", lambda: True)
    proto, _ = tiny_model("maxpool", opset=13)
    u8 = [Rule(op_type="Conv", weight=PartialSpec(dtype="uint8", symmetric=True, reduce_range=False))]
    assert not [i for i in _plan(proto, preset="cpu-u8s8", rules=u8).issues if "saturate" in i.message]
    s8 = [Rule(op_type="Conv", weight=PartialSpec(reduce_range=False))]
    assert [i for i in _plan(proto, preset="cpu-u8s8", rules=s8).issues if "saturate" in i.message]


def test_unsupported_combinations_are_issues_not_exceptions():
    proto, _ = tiny_model("conv", opset=13)
    rules = [Rule(op_type="Conv", activation=PartialSpec(granularity="per_block", block_size=8))]
    plan = _plan(proto, preset="cpu-u8s8", rules=rules)
    assert plan.activations == {}
    assert any("per_block activations" in i.message and i.node == "conv" for i in plan.issues)
    plan = _plan(proto, preset="cpu-u8s8", rules=[Rule(op_type="Conv", bias=PartialSpec(dtype="float8e4m3fn"))])
    assert plan.units["conv"].bias is None
    assert any("bias dtype float8e4m3fn" in i.message for i in plan.issues)


def test_excluded_nodes_stay_float_and_are_listed():
    proto, _ = tiny_model("maxpool", opset=13)
    plan = _plan(proto, preset="cpu-u8s8", exclude=["conv2"])
    assert plan.units["conv2"].excluded and plan.units["conv2"].quant_inputs == []
    assert set(plan.activations) == {"X", "c1"}
    assert plan.aliases == {"p": "c1"}


def test_ambiguous_name_in_recipe_is_rejected():
    proto, _ = tiny_model("conv", opset=13)
    model = prepare_proto(proto)
    model.ambiguous_names = {"dup": ["dup", "dup_1"]}
    with pytest.raises(RecipeError, match=r"name 'dup' matches 2 nodes \(dup, dup_1\): use the unique names"):
        build_plan(model, Recipe(exclude=["dup"]))
    with pytest.raises(RecipeError, match="'dup' matches 2 nodes"):
        build_plan(model, Recipe(overrides={"dup": NodeSettings(exclude=True)}))
    build_plan(model, Recipe(exclude=["dup_1"]))  # the unique names are fine


@pytest.mark.parametrize(("recipe", "field"), [
    ({"exclude": ["dup"]}, "exclude"),
    ({"overrides": {"dup": {"exclude": True}}}, "override"),
    ({"rules": [{"name": "dup", "activation": {"dtype": "uint16"}}]}, "rule name=dup"),
])
def test_an_ambiguous_name_is_refused_naming_the_recipe_field(recipe, field):
    proto, _ = tiny_model("conv", opset=13)
    model = prepare_proto(proto)
    model.ambiguous_names = {"dup": ["dup_0", "dup_1"]}
    with pytest.raises(RecipeError) as info:
        build_plan(model, Recipe.model_validate(recipe))
    assert info.value.message == f"recipe {field}: name 'dup' matches 2 nodes (dup_0, dup_1): use the unique names."


def test_subgraph_nodes_quantize_weights_and_report():
    then_g = helper.make_graph([helper.make_node("MatMul", ["X", "W1"], ["t"], name="then_mm")], "then", [],
                               [_vi("t", [1, 4])])
    else_g = helper.make_graph([helper.make_node("MatMul", ["X", "W2"], ["e"], name="else_mm")], "else", [],
                               [_vi("e", [1, 4])])
    nodes = [helper.make_node("If", ["cond"], ["Y"], name="branch", then_branch=then_g, else_branch=else_g)]
    proto = _model(nodes, [helper.make_tensor_value_info("cond", TensorProto.BOOL, []), _vi("X", [1, 4])],
                   [_vi("Y", [1, 4])], [_w("W1", [4, 4]), _w("W2", [4, 4])])
    plan = _plan(proto, preset="cpu-u8s8")
    assert {u.graph for u in plan.units.values()} == {"branch"}
    assert {n for n in plan.units} == {"then_mm", "else_mm"}
    assert sorted(i.node for i in plan.issues) == ["else_mm", "then_mm"]
    assert all("inside the subgraph of 'branch'" in i.message for i in plan.issues)


@pytest.mark.parametrize("no_vnni", [True, False])
def test_full_range_8_bit_weights_warn_on_cpus_without_vnni(monkeypatch, no_vnni):
    import workbench.core.recipe.hardware as presets

    monkeypatch.setattr(presets, "cpu_needs_reduce_range", lambda: no_vnni)
    proto, _ = tiny_model("maxpool", opset=13)
    full = [Rule(op_type="Conv", weight=PartialSpec(reduce_range=False))]  # s8s8 is 7-bit here by default
    plan = _plan(proto, preset="s8s8", rules=full)
    warned = [i for i in plan.issues if "saturate" in i.message]
    assert len(warned) == (1 if no_vnni else 0)
    if no_vnni:
        assert warned[0].node == "conv1" and warned[0].message.startswith("2 units use full-range")
    rules = [Rule(op_type="Conv", weight=PartialSpec(reduce_range=True))]
    assert not [i for i in _plan(proto, preset="s8s8", rules=rules).issues if "saturate" in i.message]


def test_statistics_guard_skips_variance_add_but_not_shape_scales():
    i64 = numpy_helper.from_array(np.array([-1], np.int64), "axes")
    nodes = [helper.make_node("ReduceMean", ["X"], ["mu"], name="mean", axes=[-1]),
             helper.make_node("Add", ["mu", "eps"], ["ve"], name="add_eps"),
             helper.make_node("Shape", ["X"], ["shp"], name="shape"),
             helper.make_node("Cast", ["shp"], ["shpf"], name="cast", to=TensorProto.FLOAT),
             helper.make_node("Sqrt", ["shpf"], ["s"], name="sqrt"),
             helper.make_node("Mul", ["X", "s"], ["xs"], name="scale"),
             helper.make_node("Add", ["xs", "ve"], ["Y"], name="out")]
    eps = numpy_helper.from_array(np.array(1e-5, np.float32), "eps")
    proto = _model(nodes, [_vi("X", [2, 4])], [_vi("Y", [2, 4])], [eps, i64])
    plan = _plan(proto, preset="cpu-u8s8")
    assert "add_eps" not in plan.units and "scale" in plan.units
    assert "out" not in plan.units  # any statistic input keeps an element-wise unit float
    assert sorted(i.node for i in plan.issues) == ["add_eps", "out"]


def test_additive_mask_from_huge_constant_is_warned():
    neg = numpy_helper.from_array(np.array(-3.4e38, np.float32), "neg")
    zero = numpy_helper.from_array(np.array(0.0, np.float32), "zero")
    nodes = [helper.make_node("Where", ["keep", "zero", "neg"], ["mask"], name="where"),
             helper.make_node("MatMul", ["X", "W"], ["scores"], name="mm"),
             helper.make_node("Add", ["scores", "mask"], ["Y"], name="add_mask")]
    inputs = [_vi("X", [2, 4]), helper.make_tensor_value_info("keep", TensorProto.BOOL, [2, 4])]
    proto = _model(nodes, inputs, [_vi("Y", [2, 4])], [neg, zero, _w("W", [4, 4])])
    plan = _plan(proto, preset="cpu-u8s8")
    assert [(i.node, i.severity) for i in plan.issues] == [("add_mask", "warning")]
    assert "'mask' carries a huge constant" in plan.issues[0].message
    assert not _plan(proto, preset="cpu-u8s8", exclude=["add_mask"]).issues


def test_dynamic_per_channel_full_range_weights_warn_without_vnni(monkeypatch):
    import workbench.core.recipe.hardware as presets

    monkeypatch.setattr(presets, "cpu_needs_reduce_range", lambda: True)
    proto, _ = tiny_model("matmul", opset=13)
    assert not [i for i in _plan(proto, preset="dynamic-u8").issues if "saturate" in i.message]
    rules = [Rule(op_type="MatMul", weight=PartialSpec(granularity="per_channel"))]
    assert [i.node for i in _plan(proto, preset="dynamic-u8", rules=rules).issues if "saturate" in i.message] == ["mm"]


@pytest.mark.parametrize("field,value", [("dtype", "uint61"), ("observer", "minmaxx")])
def test_rule_settings_are_checked_even_when_the_glob_matches_nothing(field, value):
    import json

    from workbench.core.errors import RecipeError
    from workbench.core.recipe.recipe import Recipe

    text = json.dumps({"preset": "cpu-u8s8", "rules": [{"name": "no_such_node*", "activation": {field: value}}]})
    with pytest.raises(RecipeError, match=f"rules.0.activation.{field}.*{value}"):
        Recipe.from_json(text)


def test_recipe_entries_that_match_nothing_are_warned_by_name():
    """A typo in a rule, an override or op_types used to change nothing, silently."""
    from workbench.core.issues import IssueCode

    proto, _ = tiny_model("maxpool", opset=13)
    convs = [n.name for n in proto.graph.node if n.op_type == "Conv"]
    recipe = Recipe(preset="cpu-u8s8", rules=[Rule(op_type="Cnv", activation=PartialSpec(dtype="uint16")),
                                              Rule(op_type="Conv", activation=PartialSpec(dtype="uint16"))],
                    overrides={"/no/such/Conv": {"exclude": True}, convs[0]: {"exclude": True}},
                    op_types=["Conv", "Matmul"], exclude=["conv", convs[-1][:2] + "*"])
    plan = build_plan(prepare_proto(proto), recipe)
    got = [i.message for i in plan.issues if i.code == IssueCode.UNMATCHED_RECIPE_ENTRY]
    assert len(got) == 4  # the glob matching the last Conv is not warned
    assert "rules[0] (rule op_type=Cnv)" in got[0] and "'/no/such/Conv'" in got[1] and "'Matmul'" in got[3]
    assert got[2].startswith("exclude 'conv' matches no node name of the model, so it keeps nothing float")
    assert all(i.severity == "warning" for i in plan.issues if i.code == IssueCode.UNMATCHED_RECIPE_ENTRY)


def test_unknown_observer_args_are_refused_by_field():
    with pytest.raises(RecipeError, match="unknown observer_args 'pct'"):
        Recipe.from_json('{"rules": [{"name": "*", "activation": {"observer": "percentile", '
                         '"observer_args": {"pct": 99}}}]}', source="r.json")


def test_recipe_file_with_unknown_preset_names_the_file_and_field(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"preset": "nope"}')
    with pytest.raises(RecipeError) as info:
        api.load_recipe(path)
    assert str(info.value).startswith(f"{path}: invalid recipe at preset: unknown preset 'nope'; use one of cpu-u8s8")
    assert "Value error" not in str(info.value)


def test_exclude_warning_gives_an_example_from_the_model_itself(corpus):
    """The warning on an exclude matching nothing gave '/f/f.0/*' (a digits_cnn folder) as its example on every
    model; it names a folder of the model's own nodes, which matches them."""
    import fnmatch

    from workbench.core.planning.plan import unmatched_entries

    for folder, example in (("minilm_l6_v2", "/bert/embeddings/*"), ("digits_cnn", "/f/f.0/*")):
        path = corpus / folder / ("model.onnx" if folder == "minilm_l6_v2" else "model_opset17.onnx")
        model = api.open_model(path)
        [issue] = unmatched_entries(model.proto, Recipe(preset="cpu-u8s8", exclude=["/no/such/*"]))
        assert issue.message.endswith(f"e.g. '{example}')")
        assert any(fnmatch.fnmatchcase(n.name, example) for n in model.proto.graph.node)
