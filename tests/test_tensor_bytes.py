"""Sizes from dims and the weight-less model copy used by the writers and calibration."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core.io.tensor_bytes import lean_copy, model_tensor_bytes, restore_held, tensor_nbytes
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
    from workbench.core.errors import ModelError

    t = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[4, 4])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", "w.bin"), ("offset", "0"), ("length", "60")):
        t.external_data.add(key=k, value=v)
    m = onnx.ModelProto(graph=onnx.GraphProto(initializer=[t]))
    with pytest.raises(ModelError, match=r"m\.onnx: tensor 'W' declares \[4, 4\].*64 bytes.*length 60"):
        check_tensors(m, "m.onnx")
