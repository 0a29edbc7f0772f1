"""Sessions whose large weights reach onnxruntime as buffers compute what a session from bytes computes."""

from __future__ import annotations

import gc

import numpy as np
import onnx
import onnx.reference
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from workbench.core.io import ort_session


def _model(rows: int) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((rows, 64)).astype(np.float32)  # rows * 256 bytes
    b = rng.standard_normal(64).astype(np.float32)
    c = rng.standard_normal((rows, 64)).astype(np.float32)  # read at every run (a MatMul weight is prepacked)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"]), helper.make_node("Add", ["y", "b"], ["z"]),
         helper.make_node("Relu", ["z"], ["r"]), helper.make_node("Add", ["t", "c"], ["s"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", rows]),
         helper.make_tensor_value_info("t", TensorProto.FLOAT, [rows, 64])],
        [helper.make_tensor_value_info("r", TensorProto.FLOAT, ["n", 64]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, [rows, 64])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"), numpy_helper.from_array(c, "c")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _options() -> ort.SessionOptions:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return so


def test_large_weight_is_a_buffer_and_outputs_are_bit_identical():
    proto = _model(rows=8192)  # w, c: 2 MiB each, b: 256 bytes
    before = proto.SerializeToString()
    lean, sources = ort_session.session_sources(proto)
    assert list(sources) == ["workbench_0.data", "workbench_1.data"]
    assert sources["workbench_0.data"] == proto.graph.initializer[0].raw_data
    assert sources["workbench_1.data"] == proto.graph.initializer[2].raw_data
    assert lean.graph.initializer[0].data_location == TensorProto.EXTERNAL
    assert {e.key: e.value for e in lean.graph.initializer[0].external_data} == \
        {"location": "workbench_0.data", "offset": "0", "length": str(8192 * 64 * 4)}
    assert lean.graph.initializer[1] == proto.graph.initializer[1]  # small: kept inline
    assert lean.ByteSize() < 10_000

    x = np.random.default_rng(1).standard_normal((5, 8192)).astype(np.float32)
    feed = {"x": x, "t": np.random.default_rng(2).standard_normal((8192, 64)).astype(np.float32)}
    extra = onnx.ModelProto()  # merged into the model by protobuf, as calibration adds its outputs
    extra.graph.output.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, None))
    extra = extra.SerializeToString()
    session = ort_session.proto_session(proto, _options(), extra)
    assert [o.name for o in session.get_outputs()] == ["r", "s", "y"]  # the extra output was merged in
    del proto, lean, sources
    gc.collect()  # the buffers must live as long as the session, not as long as the model
    for _ in range(3):  # freed buffers would show as changed sums (or a crash) by now
        np.ones(2 << 20, np.uint8)
    got = session.run(None, feed)
    want = ort.InferenceSession(before + extra, _options(), providers=["CPUExecutionProvider"]).run(None, feed)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    ref = onnx.reference.ReferenceEvaluator(onnx.load_from_string(before)).run(None, feed)
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(got[1], ref[1])


def test_small_model_is_serialised_as_it_is():
    proto = _model(rows=16)
    lean, sources = ort_session.session_sources(proto)
    assert lean is proto and sources == {}
    feed = {"x": np.ones((2, 16), np.float32), "t": np.ones((16, 64), np.float32)}
    got = ort_session.proto_session(proto, _options()).run(None, feed)
    want = ort.InferenceSession(proto.SerializeToString(), _options(), providers=["CPUExecutionProvider"]).run(None, feed)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
