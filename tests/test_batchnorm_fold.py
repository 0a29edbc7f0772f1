"""Conv -> BatchNormalization folding in model preparation (workbench.core.model.batchnorm)."""

from __future__ import annotations

import collections

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from workbench.core.model.batchnorm import fold_batchnorms
from workbench.core.model.load import prepare_proto

RNG = np.random.default_rng(7)


def _model(*, bias=True, group=1, extra_use=False, shared_weight=False, training=False, graph_output=False):
    c_in, m = 4, 6
    w = RNG.normal(size=(m, c_in // group, 3, 3)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "W"),
             numpy_helper.from_array(RNG.uniform(0.5, 2, m).astype(np.float32), "gamma"),
             numpy_helper.from_array(RNG.normal(size=m).astype(np.float32), "beta"),
             numpy_helper.from_array(RNG.normal(size=m).astype(np.float32), "mean"),
             numpy_helper.from_array(RNG.uniform(0.1, 3, m).astype(np.float32), "var")]
    conv_in = ["X", "W"]
    if bias:
        inits.append(numpy_helper.from_array(RNG.normal(size=m).astype(np.float32), "B"))
        conv_in.append("B")
    nodes = [helper.make_node("Conv", conv_in, ["c"], name="conv", pads=[1, 1, 1, 1], group=group),
             helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["Y"], name="bn",
                              epsilon=1e-3, **({"training_mode": 1} if training else {}))]
    outputs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, m, 8, 8])]
    if extra_use:
        nodes.append(helper.make_node("Relu", ["c"], ["r"], name="relu"))
        outputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, [2, m, 8, 8]))
    if shared_weight:
        nodes.append(helper.make_node("Conv", ["X", "W"], ["c2"], name="conv2", pads=[1, 1, 1, 1], group=group))
        outputs.append(helper.make_tensor_value_info("c2", TensorProto.FLOAT, [2, m, 8, 8]))
    if graph_output:
        outputs.append(helper.make_tensor_value_info("c", TensorProto.FLOAT, [2, m, 8, 8]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, c_in, 8, 8])],
                              outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(proto, x):
    return ReferenceEvaluator(proto).run(None, {"X": x})


@pytest.mark.parametrize("bias,group", [(True, 1), (False, 1), (True, 2)])
def test_folded_model_computes_the_same(bias, group):
    proto = _model(bias=bias, group=group)
    folded = onnx.ModelProto()
    folded.CopyFrom(proto)
    assert fold_batchnorms(folded) == ["bn"]
    onnx.checker.check_model(folded)
    ops = collections.Counter(n.op_type for n in folded.graph.node)
    assert ops == {"Conv": 1}
    conv = folded.graph.node[0]
    assert conv.name == "conv" and conv.output[0] == "Y" and len(conv.input) == 3
    assert {t.name for t in folded.graph.initializer} == ({"W", "B"} if bias else {"W", "conv_bias"})
    x = RNG.normal(size=(2, 4, 8, 8)).astype(np.float32)
    want, got = _run(proto, x)[0], _run(folded, x)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("kind", ["extra_use", "shared_weight", "training", "graph_output"])
def test_pairs_that_would_change_the_function_are_kept(kind):
    proto = _model(**{kind: True})
    before = proto.SerializeToString()
    assert fold_batchnorms(proto) == []
    assert proto.SerializeToString() == before


def test_prepare_folds_and_notes_it():
    model = prepare_proto(_model())
    ops = collections.Counter(n.op_type for _, n in model.iter_nodes())
    assert ops == {"Conv": 1}
    assert any("BatchNormalization" in note and "1" in note for note in model.notes)
    assert model.node("conv").output[0] == "Y"


@pytest.mark.slow
def test_ppocr_cls_folds_35_batchnorms_and_keeps_outputs(corpus):
    import onnxruntime as ort

    from workbench.core.model.load import load_model

    path = corpus / "ppocr_mobile_v2_cls" / "model.onnx"
    model = load_model(path)
    assert not any(n.op_type == "BatchNormalization" for _, n in model.iter_nodes())
    assert any("Folded 35 BatchNormalization" in note for note in model.notes)
    x = np.load(corpus / "ppocr_mobile_v2_cls" / "eval.npz")["x"][:4]
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ref = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    got = ort.InferenceSession(model.proto.SerializeToString(), so, providers=["CPUExecutionProvider"])
    name = ref.get_inputs()[0].name
    np.testing.assert_allclose(got.run(None, {name: x})[0], ref.run(None, {name: x})[0], atol=1e-5)
