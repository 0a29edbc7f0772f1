"""The placement guard scores both models against one run of the float model (placement_guard.float_outputs):
it built and ran the float model once per score, 2 of its 4 sessions (ppocrv4_rec: about 1 s of CPU). The
scores are those of each model measured on its own, bit for bit."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.pipeline import placement_guard
from workbench.core.pipeline.placement_guard import float_outputs, output_sqnr


def _float_model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((4, 4, 3, 3)) * 0.3).astype(np.float32), "W")
    node = helper.make_node("Conv", ["X", "W"], ["Y"], name="conv", pads=[1, 1, 1, 1])
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 4, 8, 8])  # noqa: E731
    m = helper.make_model(helper.make_graph([node], "g", [vi("X")], [vi("Y")], [w]),
                          opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _quantized(fp: onnx.ModelProto, tmp_path, data, bits: str) -> onnx.ModelProto:
    onnx.save(fp, tmp_path / "m.onnx")
    return api.quantize(api.open_model(str(tmp_path / "m.onnx")), api.make_recipe(bits), data=data).proto


def test_both_scores_from_one_float_run_equal_each_measured_alone(tmp_path, monkeypatch):
    fp = _float_model()
    rng = np.random.default_rng(1)
    np.savez(tmp_path / "calib.npz", X=rng.standard_normal((8, 4, 8, 8)).astype(np.float32))
    data = str(tmp_path / "calib.npz")
    q8, q16 = _quantized(fp, tmp_path, data, "cpu-u8s8"), _quantized(fp, tmp_path, data, "a16w8")
    feeds = [{"X": x[None]} for x in np.load(data)["X"]]
    alone = [output_sqnr(fp, q, feeds) for q in (q8, q16)]
    built = []
    real = placement_guard.make_session
    monkeypatch.setattr(placement_guard, "make_session", lambda proto, **k: built.append(proto) or real(proto, **k))
    refs = float_outputs(fp, feeds)
    shared = [output_sqnr(fp, q, feeds, refs=refs) for q in (q8, q16)]
    assert shared == alone and 20.0 < alone[0] < alone[1] < 200.0  # exactly equal; 16-bit activations closer
    assert [p is fp for p in built] == [True, False, False]  # the float model once, then each quantized model


def test_outputs_over_the_budget_are_not_kept(tmp_path):
    fp = _float_model()
    feeds = [{"X": np.ones((1, 4, 8, 8), np.float32)}] * 3
    assert len(float_outputs(fp, feeds, budget=3 * 4 * 64 * 4)) == 3  # 3 outputs of 256 float32 values: kept
    assert float_outputs(fp, feeds, budget=3 * 4 * 64 * 4 - 1) is None  # one byte short: the float model reruns
