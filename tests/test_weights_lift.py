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
from workbench.core.model.opset import upgrade_opset


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


def _props(msg, *pairs) -> None:
    for key, value in pairs:
        msg.metadata_props.add(key=key, value=value)


def _vi(name, dims=("n", 2), elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, list(dims))


def _edit_value_info(p):
    p.graph.value_info.extend([_vi("y"), _vi("w", [3, 9])])  # w's entry is dropped: its tensor's dims count


def _edit_stale_and_input_entries(p):
    p.graph.value_info.extend([_vi("x", ["m", 3]), _vi("gone"), _vi("y", [1, 1]), _vi("y", ["n", 7])])


def _edit_initializer_entry(p):
    p.graph.value_info.extend([_vi("unused_b", ["k"])])  # the entry wins over the tensor's dims


def _edit_untyped_entries(p):
    p.graph.value_info.append(helper.ValueInfoProto(name="y"))  # holds nothing: dropped
    p.graph.value_info.append(helper.ValueInfoProto(name="unused_b", doc_string="kept, without a type"))


def _edit_empty_fields(p):
    vi = _vi("y")
    vi.doc_string = ""
    vi.type.denotation = ""
    vi.type.tensor_type.shape.dim[0].denotation = ""
    vi.type.tensor_type.shape.dim[1].denotation = "CHANNEL"
    p.graph.value_info.append(vi)
    p.graph.input[0].type.denotation = ""
    p.model_version = 0


def _edit_metadata(p):
    _props(p, ("b", "1"), ("a", "2"), ("b", "3"))  # onnx_ir: a dict, keys sorted, last value counts
    _props(p.graph, ("z", "1"), ("a", "1"))
    _props(p.graph.node[2], ("k2", ""), ("k1", "v"))
    y, w, z = _vi("y"), _vi("w", [3, 2]), _vi("z")
    _props(y, ("s", "1"), ("r", "1"))
    _props(w, ("from", "constant"))  # the lifted initializer keeps it
    _props(z, ("entry", "1"), ("both", "entry"))  # merged under the output's own
    _props(p.graph.output[0], ("both", "output"))
    p.graph.value_info.extend([y, w, z])


def _edit_initializer_inputs(p):
    p.graph.input.append(_vi("unused_b", ["k"]))  # its input entry becomes its value_info
    p.graph.value_info.append(_vi("y"))


def _edit_untyped_initializer_input(p):
    p.graph.input.append(helper.ValueInfoProto(name="unused_b"))


_REGULAR = [_edit_value_info, _edit_stale_and_input_entries, _edit_initializer_entry, _edit_untyped_entries,
            _edit_empty_fields, _edit_metadata, _edit_initializer_inputs, _edit_untyped_initializer_input]


@pytest.mark.parametrize("edit", _REGULAR, ids=lambda f: f.__name__[6:])
def test_value_info_same_bytes_as_onnx_ir(edit, monkeypatch):
    proto = _small()
    edit(proto)
    expected = _by_onnx_ir(proto, monkeypatch)
    drop = frozenset(weights.initializers_listed_as_inputs(proto))
    fast = weights._lift_plain(proto, drop=drop)
    assert fast is not None  # the protobuf path ran
    assert fast.SerializeToString() == expected.SerializeToString()
    out, lifted, dropped = weights.lift_weights(proto, in_place=True)
    assert (out is proto, lifted, dropped) == (True, 2, sorted(drop))
    assert out.SerializeToString() == expected.SerializeToString()


def test_value_info_entries_as_onnx_ir_writes_them(monkeypatch):
    proto = _small()
    _edit_metadata(proto)
    _edit_stale_and_input_entries(proto)
    out = weights._lift_plain(proto)
    assert [vi.name for vi in out.graph.value_info] == ["unused_b", "w", "two", "y"]
    assert out.graph.value_info[3].type.tensor_type.shape.dim[1].dim_value == 7  # the last entry of y
    assert [(m.key, m.value) for m in out.graph.value_info[1].metadata_props] == [("from", "constant")]
    assert [(m.key, m.value) for m in out.graph.output[0].metadata_props] == [("both", "output"), ("entry", "1")]
    assert [(m.key, m.value) for m in out.metadata_props] == [("a", "2"), ("b", "3")]


def _seq_entry(p):
    p.graph.value_info.append(helper.make_tensor_sequence_value_info("y", TensorProto.FLOAT, None))


def _no_elem_type(p):
    vi = _vi("y")
    vi.type.tensor_type.ClearField("elem_type")
    p.graph.value_info.append(vi)


def _output_is_input(p):
    p.graph.output.append(_vi("x", ["n", 3]))


def _output_twice(p):
    p.graph.output.append(_vi("z", ["n", 2]))


def _opset_twice(p):
    p.opset_import.add(domain="", version=18)


@pytest.mark.parametrize("edit", [_seq_entry, _no_elem_type, _output_is_input, _output_twice, _opset_twice],
                         ids=lambda f: f.__name__)
def test_irregular_models_go_to_onnx_ir(edit, monkeypatch):
    proto = _small()
    edit(proto)
    assert weights._lift_plain(proto) is None
    out, lifted, _ = weights.lift_weights(proto)
    assert out.SerializeToString() == _by_onnx_ir(proto, monkeypatch).SerializeToString()


def _three_ways_same(proto, monkeypatch) -> onnx.ModelProto:
    """The copying and in-place protobuf paths give onnx_ir's bytes; returns that model."""
    expected = _by_onnx_ir(proto, monkeypatch).SerializeToString()
    assert weights._lift_plain(proto) is not None  # the fast path really ran
    copied, lifted, _ = weights.lift_weights(proto)
    assert lifted == weights.count_constants(proto) > 0
    assert copied.SerializeToString() == expected
    out, _, _ = weights.lift_weights(proto, in_place=True)
    assert out is proto and out.SerializeToString() == expected
    return out


@pytest.mark.parametrize("rel", ["digits_transformer/model_opset17.onnx", "ppocr_mobile_v2_cls/model.onnx",
                                 "ppocrv4_rec/model.onnx", "silero_vad/silero_vad.onnx",
                                 "silero_vad/silero_vad_16k_op15.onnx"])
def test_corpus_models_with_inferred_shapes_same_bytes_as_onnx_ir(corpus, rel, monkeypatch):
    proto = onnx.shape_inference.infer_shapes(onnx.load(corpus / rel))
    assert len(proto.graph.value_info) > 0
    out = _three_ways_same(proto, monkeypatch)
    assert len(out.graph.value_info) >= len(proto.graph.initializer)


def test_opset_11_model_upgraded_same_bytes_as_onnx_ir(corpus, monkeypatch):
    proto = upgrade_opset(onnx.load(corpus / "ppocr_mobile_v2_cls" / "model.onnx"), 13)
    assert len(proto.graph.value_info) > 0 and weights.count_constants(proto) == 308
    _three_ways_same(proto, monkeypatch)


def _small_conv_with_constants() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.normal(size=(4, 3, 3, 3)).astype(np.float32), "w_value")
    b = numpy_helper.from_array(rng.normal(size=4).astype(np.float32), "b_value")
    m = numpy_helper.from_array(rng.normal(size=(4 * 6 * 6, 5)).astype(np.float32), "m_value")
    shape = numpy_helper.from_array(np.array([-1, 4 * 6 * 6], np.int64), "s_value")
    nodes = [helper.make_node("Constant", [], ["w"], value=w), helper.make_node("Constant", [], ["b"], value=b),
             helper.make_node("Constant", [], ["m"], value=m), helper.make_node("Constant", [], ["s"], value=shape),
             helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Reshape", ["r", "s"], ["f"], name="flat"),
             helper.make_node("MatMul", ["f", "m"], ["y"], name="fc")]
    graph = helper.make_graph(nodes, "g", [_vi("x", ["n", 3, 8, 8])], [_vi("y", ["n", 5])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_quantize_static_export_same_bytes_as_onnx_ir(tmp_path, monkeypatch):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(1)
            self.rows = iter([{"x": rng.normal(size=(1, 3, 8, 8)).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.rows, None)

    onnx.save(_small_conv_with_constants(), tmp_path / "f.onnx")
    quantize_static(str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"), Reader(), quant_format=QuantFormat.QDQ)
    proto = onnx.load(tmp_path / "q.onnx")
    assert len(proto.graph.value_info) > 0 and len(proto.metadata_props) > 0
    assert {n.op_type for n in proto.graph.node} >= {"QuantizeLinear", "DequantizeLinear", "Constant"}
    _three_ways_same(proto, monkeypatch)


def test_opening_value_info_models_skips_onnx_ir(corpus, tmp_path):
    proto = onnx.shape_inference.infer_shapes(_small_conv_with_constants())
    _props(proto, ("onnx.infer", "onnxruntime.quant"), ("a", "b"))
    onnx.save(proto, tmp_path / "vi.onnx")
    files = [str(tmp_path / "vi.onnx"), str(corpus / "ppocr_mobile_v2_cls" / "model.onnx")]  # opset 11: upgraded
    code = ("import json, sys; from workbench.core.model.load import load_model; "
            f"ms = [load_model(f) for f in {files!r}]; "
            "print(json.dumps([[len(m.proto.graph.value_info) > 0 for m in ms], "
            "[any('Lifted' in n for n in m.notes) for m in ms], 'onnx_ir' in sys.modules, 'sympy' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    with_vi, lifted, ir_loaded, sympy_loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert (with_vi, lifted, ir_loaded, sympy_loaded) == ([True, True], [True, True], False, False)
