"""``s8s8`` on an attention block: the Softmax output (non-negative) uses the whole int8 grid
(zero point -128 over [0, max]) instead of half of it; the block's error is then within half a
percentage point of the default preset's (what is left is the symmetric grid s8s8 asks for on signed
tensors: planning every activation asymmetric gives the default's error exactly)."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
from qdq_helpers import attention_model

from workbench.core import api
from workbench.core.formats.numerics import sqnr_db
from workbench.core.issues import IssueCode
from workbench.core.model.load import prepare_proto
from workbench.core.runtime.session import add_outputs


def _data(tmp_path):
    x = np.random.default_rng(11).standard_normal((32, 8, 16)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", X=x[:16])
    return str(tmp_path / "calib.npz"), x[16:]


def _rel(proto, ref, x):
    out = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"X": x})[0]
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


def test_softmax_output_uses_the_whole_int8_grid_and_s8s8_is_close_to_the_default(tmp_path):
    proto = attention_model(None)
    calib, x = _data(tmp_path)
    model = prepare_proto(proto)
    s8 = api.quantize(model, api.make_recipe("s8s8"), data=calib)
    u8 = api.quantize(model, api.make_recipe("cpu-u8s8"), data=calib)
    p = s8.qparams["P"]
    assert (p.qtype, int(p.zero_point)) == ("int8", -128)
    notes = [i for i in s8.issues if i.code == IssueCode.NON_NEGATIVE_GRID]
    assert [i.node for i in notes] == ["softmax"]
    assert int(s8.qparams["Q"].zero_point) == 0  # signed tensors stay symmetric, as the preset says
    assert "S" not in s8.qparams  # the scores go to the float Softmax only: qk writes them float
    # P itself, fake-quantized with the planned grid vs a symmetric [-max, max] grid of the same dtype
    sess = ort.InferenceSession(add_outputs(proto, ["P"]).SerializeToString(), providers=["CPUExecutionProvider"])
    pf = sess.run(["P"], {"X": x})[0]
    step = float(p.scale)
    full = (np.clip(np.round(pf / step) - 128, -128, 127) + 128) * step
    half_step = float(pf.max()) / 127
    half = np.clip(np.round(pf / half_step), -127, 127) * half_step
    assert abs(step - float(pf.max()) / 255) < 0.02 * step
    assert sqnr_db(pf, full) > sqnr_db(pf, half) + 5.0  # one more bit: about 6 dB
    ref = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"X": x})[0]
    assert _rel(s8.proto, ref, x) <= _rel(u8.proto, ref, x) + 0.005


def test_the_non_negative_note_names_each_dtype_it_widened(tmp_path):
    """Mixed precision under s8s8: X -> MatMul -> Relu -> MatMul -> Relu -> MatMul, the second MatMul at
    int16, so the first Relu output is int16 and the second int8. The one note names both grids; it had
    named the first tensor's dtype for all of them."""
    from onnx import TensorProto, helper, numpy_helper

    from workbench.core.recipe.spec import NodeSettings, PartialSpec
    rng = np.random.default_rng(4)
    nodes, inits, prev = [], [], "X"
    for i in range(3):
        inits.append(numpy_helper.from_array(rng.standard_normal((16, 16)).astype(np.float32), f"W{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"W{i}"], [f"M{i}"], name=f"mm{i}"))
        prev = f"M{i}"
        if i < 2:
            nodes.append(helper.make_node("Relu", [prev], [f"R{i}"], name=f"relu{i}"))
            prev = f"R{i}"
    graph = helper.make_graph(nodes, "relus", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 16])],
                              [helper.make_tensor_value_info("M2", TensorProto.FLOAT, ["N", 16])], inits)
    model = prepare_proto(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9))
    np.savez(tmp_path / "x.npz", X=rng.standard_normal((8, 16)).astype(np.float32))
    recipe = api.make_recipe("s8s8").with_override_map({"mm1": NodeSettings(activation=PartialSpec(dtype="int16"))})
    res = api.quantize(model, recipe, data=str(tmp_path / "x.npz"))
    assert {t: res.plan.activations[t].dtype for t in ("R0", "R1")} == {"R0": "int16", "R1": "int8"}
    notes = [i.message for i in res.issues if i.code == IssueCode.NON_NEGATIVE_GRID]
    assert len(notes) == 1 and "2 non-negative tensors use the whole grid of their dtype (int16 / int8)" in notes[0]
