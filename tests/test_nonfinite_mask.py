"""Tensors that are non-finite by construction: a ``-inf`` causal mask keeps its unit float
(reported by name), and the rest of the attention block is quantized."""

from __future__ import annotations

import collections

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from qdq_helpers import attention_model

from workbench.cli import main
from workbench.core import api
from workbench.core.errors import RecipeError
from workbench.core.issues import IssueCode
from workbench.core.model.load import prepare_proto


def _write(tmp_path, fill):
    proto = attention_model(fill)
    onnx.save(proto, str(tmp_path / "attn.onnx"))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 8, 16)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", X=x)
    return proto, x


@pytest.mark.parametrize("preset", ["cpu-u8s8", "s8s8"])
def test_inf_mask_add_stays_float_and_the_matmuls_are_quantized(tmp_path, capsys, preset):
    proto, x = _write(tmp_path, -np.inf)
    code = main(["quantize", str(tmp_path / "attn.onnx"), "--preset", preset, "--data", str(tmp_path / "calib.npz"),
                 "-o", str(tmp_path / "q.onnx"), "--no-latency-check",  # its warning depends on this machine's timing
                 "--no-auto"])  # the preset's own ops (the compute-only variant never quantizes the mask Add)
    err = capsys.readouterr().err
    assert code == 0, err
    warned = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warned) == 1 and "add_mask" in warned[0] and "'mask'" in warned[0] and "inf" in warned[0]
    assert "calibration data" not in err and "NaN/Inf" not in err
    q = onnx.load(str(tmp_path / "q.onnx"))
    ops = collections.Counter(n.op_type for n in q.graph.node)
    produced_by = {o: n.op_type for n in q.graph.node for o in n.output}
    adds = [n for n in q.graph.node if n.op_type == "Add"]
    assert len(adds) == 1 and list(adds[0].input)[1] == "mask"  # the float mask, no DequantizeLinear
    assert not [n for n in q.graph.node if n.op_type == "QuantizeLinear" and adds[0].output[0] in n.input]
    # all 6 MatMuls read both inputs through a DequantizeLinear: 4 weights and 8 activation inputs
    # (X, Q, Kt, P, V, O; X is shared by three); the scores (read only by the float mask Add) and the
    # output Y stay float (MatMulIntegerToFloat), so 7 activation pairs
    mm_inputs = [i for n in q.graph.node if n.op_type == "MatMul" for i in n.input]
    assert ops["MatMul"] == 6 and len(mm_inputs) == 12
    assert all(produced_by.get(i) == "DequantizeLinear" for i in mm_inputs)
    assert ops["DequantizeLinear"] == 11 and ops["QuantizeLinear"] == 7
    mask = {i.name for i in q.graph.initializer if i.name == "mask"}
    assert mask == {"mask"}  # the mask is stored as given, in float
    f = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    s = ort.InferenceSession(str(tmp_path / "q.onnx"), providers=["CPUExecutionProvider"])
    ref, out = f.run(None, {"X": x})[0], s.run(None, {"X": x})[0]
    assert np.isfinite(out).all()
    rel = float(np.linalg.norm(out - ref) / np.linalg.norm(ref))
    assert rel < 0.1, rel


def test_inf_mask_issue_has_a_code_and_names_the_tensor(tmp_path):
    proto, x = _write(tmp_path, -np.inf)
    res = api.quantize(prepare_proto(proto), api.make_recipe("cpu-u8s8"), data=str(tmp_path / "calib.npz"))
    hits = [i for i in res.issues if i.code == IssueCode.NONFINITE_TENSOR]
    assert [(i.node, i.severity) for i in hits] == [("add_mask", "warning")] and "'mask'" in hits[0].message
    assert res.plan.units["add_mask"].excluded
    assert all(not res.plan.units[n].excluded for n in ("q_proj", "k_proj", "v_proj", "qk", "pv", "o_proj"))


def test_inf_mask_without_guard_is_refused_by_name(tmp_path):
    proto, _ = _write(tmp_path, -np.inf)
    with pytest.raises(RecipeError, match="'mask'"):
        api.quantize(prepare_proto(proto), api.make_recipe("cpu-u8s8"), data=str(tmp_path / "calib.npz"), guard=False)


def _log_mask_model() -> onnx.ModelProto:
    """The attention block with ``scores + Log(m)`` for a 0/1 padding mask input ``m`` [N, 1, 8]:
    the data is finite, the model makes -inf where m == 0."""
    proto = attention_model(None)
    g = proto.graph
    g.input.append(helper.make_tensor_value_info("m", TensorProto.FLOAT, ["N", 1, 8]))
    soft = next(n for n in g.node if n.op_type == "Softmax")
    soft.input[0] = "Sm"
    at = list(g.node).index(soft)
    g.node.insert(at, helper.make_node("Add", ["S", "L"], ["Sm"], name="add_mask"))
    g.node.insert(at, helper.make_node("Log", ["m"], ["L"], name="log_mask"))
    onnx.checker.check_model(proto)
    return proto


def test_nonfinite_made_by_the_model_from_finite_data_keeps_its_unit_float(tmp_path, capsys, caplog):
    proto = _log_mask_model()
    onnx.save(proto, str(tmp_path / "attn.onnx"))
    rng = np.random.default_rng(2)
    x = rng.standard_normal((16, 8, 16)).astype(np.float32)
    m = np.ones((16, 1, 8), np.float32)
    m[:, :, 6:] = 0.0  # two padded positions
    np.savez(tmp_path / "calib.npz", X=x, m=m)
    code = main(["quantize", str(tmp_path / "attn.onnx"), "--data", str(tmp_path / "calib.npz"),
                 "-o", str(tmp_path / "q.onnx"), "--no-latency-check"])  # its warning depends on the timing
    err = capsys.readouterr().err
    assert code == 0, err
    log = caplog.text
    assert "Check the calibration data" not in log and "L: NaN/Inf computed by the model from finite calibration" in log
    calib = [line for line in err.splitlines() if line.startswith("warning: Calibration:")]
    assert [line.split(":")[2].strip() for line in calib] == ["L", "Sm"]  # the log, once each (two passes log it)
    warned = [line for line in err.splitlines() if line.startswith("warning:") and line not in calib]
    assert len(warned) == 1 and "add_mask" in warned[0] and "'L'" in warned[0], warned
    q = onnx.load(str(tmp_path / "q.onnx"))
    add = next(n for n in q.graph.node if n.name == "add_mask")
    assert add.input[1] == "L"  # the -inf tensor reaches the Add in float
    f = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    s = ort.InferenceSession(str(tmp_path / "q.onnx"), providers=["CPUExecutionProvider"])
    ref, out = f.run(None, {"X": x, "m": m})[0], s.run(None, {"X": x, "m": m})[0]
    assert np.isfinite(out).all() and float(np.linalg.norm(out - ref) / np.linalg.norm(ref)) < 0.1


def test_nonfinite_calibration_data_is_reported_with_the_input_and_sample(tmp_path, capsys, caplog):
    proto = attention_model(None)
    onnx.save(proto, str(tmp_path / "attn.onnx"))
    x = np.random.default_rng(3).standard_normal((8, 8, 16)).astype(np.float32)
    x[5, 2, 3] = np.nan
    np.savez(tmp_path / "calib.npz", X=x)
    code = main(["quantize", str(tmp_path / "attn.onnx"), "--data", str(tmp_path / "calib.npz"),
                 "-o", str(tmp_path / "q.onnx"), "--no-latency-check"])  # its probes may keep qk / pv float here
    err = capsys.readouterr().err
    assert code == 0, err
    assert "input 'X' of the calibration data holds NaN/Inf: sample 5 (1)" in caplog.text
    assert "computed by the model" not in caplog.text and "kept in float" not in err
