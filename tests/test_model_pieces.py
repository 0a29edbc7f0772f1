"""A model serialised in pieces (io.model_pieces) is byte for byte its SerializeToString, and the save that
uses it checks what onnx.checker checked on the whole bytes: the graph, and each large raw_data's length."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from google.protobuf.unknown_fields import UnknownFieldSet
from onnx import TensorProto, helper, numpy_helper

from workbench.core.errors import ExportError
from workbench.core.io import save
from workbench.core.io.model_pieces import PIECE_BYTES, needed_bytes, split_model


def _model() -> onnx.ModelProto:
    """Fields on both sides of each split: model fields before and after ``graph`` (doc_string, opset_import,
    metadata_props, functions), graph fields before and after ``initializer``, large tensors with fields after
    ``raw_data`` (doc_string, metadata_props), a packed INT4 weight and small initializers between large ones."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((64, 512)).astype(np.float32), "w1")
    w1.doc_string = "first weight"
    w1.metadata_props.add(key="k", value="v")
    w2 = numpy_helper.from_array(rng.standard_normal((512, 80)).astype(np.float32), "w2")
    packed = helper.make_tensor("q4", TensorProto.INT4, [PIECE_BYTES * 2 + 3],
                                rng.integers(0, 256, PIECE_BYTES + 2, dtype=np.uint8).tobytes(), raw=True)
    small = numpy_helper.from_array(np.ones(3, np.float32), "b")
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1", doc_string="node doc"),
             helper.make_node("MatMul", ["h", "w2"], ["y0"], name="mm2"),
             helper.make_node("Add", ["y0", "c"], ["y"], name="add"),
             helper.make_node("Identity", ["q4"], ["q4_out"], name="id")]
    c = numpy_helper.from_array(np.zeros(80, np.float32), "c")
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 80]),
                           helper.make_tensor_value_info("q4_out", TensorProto.INT4, [PIECE_BYTES * 2 + 3])],
                          [small, w1, c, w2, packed], doc_string="graph doc",
                          value_info=[helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 512])])
    g.metadata_props.add(key="gk", value="gv")
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10, doc_string="model doc",
                          producer_name="test")
    m.metadata_props.add(key="mk", value="mv")
    m.functions.add().CopyFrom(helper.make_function("local", "f", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])],
                                                    [helper.make_opsetid("", 21)]))
    return m


def test_the_pieces_join_to_the_bytes_serialize_to_string_gives():
    m = _model()
    pieces = split_model(m)
    assert pieces is not None and pieces.short == []
    assert b"".join(pieces.parts) == m.SerializeToString()
    raw = {t.name: t.raw_data for t in m.graph.initializer}
    assert sum(p in (raw["w1"], raw["w2"], raw["q4"]) for p in pieces.parts) == 3  # each large raw_data a piece
    every = split_model(m, limit=0)  # every initializer split, the small ones too
    assert b"".join(every.parts) == m.SerializeToString()


def test_a_model_without_large_weights_or_with_unknown_fields_is_not_split():
    m = _model()
    assert split_model(m, limit=1 << 30) is None
    unknown = onnx.ModelProto()
    unknown.ParseFromString(m.SerializeToString() + b"\xf8\x07\x05")  # field 127 (varint 5): unknown to onnx
    assert len(UnknownFieldSet(unknown)) == 1
    assert split_model(unknown) is None


def test_the_checkable_bytes_hold_the_large_weights_as_typed_inputs():
    m = _model()
    lean = onnx.ModelProto()
    lean.ParseFromString(split_model(m).checkable)
    onnx.checker.check_model(lean)
    assert [t.name for t in lean.graph.initializer] == ["b", "c"]
    typed = {i.name: (i.type.tensor_type.elem_type, [d.dim_value for d in i.type.tensor_type.shape.dim])
             for i in lean.graph.input}
    assert typed == {"x": (TensorProto.FLOAT, [1, 64]), "w1": (TensorProto.FLOAT, [64, 512]),
                     "w2": (TensorProto.FLOAT, [512, 80]), "q4": (TensorProto.INT4, [PIECE_BYTES * 2 + 3])}
    assert list(lean.graph.node) == list(m.graph.node) and lean.functions == m.functions


def test_save_model_writes_the_split_bytes_and_still_refuses_what_the_checker_refused(tmp_path):
    m = _model()
    out = save.save_model(m, tmp_path / "m.onnx")
    assert out.read_bytes() == m.SerializeToString()
    short = _model()
    w2 = next(t for t in short.graph.initializer if t.name == "w2")
    w2.raw_data = w2.raw_data[:-4]  # one float short: onnx.checker refuses it in the whole bytes too
    with pytest.raises(onnx.checker.ValidationError, match="w2"):
        onnx.checker.check_model(short.SerializeToString())
    with pytest.raises(ExportError, match=r"tensor name: w2\) raw_data size \(163836 bytes\) is too small .*163840"):
        save.save_model(short, tmp_path / "short.onnx")
    undefined = _model()
    undefined.graph.node[1].input[0] = "nowhere"  # a graph error: found in the checkable bytes
    with pytest.raises(ExportError, match="nowhere"):
        save.save_model(undefined, tmp_path / "undefined.onnx")
    assert not (tmp_path / "short.onnx").exists() and not (tmp_path / "undefined.onnx").exists()


def test_needed_bytes_follow_dims_and_packed_types():
    assert needed_bytes(numpy_helper.from_array(np.zeros((3, 5), np.float32))) == 60
    assert needed_bytes(helper.make_tensor("a", TensorProto.INT4, [5], b"\0\0\0", raw=True)) == 3
    assert needed_bytes(helper.make_tensor("a", TensorProto.UINT2, [5], b"\0\0", raw=True)) == 2
    assert needed_bytes(helper.make_tensor("s", TensorProto.STRING, [1], [b"x"])) is None


def test_a_corpus_model_splits_to_its_own_bytes(corpus):
    m = onnx.load(str(corpus / "digits_cnn" / "model_opset17.onnx"))
    pieces = split_model(m, limit=0)
    assert pieces is not None and b"".join(pieces.parts) == m.SerializeToString()
    onnx.checker.check_model(pieces.checkable)
