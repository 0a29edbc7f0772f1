"""A Concat unit's output is summed once, through its input segments (unit_error._add_run): it was summed whole
and then segment by segment, every value read twice (nudenet_320n has 19 such Concats). Its row (the worst
segment's figures) is bit for bit what it was; the whole output's sums differ only in the order of the
float64 additions."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.analysis import unit_error
from workbench.core.formats.error_sums import error_sums
from workbench.core.runtime.session import add_outputs, make_session


def _concat_model(tmp_path):
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((4, 8)).astype(np.float32), "W1")
    w2 = numpy_helper.from_array((rng.standard_normal((4, 24)) * 3).astype(np.float32), "W2")  # a wider range
    nodes = [helper.make_node("MatMul", ["X", "W1"], ["a"], name="mm1"),
             helper.make_node("MatMul", ["X", "W2"], ["b"], name="mm2"),
             helper.make_node("Concat", ["a", "b"], ["c"], name="cat", axis=1),
             helper.make_node("MatMul", ["c", "W3"], ["Y"], name="mm3")]
    w3 = numpy_helper.from_array(rng.standard_normal((32, 4)).astype(np.float32), "W3")
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 4])], [w1, w2, w3])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, tmp_path / "m.onnx")
    np.savez(tmp_path / "calib.npz", X=rng.standard_normal((12, 4)).astype(np.float32))
    return api.open_model(str(tmp_path / "m.onnx")), str(tmp_path / "calib.npz")


def test_a_concat_is_summed_once_through_its_segments(tmp_path, monkeypatch):
    model, data = _concat_model(tmp_path)
    res = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data)
    pairs = unit_error.unit_outputs(res.plan, res.tensor_map)
    segs = unit_error.unit_segments(model.proto, pairs)
    assert list(segs) == ["c"] and [n for _t, n in segs["c"][1]] == [8, 24]
    x = np.load(data)["X"]
    f = make_session(add_outputs(model.proto, list(pairs))).run(list(pairs), {"X": x})
    q_names = [pairs[t][2] for t in pairs]
    q = make_session(add_outputs(res.proto, q_names), optimize=False).run(q_names, {"X": x})
    ref, quant = dict(zip(pairs, f, strict=True)), dict(zip(pairs, q, strict=True))
    read = []
    real = unit_error.error_sums
    monkeypatch.setattr(unit_error, "error_sums", lambda r, a: read.append(np.size(r)) or real(r, a))
    sums = unit_error.accumulate(model.proto, res.proto, pairs, segs, [{"X": x}])
    assert sum(read) == sum(ref[t].size for t in pairs) == 816  # each value once: was 1200, the Concat's read twice
    assert sums[("c", "a")] == real(ref["c"][:, :8], quant["c"][:, :8])
    assert sums[("c", "b")] == real(ref["c"][:, 8:], quant["c"][:, 8:])
    whole = error_sums(ref["c"], quant["c"])
    assert sums["c"][4:] == whole[4:]  # max abs error and count: exact
    assert sums["c"][:4] == pytest.approx(whole[:4], rel=1e-12)  # float64 sums in another order
    rows = unit_error.unit_rows(pairs, segs, sums)
    cat = next(r for r in rows if r.node == "cat")
    worst = min((unit_error._Acc.of(sums[("c", i)]) for i in ("a", "b")), key=lambda a: a.figures()[0])
    assert (cat.sqnr_db, cat.mse, cat.cosine, cat.max_abs) == worst.figures()
