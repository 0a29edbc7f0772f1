"""The sweep's tensor types: read from the models where they declare them, equal to what an
onnxruntime session reports, with the session as the fallback."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from tests.test_sensitivity_sweep import tiny_model
from workbench.core import api
from workbench.core.analysis import sweep_types
from workbench.core.analysis.sweep_types import session_types, tensor_types


@pytest.fixture
def pair(tmp_path):
    path = tmp_path / "tiny.onnx"
    tiny_model(path)
    x = np.random.default_rng(1).normal(0, 1, (16, 16)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=x)
    model = api.open_model(path)
    results = {p: api.quantize(model, api.make_recipe(p), data=str(tmp_path / "calib.npz")) for p in ("cpu-u8s8", "s8s8")}
    return model.proto, results


def _no_session(*_a, **_k):
    raise AssertionError("a session was built")


def test_declared_types_equal_the_sessions_without_building_one(pair, monkeypatch):
    fp, results = pair
    expect_f = session_types(fp, True)
    expect_q = {p: session_types(r.proto, False) for p, r in results.items()}
    monkeypatch.setattr(sweep_types, "make_session", _no_session)
    f_types = tensor_types(fp, True)
    assert f_types == expect_f and set(f_types) == {"x", "h0", "r0", "h1", "s", "y"}
    for preset, r in results.items():
        got = tensor_types(r.proto, False, f_types)
        assert got == expect_q[preset], preset
        # the QuantizeLinear outputs: uint8 activations for cpu-u8s8, int8 for s8s8
        q_outs = {n.output[0] for n in r.proto.graph.node if n.op_type == "QuantizeLinear"}
        want = onnx.TensorProto.UINT8 if preset == "cpu-u8s8" else onnx.TensorProto.INT8
        assert q_outs and {got[t] for t in q_outs} == {want}, preset


def test_an_undeclared_tensor_falls_back_to_the_session(pair, monkeypatch):
    fp, results = pair
    bare = onnx.ModelProto()
    bare.CopyFrom(fp)
    del bare.graph.value_info[:]
    qp = results["cpu-u8s8"].proto
    expect_f, expect_q = session_types(fp, True), session_types(qp, False)
    built = []
    real = sweep_types.make_session
    monkeypatch.setattr(sweep_types, "make_session", lambda *a, **k: built.append(1) or real(*a, **k))
    assert tensor_types(bare, True) == expect_f and built == [1]
    assert tensor_types(qp, False) == expect_q and built == [1, 1]  # no float types given: h0, r0, ... unknown
