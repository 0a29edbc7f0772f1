"""The calibration session takes every initializer of 64 KiB or more as a buffer used in place
(instrument.INSTRUMENT_BUFFER_BYTES), not serialised into the model onnxruntime parses: minilm_l6_v2's 24
attention weights of 576 KiB were under the 1 MiB of other sessions, so 14 MB of weights were serialised
and parsed again for each calibration. The observed values are the ones of the model as bytes."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from workbench.core.calibration import instrument
from workbench.core.io import ort_session


def _model() -> onnx.ModelProto:
    """x (n, 256) -> MatMul w1 (256 KiB) -> Relu -> MatMul w2 (256 x 8, 8 KiB) -> y."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((256, 256)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((256, 8)).astype(np.float32), "w2")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
                           helper.make_node("Relu", ["h"], ["r"], name="relu"),
                           helper.make_node("MatMul", ["r", "w2"], ["y"], name="mm2")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 256])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 8])], [w1, w2])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_a_weight_of_64_kib_reaches_the_calibration_session_as_a_buffer_with_the_same_values(monkeypatch):
    proto = _model()
    handed = []
    split = ort_session.session_sources

    def recording(p, min_bytes=ort_session.BUFFER_TENSOR_BYTES):
        lean, sources = split(p, min_bytes)
        handed.append({t.name: t.data_location for t in lean.graph.initializer})
        return lean, sources

    monkeypatch.setattr(ort_session, "session_sources", recording)
    x = np.random.default_rng(1).standard_normal((4, 256)).astype(np.float32)
    with instrument.instrument(proto, ["h", "r"]) as session:
        got = session.run({"x": x})
    assert handed == [{"w1": TensorProto.EXTERNAL, "w2": TensorProto.DEFAULT}]  # w1 was serialised before
    extra = onnx.ModelProto()
    extra.graph.output.extend(instrument.output_infos(proto, ["h", "r"]))
    plain = ort.InferenceSession(proto.SerializeToString() + extra.SerializeToString(), instrument.session_options(),
                                 providers=["CPUExecutionProvider"])
    want = plain.run(["h", "r"], {"x": x})
    assert len(got) == 2 and all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
    np.testing.assert_allclose(got[0], x @ numpy_helper.to_array(proto.graph.initializer[0]), rtol=1e-4, atol=1e-4)
