"""Constant lifting on the protobuf gives byte for byte what onnx_ir's passes give, and skips onnx_ir."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core.model import weights


def _by_onnx_ir(proto: onnx.ModelProto, monkeypatch) -> onnx.ModelProto:
    with monkeypatch.context() as m:
        m.setattr(weights, "_lift_plain", lambda p: None)
        return weights.lift_weights(proto)[0]


def _small() -> onnx.ModelProto:
    w = helper.make_tensor("w_value", TensorProto.FLOAT, [3, 2], np.arange(6, dtype=np.float32).tolist())
    nodes = [helper.make_node("Constant", [], ["w"], value=w),
             helper.make_node("Constant", [], ["two"], value=numpy_helper.from_array(np.array(2.0, np.float32))),
             helper.make_node("MatMul", ["x", "w"], ["y"]),
             helper.make_node("Mul", ["y", "two"], ["z"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["n", 2])],
                              [numpy_helper.from_array(np.ones(2, np.float32), "unused_b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_small_model_same_bytes_as_onnx_ir(monkeypatch):
    proto = _small()
    out, lifted, dropped = weights.lift_weights(proto)
    assert (lifted, dropped) == (2, [])
    assert [t.name for t in out.graph.initializer] == ["unused_b", "w", "two"]
    assert [n.op_type for n in out.graph.node] == ["MatMul", "Mul"]
    np.testing.assert_array_equal(numpy_helper.to_array(out.graph.initializer[1]),
                                  np.arange(6, dtype=np.float32).reshape(3, 2))
    assert out.SerializeToString() == _by_onnx_ir(proto, monkeypatch).SerializeToString()
    assert len(proto.graph.node) == 4  # the argument is not modified


@pytest.mark.parametrize("rel", ["digits_transformer/model_opset14.onnx", "digits_transformer/model_opset17.onnx",
                                 "ppocr_mobile_v2_cls/model.onnx", "ppocrv4_rec/model.onnx"])
def test_corpus_models_same_bytes_as_onnx_ir(corpus, rel, monkeypatch):
    proto = onnx.load(corpus / rel)
    assert weights._lift_plain(proto) is not None  # the fast path really ran
    out, lifted, _ = weights.lift_weights(proto)
    assert lifted == weights.count_constants(proto) > 0
    assert out.SerializeToString() == _by_onnx_ir(proto, monkeypatch).SerializeToString()


def test_subgraphs_go_to_onnx_ir(corpus):
    proto = onnx.load(corpus / "silero_vad" / "silero_vad.onnx")
    assert weights._lift_plain(proto) is None
    out, lifted, _ = weights.lift_weights(proto)
    assert lifted == weights.count_constants(proto) - weights.count_constants(out) > 0


def test_loading_a_constant_weight_model_skips_onnx_ir(corpus):
    code = ("import json, sys; from workbench.core.model.load import load_model; "
            f"m = load_model({str(corpus / 'digits_transformer' / 'model_opset17.onnx')!r}); "
            "print(json.dumps([len(m.proto.graph.initializer), 'onnx_ir' in sys.modules, 'sympy' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    n_init, ir_loaded, sympy_loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert (ir_loaded, sympy_loaded) == (False, False)
    assert n_init == len(onnx.load(corpus / "digits_transformer" / "model_opset17.onnx").graph.initializer) + 111
