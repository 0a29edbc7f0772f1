"""Concat inputs share the Concat output's grid; excluded Convs stay float in onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from qdq_helpers import optimized_op_counts

from workbench.core import api
from workbench.core.model.load import prepare_proto


def _head(second_reader: bool = False) -> onnx.ModelProto:
    """A detector-head-like tail: box = Conv(x) in ~[-4, 8]; cls = Conv(x) (the class logits);
    Concat([box, cls]) on channels, then Sigmoid of the class half (via Split)."""
    rng = np.random.default_rng(0)
    wb = numpy_helper.from_array((rng.normal(size=(4, 3, 1, 1)) * 2).astype(np.float32), "wb")
    bb = numpy_helper.from_array(np.full(4, 2.0, np.float32), "bb")
    wc = numpy_helper.from_array(np.array([[[[1.0]], [[1.0]], [[0.0]]]] * 2, np.float32), "wc")
    bc = numpy_helper.from_array(np.array([-6.0, -6.0], np.float32), "bc")
    split = numpy_helper.from_array(np.array([4, 2], np.int64), "split")
    nodes = [helper.make_node("Conv", ["x", "wb", "bb"], ["box"], name="box_conv"),
             helper.make_node("Conv", ["x", "wc", "bc"], ["cls"], name="cls_conv"),
             helper.make_node("Concat", ["box", "cls"], ["cat"], name="cat", axis=1),
             helper.make_node("Split", ["cat", "split"], ["box_o", "logit"], name="split", axis=1),
             helper.make_node("Sigmoid", ["logit"], ["score"], name="sig")]
    outputs = [helper.make_tensor_value_info("score", TensorProto.FLOAT, [None, 2, 4, 4]),
               helper.make_tensor_value_info("box_o", TensorProto.FLOAT, [None, 4, 4, 4])]
    if second_reader:
        nodes.append(helper.make_node("Relu", ["cls"], ["cls_relu"], name="cls_relu"))
        outputs.append(helper.make_tensor_value_info("cls_relu", TensorProto.FLOAT, [None, 2, 4, 4]))
    g = helper.make_graph(nodes, "head", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3, 4, 4])],
                          outputs, [wb, bb, wc, bc, split])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _calib(tmp_path):
    """Calibration images without a confident object: x0 + x1 = 3.5 everywhere, so the class logit
    (x0 + x1 - 6) is -2.5 (score 0.076), while each channel spans [0, 3.5]."""
    rng = np.random.default_rng(1)
    x = rng.uniform(0.0, 3.5, size=(16, 3, 4, 4)).astype(np.float32)
    x[:, 1] = 3.5 - x[:, 0]
    np.savez(tmp_path / "calib.npz", x=x)
    return tmp_path / "calib.npz"


def test_concat_inputs_share_output_grid(tmp_path):
    model = prepare_proto(_head())
    res = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(_calib(tmp_path)))
    assert res.plan.shared == {"box": "cat", "cls": "cat"}
    assert {"box", "cls", "cat"} <= set(res.plan.activations)  # still observed for the range guard
    # the written Q/DQ of the inputs use the Concat output's scale and zero point initializers
    q_inputs = {n.input[0]: tuple(n.input[1:]) for n in res.proto.graph.node if n.op_type == "QuantizeLinear"}
    assert q_inputs["box"] == q_inputs["cls"] == q_inputs["cat"]


def test_shared_grid_keeps_a_score_above_the_calibration_max(tmp_path):
    """A confident object in the eval image (logit +1, score 0.73) must not be capped at the
    calibration maximum of the class logits (score 0.076): the shared grid reaches the box range."""
    proto = _head()
    model = prepare_proto(proto)
    res = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(_calib(tmp_path)))
    x = np.full((1, 3, 4, 4), 3.5, np.float32)  # inside every channel's calibrated range; logit 1.0

    ref = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(["score"], {"x": x})[0]
    out = ort.InferenceSession(res.proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        ["score"], {"x": x})[0]
    assert abs(float(ref.max()) - 0.7311) < 1e-3
    assert abs(float(out.max()) - float(ref.max())) < 0.02


def test_input_with_another_reader_keeps_its_own_grid(tmp_path):
    model = prepare_proto(_head(second_reader=True))
    res = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(_calib(tmp_path)))
    assert res.plan.shared == {"box": "cat"}
    assert "cls" not in res.plan.aliases


def test_disparate_concat_guard_still_sees_input_ranges(tmp_path):
    """The shared inputs are calibrated themselves, so a 1000x range ratio still keeps the Concat float."""
    proto = _head()
    for init in proto.graph.initializer:
        if init.name in ("wb", "bb"):
            init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init) * 1000, init.name))
    model = prepare_proto(proto)
    res = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(_calib(tmp_path)))
    assert res.plan.units["cat"].excluded
    assert not res.plan.shared
    assert any(i.node == "cat" and "ranges differ" in i.message for i in res.issues)


def _chain() -> onnx.ModelProto:
    rng = np.random.default_rng(2)
    inits = [numpy_helper.from_array((rng.normal(size=(4, 4, 3, 3)) * 0.3).astype(np.float32), f"w{i}")
             for i in range(3)]
    nodes = [helper.make_node("Conv", ["x", "w0"], ["a"], name="c0", pads=[1] * 4),
             helper.make_node("Conv", ["a", "w1"], ["b"], name="c1", pads=[1] * 4),
             helper.make_node("Conv", ["b", "w2"], ["y"], name="c2", pads=[1] * 4)]
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_excluded_conv_is_not_requantized_by_onnxruntime(tmp_path):
    """With Q/DQ on both sides of an excluded Conv, onnxruntime's WeightBiasQuantization runs it as
    QLinearConv anyway; its output must stay float so the exclusion holds."""
    rng = np.random.default_rng(3)
    np.savez(tmp_path / "calib.npz", x=rng.normal(size=(4, 1, 4, 8, 8)).astype(np.float32))
    model = prepare_proto(_chain())
    base = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(tmp_path / "calib.npz"))
    assert optimized_op_counts(base.proto)["QLinearConv"] == 3
    res = api.quantize(model, api.make_recipe("cpu-u8s8", exclude=["c1"]), data=str(tmp_path / "calib.npz"))
    assert "b" not in res.plan.activations
    assert any(i.node == "c1" and "stays float" in i.message for i in res.plan.issues)
    ops = optimized_op_counts(res.proto)
    assert ops["QLinearConv"] == 1  # c0 only; c1 float, c2 reads a float input
    assert ops["Conv"] + ops["FusedConv"] == 2


def test_detection_scores_metric():
    from workbench.core.analysis.metrics import detection_scores

    ref = np.zeros((2, 4 + 3, 5), np.float32)
    ref[0, 4, 2] = 0.80  # image 0, class 0 detected
    ref[1, 6, 0] = 0.20  # image 1, class 2 below the threshold
    q = ref.copy()
    q[0, 4, 2] = 0.77
    q[1, 6, 0] = 0.26  # appears in the quantized model: counts with its full change
    q[0, 0, :] = 500.0  # box rows are not scores
    assert detection_scores({"output0": q}, {"ref:output0": ref}) == pytest.approx(-0.06, abs=1e-6)
    q[1, 6, 0] = 0.24
    assert detection_scores({"output0": q}, {"ref:output0": ref}) == pytest.approx(-0.03, abs=1e-6)
    assert detection_scores({"output0": ref * 0}, {"ref:output0": ref * 0}) == 0.0


def test_detection_scores_line_says_what_its_negative_number_means():
    from workbench.core.analysis.evaluate import EvalReport

    rep = EvalReport([], 8, metric="detection_scores", float_metric=0.0, quant_metric=-0.0504)
    assert rep.format().splitlines()[-1] == (
        "metric detection_scores: float 0.0000  quantized -0.0504  (minus the largest change of a detected "
        "class's score against the float model: 0 is the same, -0.05 a change of 0.05)")
