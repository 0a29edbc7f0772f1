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
        m.setattr(weights, "_lift_plain", lambda p, **_: None)
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
                                 "ppocr_mobile_v2_cls/model.onnx", "ppocrv4_rec/model.onnx",
                                 "silero_vad/silero_vad.onnx", "silero_vad/silero_vad_16k_op15.onnx"])
def test_corpus_models_same_bytes_as_onnx_ir(corpus, rel, monkeypatch):
    proto = onnx.load(corpus / rel)
    assert weights._lift_plain(proto) is not None  # the fast path really ran
    out, lifted, _ = weights.lift_weights(proto)
    assert lifted == weights.count_constants(proto) > 0
    assert out.SerializeToString() == _by_onnx_ir(proto, monkeypatch).SerializeToString()


def test_subgraph_constants_become_their_own_initializers(corpus):
    proto = onnx.load(corpus / "silero_vad" / "silero_vad_16k_op15.onnx")
    out, lifted, _ = weights.lift_weights(proto)
    assert (lifted, weights.count_constants(out)) == (160, 0)
    def then_branch(p):
        return next(a.g for n in p.graph.node if n.name == "/model/If" for a in n.attribute if a.name == "then_branch")

    before, after = then_branch(proto), then_branch(out)
    assert [n.op_type for n in before.node] == ["Constant", "Squeeze"]
    assert [t.name for t in after.initializer] == ["/model/Constant_2_output_0"]
    assert after.node[0] == before.node[1]
    np.testing.assert_array_equal(numpy_helper.to_array(after.initializer[0]),
                                  numpy_helper.to_array(before.node[0].attribute[0].t))


def test_value_info_beside_a_constant_goes_to_onnx_ir(monkeypatch):
    proto = _small()
    proto.graph.value_info.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 2]))
    assert weights._lift_plain(proto) is None
    out, lifted, _ = weights.lift_weights(proto)
    assert (lifted, weights.count_constants(out)) == (2, 0)
    assert "y" in {vi.name for vi in out.graph.value_info}


def test_empty_fields_dropped_as_onnx_ir_drops_them(monkeypatch):
    proto = _small()
    proto.doc_string = ""
    proto.graph.node[2].domain = ""
    proto.graph.node[2].doc_string = ""
    proto.graph.node[3].name = ""
    proto.graph.input[0].doc_string = ""
    proto.graph.node[2].attribute.append(helper.make_attribute("unused_attr", 1))
    proto.graph.node[2].attribute[0].doc_string = ""
    proto.graph.output[0].type.Clear()
    proto.graph.output[0].ClearField("type")
    proto.graph.output[0].type.SetInParent()
    out = weights._lift_plain(proto)
    assert not out.HasField("doc_string") and not out.graph.node[0].HasField("domain")
    assert not out.graph.output[0].HasField("type")
    assert out.SerializeToString() == _by_onnx_ir(proto, monkeypatch).SerializeToString()


def test_loading_a_constant_weight_model_skips_onnx_ir(corpus):
    code = ("import json, sys; from workbench.core.model.load import load_model; "
            f"m = load_model({str(corpus / 'digits_transformer' / 'model_opset17.onnx')!r}); "
            f"load_model({str(corpus / 'silero_vad' / 'silero_vad.onnx')!r}); "
            "print(json.dumps([len(m.proto.graph.initializer), 'onnx_ir' in sys.modules, 'sympy' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    n_init, ir_loaded, sympy_loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert (ir_loaded, sympy_loaded) == (False, False)
    assert n_init == len(onnx.load(corpus / "digits_transformer" / "model_opset17.onnx").graph.initializer) + 111


@pytest.mark.parametrize("rel", ["ppocrv4_rec/model.onnx", "silero_vad/silero_vad_16k_op15.onnx",
                                 "minilm_l6_v2/model.onnx"])
def test_in_place_lift_writes_the_same_bytes_without_a_copy(corpus, rel):
    proto = onnx.load(corpus / rel)
    copied, lifted, _ = weights.lift_weights(proto)
    assert len(proto.graph.value_info) == 0 and lifted > 0  # the copying path left its argument alone
    first = proto.graph.initializer[0] if len(proto.graph.initializer) else None
    out, lifted_in_place, _ = weights.lift_weights(proto, in_place=True)
    assert out is proto and lifted_in_place == lifted
    if first is not None:
        assert proto.graph.initializer[0] is first  # the weights were not rebuilt
    assert out.SerializeToString() == copied.SerializeToString()


def test_in_place_lift_small_model_same_bytes_as_onnx_ir(monkeypatch):
    proto = _small()
    proto.graph.node[2].domain = ""  # set but empty: dropped, as onnx_ir drops it
    expected = _by_onnx_ir(proto, monkeypatch).SerializeToString()
    out, lifted, _ = weights.lift_weights(proto, in_place=True)
    assert out is proto and lifted == 2
    assert [n.op_type for n in proto.graph.node] == ["MatMul", "Mul"]
    assert out.SerializeToString() == expected
