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
