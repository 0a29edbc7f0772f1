"""Tensors that are non-finite by construction: a ``-inf`` causal mask keeps its unit float
(reported by name), and the rest of the attention block is quantized."""

from __future__ import annotations

import collections

import numpy as np
import onnx
import onnxruntime as ort
import pytest
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
                 "-o", str(tmp_path / "q.onnx")])
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
    # (X, Q, Kt, P, V, O; X is shared by three), and the output Y is quantized too
    mm_inputs = [i for n in q.graph.node if n.op_type == "MatMul" for i in n.input]
    assert ops["MatMul"] == 6 and len(mm_inputs) == 12
    assert all(produced_by.get(i) == "DequantizeLinear" for i in mm_inputs)
    assert ops["DequantizeLinear"] == 13 and ops["QuantizeLinear"] == 9
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
