"""The size guard: a float tensor computed from a dynamic input size only (an anchor grid made from
``Shape(x) -> Gather -> Cast -> Range``) is not quantized with the range calibrated at one size.

Before the guard, the model below calibrated at 8x8 and run at 16x16 clipped its grid at the
8x8 range: output SQNR 8.4 dB against onnxruntime float, max 15.3 instead of 26.1 (48.7 dB with it)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from qdq_helpers import run

from workbench.core import api
from workbench.core.issues import IssueCode
from workbench.core.model.load import prepare_proto
from workbench.core.pipeline.quantize import quantize
from workbench.core.planning import shape_guard
from workbench.core.planning.plan import GraphFacts
from workbench.core.planning.shape_guard import size_derived_tensors
from workbench.core.recipe.recipe import Recipe

C = 3


def _grid_model(h, w) -> onnx.ModelProto:
    """``Y = Conv(X) + Range(0, W) * 1.5 + C / 3`` with X [1, 3, h, w]: the grid from X's width,
    the constant from its (static) channel count."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((4, C, 1, 1)).astype(np.float32), "Wc"),
             numpy_helper.from_array(np.zeros(4, np.float32), "Bc"),
             numpy_helper.from_array(np.array(3, np.int64), "i_w"),
             numpy_helper.from_array(np.array(1, np.int64), "i_c"),
             numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one"),
             numpy_helper.from_array(np.array(1.5, np.float32), "stride"),
             numpy_helper.from_array(np.array(3.0, np.float32), "three")]
    nodes = [helper.make_node("Conv", ["X", "Wc", "Bc"], ["conv"], name="conv"),
             helper.make_node("Shape", ["X"], ["shape"], name="shape"),
             helper.make_node("Gather", ["shape", "i_w"], ["w_i"], name="gather_w"),
             helper.make_node("Cast", ["w_i"], ["w_f"], name="cast_w", to=TensorProto.FLOAT),
             helper.make_node("Range", ["zero", "w_f", "one"], ["cols"], name="range"),
             helper.make_node("Mul", ["cols", "stride"], ["grid"], name="grid_mul"),
             helper.make_node("Gather", ["shape", "i_c"], ["c_i"], name="gather_c"),
             helper.make_node("Cast", ["c_i"], ["c_f"], name="cast_c", to=TensorProto.FLOAT),
             helper.make_node("Div", ["c_f", "three"], ["c_term"], name="c_div"),
             helper.make_node("Add", ["grid", "c_term"], ["grid_c"], name="grid_add"),
             helper.make_node("Add", ["conv", "grid_c"], ["Y"], name="add")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, C, h, w])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 4, h, w])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _calib(tmp_path, size=8, n=8):
    rng = np.random.default_rng(1)
    path = tmp_path / "calib.npz"
    np.savez(path, X=rng.standard_normal((n, C, size, size)).astype(np.float32))
    return str(path)


def _sqnr(ref, out):
    return 10 * np.log10((ref ** 2).sum() / ((ref - out) ** 2).sum())


def test_grid_from_a_dynamic_size_stays_float(tmp_path):
    proto = _grid_model("H", "W")
    res = api.quantize(prepare_proto(proto), Recipe(preset="cpu-u8s8"), data=_calib(tmp_path))
    issues = [i for i in res.issues if i.code == IssueCode.SIZE_DERIVED]
    assert len(issues) == 1 and issues[0].units == ("grid_mul", "grid_add", "add") and issues[0].severity == "warning"
    assert "3 units" in issues[0].message and "computed from the input's size" in issues[0].message
    assert sorted(n for n, u in res.plan.units.items() if not u.excluded) == ["conv"]
    x = np.random.default_rng(2).standard_normal((1, C, 16, 16)).astype(np.float32)
    ref, out = run(proto, {"X": x})["Y"], run(res.proto, {"X": x})["Y"]
    assert ref.max() > 22  # the grid reaches 15 * 1.5 at width 16 (10.5 at the calibrated 8)
    assert _sqnr(ref, out) > 30


def test_only_tensors_of_dynamic_dims_are_found():
    facts = GraphFacts(prepare_proto(_grid_model("H", "W")).proto)
    # c_term reads the static channel count: the same at every size
    assert size_derived_tensors(facts.ix) == ["w_f", "cols", "grid", "grid_c"]


def test_static_sizes_change_nothing(tmp_path):
    res = api.quantize(prepare_proto(_grid_model(8, 8)), Recipe(preset="cpu-u8s8"), data=_calib(tmp_path))
    assert not [i for i in res.issues if i.code == IssueCode.SIZE_DERIVED]
    assert sorted(n for n, u in res.plan.units.items() if not u.excluded) == ["add", "conv", "grid_add", "grid_mul"]
    assert size_derived_tensors(GraphFacts(prepare_proto(_grid_model(8, 8)).proto).ix) == []


def _scale_model() -> onnx.ModelProto:
    """``Y = MatMul(X, W) * Sqrt(last dim of Reshape(X, [N, 2, -1]))`` with X [N, 8] and the target built from
    Shape(X)[0:1]: shape inference leaves the -1 dim unknown under the symbolic N, so the graph alone takes
    the scale for size-derived; it is Sqrt(4) at every batch size (digits_transformer's attention scale
    Sqrt(head_dim), read from a Reshape whose target an exporter built the same way)."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), "W"),
             numpy_helper.from_array(np.array([2, -1], np.int64), "rest"),
             numpy_helper.from_array(np.array([0], np.int64), "first"),
             numpy_helper.from_array(np.array([1], np.int64), "one"),
             numpy_helper.from_array(np.array([-1], np.int64), "last"),
             numpy_helper.from_array(np.array([2 ** 62], np.int64), "end")]
    nodes = [helper.make_node("MatMul", ["X", "W"], ["mm"], name="mm"),
             helper.make_node("Shape", ["X"], ["x_shape"], name="x_shape"),
             helper.make_node("Slice", ["x_shape", "first", "one"], ["n"], name="n"),
             helper.make_node("Concat", ["n", "rest"], ["target"], name="target", axis=0),
             helper.make_node("Reshape", ["X", "target"], ["heads"], name="reshape"),
             helper.make_node("Shape", ["heads"], ["shape"], name="shape"),
             helper.make_node("Slice", ["shape", "last", "end"], ["d_i"], name="slice"),
             helper.make_node("Cast", ["d_i"], ["d_f"], name="cast", to=TensorProto.FLOAT),
             helper.make_node("Sqrt", ["d_f"], ["scale"], name="sqrt"),
             helper.make_node("Mul", ["mm", "scale"], ["Y"], name="mul")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 8])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 8])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_a_tensor_the_same_at_two_sizes_is_quantized(tmp_path):
    """The graph alone flags the scale (an unknown dim); run at batch 1 and 2 it is 2.0 both times, so the
    size probe clears it and the Mul stays quantized (it was kept float, and digits_transformer's 4 attention
    Muls with it)."""
    proto = _scale_model()
    assert "scale" in size_derived_tensors(GraphFacts(prepare_proto(proto).proto).ix)
    path = tmp_path / "calib.npz"
    np.savez(path, X=np.random.default_rng(4).standard_normal((8, 8)).astype(np.float32))
    res = api.quantize(prepare_proto(proto), Recipe(preset="cpu-u8s8"), data=str(path))
    assert [i for i in res.issues if i.code == IssueCode.SIZE_DERIVED] == []
    assert sorted(n for n, u in res.plan.units.items() if not u.excluded) == ["mm", "mul"]


def test_one_graph_walk_for_every_quantize_of_one_model(tmp_path, monkeypatch):
    """The size guard asks the model's GraphFacts for the size-derived tensors: quantizes sharing it (the recipe
    choice writes 8 models of nudenet_320n so) walk the graph once, and each guard still keeps the same units float."""
    calls = []

    def counted(ix):
        calls.append(ix)
        return size_derived_tensors(ix)

    monkeypatch.setattr(shape_guard, "size_derived_tensors", counted)
    model, data = prepare_proto(_grid_model("H", "W")), _calib(tmp_path)
    facts = GraphFacts(model.proto)
    kept = []
    for preset in ("cpu-u8s8", "s8s8", "cpu-u8s8"):
        res = quantize(model, Recipe(preset=preset), data=data, facts=facts)
        kept.append([i.units for i in res.issues if i.code == IssueCode.SIZE_DERIVED])
    assert len(calls) == 1
    assert kept == [[("grid_mul", "grid_add", "add")]] * 3
    facts.size_derived.clear()  # a copy: the memo stays whole
    assert facts.size_derived == ["w_f", "cols", "grid", "grid_c"]
