"""The weight figures sum in float64 over slices: no whole-tensor float64 copy of a weight."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from test_weight_error import reference_dequantized

from workbench.core import api
from workbench.core.analysis import weight_error
from workbench.core.analysis.weight_error import channel_energy, weight_errors


def test_peak_numpy_memory_stays_near_the_weight_and_the_figures_equal_float64(tmp_path, monkeypatch):
    """A 4 MiB int4 weight: the float weight and its dequantized value (2x its size) are all numpy
    holds at once; whole-tensor float64 copies made it 7x."""
    monkeypatch.setattr(weight_error, "SLICE_ELEMENTS", 1 << 14)
    w = np.random.default_rng(0).normal(size=(1024, 1024)).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1024])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1024])],
                          [numpy_helper.from_array(w, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    onnx.save(m, tmp_path / "m.onnx")
    model = api.open_model(tmp_path / "m.onnx")
    result = api.quantize(model, api.make_recipe("w4-block"))
    tracemalloc.start()
    try:
        (e,) = weight_errors(result.plan, model.proto, result.proto)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2.6 * w.nbytes
    d = reference_dequantized(result.proto, "mm", 1).astype(np.float64)
    err = (w.astype(np.float64) - d) ** 2
    sig = w.astype(np.float64) ** 2
    assert e.sqnr_db == pytest.approx(10 * math.log10(sig.sum() / err.sum()), abs=1e-9)
    per = 10 * np.log10(sig.sum(axis=0) / err.sum(axis=0))
    assert e.worst_channel == int(np.argmin(per)) and e.worst_channel_db == pytest.approx(per.min(), abs=1e-9)


@pytest.mark.parametrize(("axis", "groups"), [(None, 1), (0, 1), (1, 1), (2, 1), (1, 3)])
def test_channel_energy_over_many_slices_equals_one_float64_sum(monkeypatch, axis, groups):
    monkeypatch.setattr(weight_error, "SLICE_ELEMENTS", 7)  # slices of one row, some rows of a group apart
    rng = np.random.default_rng(2)
    w = rng.normal(size=(6, 4, 5)).astype(np.float16)
    dq = (w + rng.normal(scale=0.01, size=w.shape)).astype(np.float32)
    sig, err = channel_energy(w, dq, axis, groups)
    w64, e64 = w.astype(np.float64) ** 2, (w.astype(np.float64) - dq) ** 2
    if axis is None:
        expected = (np.array([w64.sum()]), np.array([e64.sum()]))
    elif groups == 1:
        red = tuple(k for k in range(3) if k != axis)
        expected = (w64.sum(axis=red), e64.sum(axis=red))
    else:  # [C=6, M/group=4, k] in 3 groups of 2 rows: channel g*4 + j
        expected = tuple(np.array([a[2 * g:2 * g + 2, j].sum() for g in range(3) for j in range(4)]) for a in (w64, e64))
    assert sig.dtype == err.dtype == np.float64
    np.testing.assert_allclose(sig, expected[0], rtol=1e-12)
    np.testing.assert_allclose(err, expected[1], rtol=1e-12)
