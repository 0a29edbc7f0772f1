"""Conv -> Mul / Add by per-channel constants folded into the Conv (workbench.core.model.affine)."""

from __future__ import annotations

import collections

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from workbench.core import api
from workbench.core.model.affine import fold_conv_affines

RNG = np.random.default_rng(11)
M, C_IN = 6, 4


def _model(scale_shape=(1, M, 1, 1), shift_shape=(), *, bias=True, extra_use=False, swap=False,
           graph_output=False):
    w = RNG.normal(size=(M, C_IN, 3, 3)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "W"),
             numpy_helper.from_array(RNG.uniform(-2, 2, scale_shape).astype(np.float32), "s"),
             numpy_helper.from_array(RNG.normal(size=shift_shape).astype(np.float32), "t")]
    conv_in = ["X", "W"]
    if bias:
        inits.append(numpy_helper.from_array(RNG.normal(size=M).astype(np.float32), "B"))
        conv_in.append("B")
    nodes = [helper.make_node("Conv", conv_in, ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Mul", ["s", "c"] if swap else ["c", "s"], ["m"], name="mul"),
             helper.make_node("Add", ["m", "t"], ["a"], name="add"),
             helper.make_node("Relu", ["a"], ["Y"], name="relu")]
    outputs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, M, 8, 8])]
    if extra_use:
        nodes.append(helper.make_node("Sigmoid", ["c"], ["r"], name="sig"))
        outputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, [2, M, 8, 8]))
    if graph_output:
        outputs.append(helper.make_tensor_value_info("m", TensorProto.FLOAT, [2, M, 8, 8]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, C_IN, 8, 8])],
                              outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _copy(proto):
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    return out


def _same_outputs(a, b):
    x = RNG.normal(size=(2, C_IN, 8, 8)).astype(np.float32)
    ya, yb = ReferenceEvaluator(a).run(None, {"X": x}), ReferenceEvaluator(b).run(None, {"X": x})
    for u, v in zip(ya, yb, strict=True):
        np.testing.assert_allclose(v, u, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("scale_shape,shift_shape,bias,swap", [
    ((1, M, 1, 1), (), True, False),    # per-channel scale, scalar shift
    ((), (M, 1, 1), False, True),       # scalar scale first, per-channel shift of rank 3, no bias
    ((1,), (1, M, 1, 1), True, False),  # a one-element scale
])
def test_mul_and_add_fold_into_the_conv_and_compute_the_same(scale_shape, shift_shape, bias, swap):
    proto = _model(scale_shape, shift_shape, bias=bias, swap=swap)
    folded = _copy(proto)
    assert fold_conv_affines(folded) == ["mul", "add"]
    onnx.checker.check_model(folded)
    assert collections.Counter(n.op_type for n in folded.graph.node) == {"Conv": 1, "Relu": 1}
    conv = folded.graph.node[0]
    assert conv.name == "conv" and conv.output[0] == "a"  # the Conv takes over the Add's output name
    assert {i.name for i in folded.graph.initializer} == {"W", conv.input[2]}  # s and t are gone
    _same_outputs(proto, folded)


@pytest.mark.parametrize("kwargs", [
    {"scale_shape": (1, 1, 8, 8)},      # spatial, not per channel
    {"scale_shape": (2, M, 1, 1)},      # broadcasts over the batch
    {"scale_shape": (1, 1, M, 1, 1)},   # a rank above the Conv output's changes the shape
    {"extra_use": True},                # another node reads the Conv output
    {"graph_output": True},             # not the Mul but the Add below it stays: its input is a graph output
])
def test_not_foldable_cases_are_left_alone(kwargs):
    proto = _model(**kwargs)
    folded = _copy(proto)
    removed = fold_conv_affines(folded)
    if kwargs.get("graph_output"):
        assert removed == ["mul"] and "m" in {n.output[0] for n in folded.graph.node}
    else:
        assert removed == [] and folded == proto
    _same_outputs(proto, folded)


def test_open_model_folds_and_says_so(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(_model(), path)
    before = path.read_bytes()
    model = api.open_model(path)
    assert [n.op_type for n in model.proto.graph.node] == ["Conv", "Relu"]
    assert any(n.startswith("Folded 2 Mul/Add nodes by per-channel constants into the Conv") for n in model.notes)
    assert path.read_bytes() == before  # the user's file is never written
