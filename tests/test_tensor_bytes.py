"""Sizes from dims and the weight-less model copy used by the writers and calibration."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core.errors import ModelError
from workbench.core.io.external import tensor_array
from workbench.core.io.tensor_bytes import (
    append_copies,
    lean_copy,
    model_tensor_bytes,
    raw_bytes,
    raw_bytes_kept,
    raw_data_lengths,
    restore_held,
    tensor_nbytes,
)
from workbench.core.model.reader import read_model_file
from workbench.core.model.tensor_check import check_tensors


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int8, np.uint8, np.int16, np.int32,
                                   np.int64, np.uint64, np.bool_, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn])
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 5, 7)])
def test_tensor_nbytes_equals_raw_data_length(dtype, shape):
    t = numpy_helper.from_array(np.zeros(shape, dtype=dtype), "t")
    assert t.HasField("raw_data") or np.prod(shape) == 0
    assert tensor_nbytes(t) == len(t.raw_data) == int(np.prod(shape)) * np.dtype(dtype).itemsize


def test_tensor_nbytes_of_packed_int4():
    t = helper.make_tensor("q", TensorProto.INT4, [7], [1, -2, 3, -4, 5, -6, 7])
    assert tensor_nbytes(t) == 4


def _model():
    rng = np.random.default_rng(0)
    big = numpy_helper.from_array(rng.standard_normal((600, 600)).astype(np.float32), "Wbig")
    small = numpy_helper.from_array(rng.standard_normal((600,)).astype(np.float32), "b")
    unused = numpy_helper.from_array(rng.standard_normal((600, 600)).astype(np.float32), "Wunused")
    nodes = [helper.make_node("MatMul", ["X", "Wbig"], ["H"], name="mm"),
             helper.make_node("Add", ["H", "b"], ["Y"], name="add")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 600])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 600])], [big, small, unused])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.metadata_props.add(key="k", value="v")
    return m


def test_lean_copy_leaves_out_big_weights_and_restore_puts_back_the_used_ones():
    m = _model()
    copy, held = lean_copy(m, limit=1 << 20)
    assert sorted(held) == ["Wbig", "Wunused"] and [t.name for t in copy.graph.initializer] == ["b"]
    assert copy.metadata_props[0].value == "v" and len(copy.graph.node) == 2 and copy.opset_import == m.opset_import
    assert model_tensor_bytes(m) == 2 * 600 * 600 * 4 + 600 * 4
    restore_held(copy, held)
    assert sorted(t.name for t in copy.graph.initializer) == ["Wbig", "b"]  # the unused one stays out
    np.testing.assert_array_equal(numpy_helper.to_array(copy.graph.initializer[1]),
                                  numpy_helper.to_array(m.graph.initializer[0]))
    assert len(m.graph.initializer) == 3  # the source is untouched


def test_external_length_that_disagrees_with_dims_is_refused_before_reading():
    t = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[4, 4])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "w.bin"), ("offset", "0"), ("length", "60")):
        t.external_data.add(key=k, value=v)
    m = onnx.ModelProto(graph=onnx.GraphProto(initializer=[t]))
    with pytest.raises(ModelError, match=r"m\.onnx: tensor 'W' declares \[4, 4\].*64 bytes.*length 60"):
        check_tensors(m, "m.onnx")


def test_restored_and_appended_copies_serialise_as_extend_does():
    m = _model()
    m.graph.initializer[0].doc_string = "kept"
    copy, held = lean_copy(m, limit=1 << 20)
    restore_held(copy, held)
    by_extend = onnx.ModelProto()
    by_extend.CopyFrom(copy)
    del by_extend.graph.initializer[:]
    appended = onnx.ModelProto()
    appended.CopyFrom(by_extend)
    by_extend.graph.initializer.extend(copy.graph.initializer)
    append_copies(appended.graph.initializer, copy.graph.initializer)
    assert appended.SerializeToString() == by_extend.SerializeToString()
    assert [t.name for t in appended.graph.initializer] == ["b", "Wbig"]
    assert appended.graph.initializer[1].doc_string == "kept"


def _wire_model() -> onnx.ModelProto:
    """Initializers stored every way: raw bytes (empty too), float_data, external; a second graph
    field merged in after the first (protobuf concatenation), a tensor whose raw_data comes twice."""
    m = _model()
    m.graph.initializer.append(helper.make_tensor("typed", TensorProto.FLOAT, [2], [1.0, 2.0]))
    m.graph.initializer.append(numpy_helper.from_array(np.zeros((0,), np.float32), "empty"))
    ext = m.graph.initializer.add(name="ext", data_type=TensorProto.FLOAT, dims=[4])
    ext.data_location = TensorProto.EXTERNAL
    ext.external_data.add(key="location", value="w.bin")
    return m


def test_raw_data_lengths_read_from_the_wire_match_the_parsed_model():
    m = _wire_model()
    extra = onnx.ModelProto(graph=onnx.GraphProto(initializer=[numpy_helper.from_array(np.ones(3, np.int64), "late")]))
    twice = TensorProto(name="twice", data_type=TensorProto.UINT8, dims=[2], raw_data=b"abcd").SerializeToString()
    twice += b"\x4a\x02xy"  # raw_data (field 9, length-delimited) again: the parse keeps the last, b"xy"
    graph = b"\x2a" + bytes([len(twice)]) + twice  # GraphProto.initializer (field 5)
    data = m.SerializeToString() + extra.SerializeToString() + b"\x3a" + bytes([len(graph)]) + graph  # graph: 7
    parsed = onnx.ModelProto()
    parsed.ParseFromString(data)
    want = [len(t.raw_data) if t.HasField("raw_data") else None for t in parsed.graph.initializer]
    assert want == [600 * 600 * 4, 600 * 4, 600 * 600 * 4, None, 0, None, 24, 2]
    assert raw_data_lengths(data) == want
    assert raw_data_lengths(memoryview(data)) == want
    assert raw_data_lengths(data[:-5]) is None  # cut inside a field: not followed, the caller measures


def test_a_raw_data_length_that_disagrees_with_dims_is_refused_from_a_mapped_file(tmp_path):
    m = _model()  # 2.9 MB: read through a memory map
    m.graph.initializer[2].dims[0] = 601  # Wunused declares more values than it stores
    path = tmp_path / "m.onnx"
    path.write_bytes(m.SerializeToString())
    with pytest.raises(ModelError, match=r"tensor 'Wunused' declares \[601, 600\].*1442400 bytes.*stores 1440000"):
        read_model_file(path)
    m.graph.initializer[2].dims[0] = 600
    path.write_bytes(m.SerializeToString())
    proto, digest, _ = read_model_file(path)
    assert proto.SerializeToString() == path.read_bytes()


def test_raw_bytes_kept_reads_each_registered_weight_once_and_values_are_to_arrays():
    m = _model()
    other = onnx.ModelProto()
    other.CopyFrom(m)
    big, small = m.graph.initializer[0], m.graph.initializer[1]
    assert raw_bytes(big) is not raw_bytes(big)  # no scope: a fresh copy each time
    with raw_bytes_kept(m):
        first = tensor_array(big)
        assert np.shares_memory(first, tensor_array(big)) and raw_bytes(big) is raw_bytes(big)
        np.testing.assert_array_equal(first, numpy_helper.to_array(big))
        assert first.dtype == np.float32 and first.shape == (600, 600) and not first.flags.writeable
        with raw_bytes_kept(m):  # nested: the outer scope keeps its bytes
            assert np.shares_memory(first, tensor_array(big))
        assert np.shares_memory(first, tensor_array(big))
        assert raw_bytes(small) is not raw_bytes(small)  # under the size limit
        twin = other.graph.initializer[0]  # another model's tensor
        assert raw_bytes(twin) is not raw_bytes(twin)
        np.testing.assert_array_equal(tensor_array(twin), first)
    assert not np.shares_memory(first, tensor_array(big))  # the scope is over
