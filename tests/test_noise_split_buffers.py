"""Memory of the noise split: each variant reaches onnxruntime holding only the initializers it reads,
its large weights as external references to one copy of their bytes (not a protobuf copy of the model,
nor a copy of every initializer of the QDQ model with the unread ones dropped afterwards)."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.analysis import noise_split as ns

N = 1024  # the int8 weight is 1 MiB, the float one 4 MiB: both at least BUFFER_TENSOR_BYTES
W = (np.random.default_rng(41).normal(size=(N, 8)) * 0.05).astype(np.float32)
W = np.tile(W, (1, N // 8))
X = np.random.default_rng(42).normal(size=(3, N)).astype(np.float32)
XS, YS, WS = np.float32(0.03), np.float32(0.5), np.float32(0.002)


def _model(nodes, inits) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", N])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", N])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def w_int8() -> np.ndarray:
    return np.clip(np.round(W / WS), -127, 127).astype(np.int8)


def qdq_model() -> onnx.ModelProto:
    inits = [numpy_helper.from_array(w_int8(), "w_q"), numpy_helper.from_array(np.array(WS), "w_s"),
             numpy_helper.from_array(np.array(XS), "x_s"), numpy_helper.from_array(np.array(YS), "y_s"),
             numpy_helper.from_array(np.array(0, np.int8), "zp")]
    return _model([helper.make_node("QuantizeLinear", ["x", "x_s", "zp"], ["x_q"], name="x_quant"),
                   helper.make_node("DequantizeLinear", ["x_q", "x_s", "zp"], ["x_dq"], name="x_dequant"),
                   helper.make_node("DequantizeLinear", ["w_q", "w_s"], ["w_dq"], name="w_dequant"),
                   helper.make_node("MatMul", ["x_dq", "w_dq"], ["y_pre"], name="mm"),
                   helper.make_node("QuantizeLinear", ["y_pre", "y_s", "zp"], ["y_q"], name="y_quant"),
                   helper.make_node("DequantizeLinear", ["y_q", "y_s", "zp"], ["y"], name="y_dequant")], inits)


def sqnr(ref: np.ndarray, out: np.ndarray) -> float:
    ref, out = ref.astype(np.float64), out.astype(np.float64)
    return 10 * math.log10(np.sum(ref ** 2) / np.sum((ref - out) ** 2))


def test_each_variant_holds_only_what_it_reads_and_its_weights_as_buffers(tmp_path, monkeypatch):
    onnx.save(_model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [numpy_helper.from_array(W, "w")]),
              tmp_path / "f.onnx")
    np.savez(tmp_path / "d.npz", x=X)
    seen = []
    real = ns.proto_session

    def spy(proto, options, extra=b"", providers=None, split=None):
        lean, sources = split
        seen.append(({t.name: t for t in lean.graph.initializer}, {k: len(v) for k, v in sources.items()},
                     lean.ByteSize()))
        return real(proto, options, extra, providers, split)

    monkeypatch.setattr(ns, "proto_session", spy)
    split = ns.noise_split(api.open_model(tmp_path / "f.onnx"), qdq_model(), str(tmp_path / "d.npz"))
    (w_inits, w_sources, w_bytes), (a_inits, a_sources, a_bytes) = seen  # the two variants, in order
    assert sorted(w_inits) == ["w_q", "w_s"]  # the activation scales and zero points are not copied
    assert w_inits["w_q"].data_location == TensorProto.EXTERNAL and not w_inits["w_q"].HasField("raw_data")
    assert list(w_sources.values()) == [N * N]  # the int8 weight's bytes, once
    assert sorted(a_inits) == ["w", "x_s", "y_s", "zp"]  # the int8 weight is not copied
    assert a_inits["w"].data_location == TensorProto.EXTERNAL and list(a_sources.values()) == [N * N * 4]
    assert w_bytes < 4096 and a_bytes < 4096  # no weight in the protobuf handed to onnxruntime
    ref = X @ W
    w_dq = w_int8().astype(np.float32) * WS
    fq = lambda a, s: (np.clip(np.round(a / s), -128, 127) * s).astype(np.float32)  # noqa: E731
    assert split.weights_db == pytest.approx(sqnr(ref, X @ w_dq), abs=1e-3)
    assert split.activations_db == pytest.approx(sqnr(ref, fq(fq(X, XS) @ W, YS)), abs=1e-3)
