"""Sentinel-valued tensors (attention masks of finfo.min) keep their units float, reported."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.formats.numerics import sqnr_db
from workbench.core.issues import IssueCode
from workbench.core.model.load import prepare_proto


def _attention_model():
    rng = np.random.default_rng(3)
    wq = numpy_helper.from_array((rng.normal(size=(16, 16)) * 0.3).astype(np.float32), "Wq")
    big = numpy_helper.from_array(np.array(np.finfo(np.float32).min, np.float32), "big")
    one = numpy_helper.from_array(np.array(1.0, np.float32), "one")
    nodes = [
        helper.make_node("MatMul", ["x", "Wq"], ["q"], name="proj"),
        helper.make_node("Transpose", ["q"], ["qt"], name="tr", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "qt"], ["scores"], name="scores_mm"),
        helper.make_node("Sub", ["one", "mask"], ["inv"], name="inv"),
        helper.make_node("Mul", ["inv", "big"], ["bias"], name="mask_bias"),
        helper.make_node("Add", ["scores", "bias"], ["masked"], name="mask_add"),
        helper.make_node("Softmax", ["masked"], ["y"], name="softmax", axis=-1),
    ]
    g = helper.make_graph(nodes, "att", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 16]),
                                         helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 1, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 6])], [wq, big, one])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _data(tmp_path):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(8, 1, 6, 16)).astype(np.float32)
    mask = np.ones((8, 1, 1, 6), np.float32)
    mask[:, :, :, 4:] = 0.0  # last two positions padded
    np.savez(tmp_path / "calib.npz", x=x, mask=mask)
    return tmp_path / "calib.npz", x, mask


def test_mask_add_kept_float_and_output_close(tmp_path):
    proto = _attention_model()
    model = prepare_proto(proto)
    path, x, mask = _data(tmp_path)
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(path))
    guarded = [i for i in result.issues if "sentinel" in i.message]
    assert sorted(i.node for i in guarded) == ["mask_add", "mask_bias"]
    assert result.plan.units["mask_add"].excluded
    assert not result.plan.units["scores_mm"].excluded
    f = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    q = ort.InferenceSession(result.proto.SerializeToString(), providers=["CPUExecutionProvider"])
    for i in range(len(x)):
        feed = {"x": x[i], "mask": mask[i]}
        ref, out = f.run(None, feed)[0], q.run(None, feed)[0]
        assert np.all(out[..., 4:] < 1e-6)  # padded positions still get no attention
        assert sqnr_db(ref, out) > 20.0


def test_unpadded_calibration_still_keeps_mask_units_float(tmp_path):
    """An all-ones mask never reaches finfo.min in calibration; the graph still shows the mask."""
    proto = _attention_model()
    _, x, mask = _data(tmp_path)
    np.savez(tmp_path / "ones.npz", x=x, mask=np.ones_like(mask))
    result = api.quantize(prepare_proto(proto), api.make_recipe("cpu-u8s8"), data=str(tmp_path / "ones.npz"))
    guarded = {i.node: i.message for i in result.issues if "sentinel" in i.message}
    assert sorted(guarded) == ["mask_add", "mask_bias"]
    assert "'bias' reaches |3.4e+38|" in guarded["mask_add"]
    assert result.plan.units["mask_add"].excluded and not result.plan.units["scores_mm"].excluded
    f = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    q = ort.InferenceSession(result.proto.SerializeToString(), providers=["CPUExecutionProvider"])
    for i in range(len(x)):  # evaluated on padded rows, which calibration never saw
        feed = {"x": x[i], "mask": mask[i]}
        ref, out = f.run(None, feed)[0], q.run(None, feed)[0]
        assert np.all(out[..., 4:] < 1e-6)
        assert sqnr_db(ref, out) > 20.0


@pytest.mark.slow
def test_minilm_all_ones_mask_guards_same_units(corpus, tmp_path):
    d = corpus / "minilm_l6_v2"
    c = dict(np.load(d / "calib.npz"))
    np.savez(tmp_path / "padded.npz", **c)
    c["attention_mask"] = np.ones_like(c["attention_mask"])
    np.savez(tmp_path / "ones.npz", **c)
    model = api.load_model(d / "model.onnx")
    found = {}
    for name in ("padded", "ones"):
        res = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(tmp_path / f"{name}.npz"), samples=8)
        found[name] = sorted(i.node for i in res.issues if i.code == IssueCode.SENTINEL_RANGE)
        assert all("'/bert/Where_1_output_0' reaches |3.4e+38|" in i.message for i in res.issues
                   if i.code == IssueCode.SENTINEL_RANGE)
    assert found["ones"] == found["padded"] == [f"/bert/encoder/layer.{k}/attention/self/Add" for k in range(6)]
