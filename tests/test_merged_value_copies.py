"""MinMax Concat outputs merged through nearest Resize and MaxPool inputs (YOLOv8's SPPF and FPN
Concats): their ranges equal the directly observed ones, and histogram outputs are still fetched."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core.calibration import calibrate as calib_mod
from workbench.core.calibration.calibrate import calibrate
from workbench.core.calibration.instrument import instrument
from workbench.core.calibration.observers.merged import copies_every_value, find_merges, picks_input_values
from workbench.core.data.loader import open_data
from workbench.core.model.load import prepare_proto
from workbench.core.recipe.spec import QuantSpec

# C, Z = Conv(X); SPPF: K = Concat(C, MaxPool(C), MaxPool(MaxPool(C))) (merged from C);
# FPN: U = Concat(Resize2x(C), Z) (merged from C and Z); Q = Concat(MaxPool(C), Z) (C not in Q: fetched);
# H = Concat(Resize(C) half_pixel, Z) and F = Concat(Resize(C) x1.5, Z) (not every value copied: fetched).
MERGED = {"K", "U"}
FETCHED = {"C", "Z", "Q", "H", "F"}
TENSORS = sorted(MERGED | FETCHED)


def _model():
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "W"),
             numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "W2"),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "s2"),
             numpy_helper.from_array(np.array([1, 1, 1.5, 1.5], np.float32), "s15")]
    n = helper.make_node
    pool = {"kernel_shape": [5, 5], "pads": [2, 2, 2, 2]}
    nearest = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}
    nodes = [n("Conv", ["X", "W"], ["C"], name="conv"), n("Conv", ["X", "W2"], ["Z0"], name="conv2"),
             n("MaxPool", ["Z0"], ["Z"], name="zpool", kernel_shape=[2, 2], strides=[2, 2]),
             n("MaxPool", ["C"], ["P1"], name="p1", **pool), n("MaxPool", ["P1"], ["P2"], name="p2", **pool),
             n("Concat", ["C", "P1", "P2"], ["K"], name="sppf", axis=1),
             n("MaxPool", ["C"], ["PC"], name="pc", kernel_shape=[2, 2], strides=[2, 2]),
             n("Concat", ["PC", "Z"], ["Q"], name="q", axis=1),
             n("MaxPool", ["C"], ["CD"], name="cd", kernel_shape=[2, 2], strides=[2, 2]),
             n("Resize", ["CD", "", "s2"], ["R"], name="up", **nearest),
             n("Concat", ["R", "Z0"], ["U"], name="fpn", axis=1),
             n("Resize", ["CD", "", "s2"], ["RH"], name="uph", mode="nearest"),
             n("Concat", ["RH", "Z0"], ["H"], name="h", axis=1),
             n("Resize", ["CD", "", "s15"], ["RF"], name="upf", **nearest),
             n("Resize", ["Z", "", "s15"], ["ZF"], name="zf", **nearest),
             n("Concat", ["RF", "ZF"], ["F"], name="f", axis=1)]
    nodes += [n("ReduceSum", [t], [f"{t}_s"], name=f"r{t}", keepdims=0) for t in ("K", "Q", "U", "H", "F")]
    nodes.append(n("Sum", [f"{t}_s" for t in ("K", "Q", "U", "H", "F")], ["Y"], name="sum"))
    vi = helper.make_tensor_value_info
    g = helper.make_graph(nodes, "g", [vi("X", TensorProto.FLOAT, ["N", 3, 10, 10])], [vi("Y", TensorProto.FLOAT, None)],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    return prepare_proto(m)


class Plan:
    def __init__(self, activations):
        self.activations = activations


def _specs(observer: str) -> dict[str, QuantSpec]:
    specs = {t: QuantSpec(dtype="uint8", symmetric=False, observer=observer) for t in TENSORS}
    specs["CD"] = specs["Z0"] = specs["C"]  # the Resize input and the second Conv's output are observed too
    return specs


def test_which_concats_are_merged():
    model = _model()
    specs = _specs("minmax")
    merges = find_merges(model.proto, specs, set(specs) - MERGED - {"Q", "H", "F"})
    assert set(merges) == MERGED
    assert merges["K"].sources == ("C", "C", "C")  # both MaxPools stand for C, which K holds itself
    assert merges["U"].sources == ("CD", "Z0")  # the 2x Resize holds every value of CD
    # histograms: a Resize repeats values, a MaxPool keeps some: nothing merged through them
    pct = _specs("percentile")
    assert find_merges(model.proto, pct, set(pct) - MERGED - {"Q", "H", "F"}) == {}
    nodes = {n.name: n for n in model.proto.graph.node}
    consts = {t.name: t for t in model.proto.graph.initializer}
    assert copies_every_value(nodes["up"], consts, {})
    assert not copies_every_value(nodes["uph"], consts, {})  # half_pixel (the default): floor can skip a value
    assert not copies_every_value(nodes["upf"], consts, {})  # scale 1.5: not every element copied
    assert picks_input_values(nodes["p1"]) and picks_input_values(nodes["pc"])


@pytest.mark.parametrize("n", [12, 5])
def test_merged_ranges_equal_direct_and_real_values(tmp_path, monkeypatch, n):
    model = _model()
    x = np.random.default_rng(1).standard_normal((n, 3, 10, 10)).astype(np.float32)
    x[3] *= 4.0
    path = tmp_path / "calib.npz"
    np.savez(path, X=x)
    specs = _specs("minmax")
    res = {}
    for derive in (False, True):
        monkeypatch.setattr(calib_mod, "DERIVE", derive)
        res[derive] = calibrate(model, Plan(specs), open_data(path, model), batch_size=4)
    names = sorted(specs)
    with instrument(model.proto, names) as s:
        outs = [s.run({"X": x[i:i + 4]}) for i in range(0, n, 4)]
    values = {t: np.concatenate([o[k].ravel() for o in outs]) for k, t in enumerate(names)}
    for t in MERGED:
        direct = [float(v) for v in res[False].observers[t].compute_range()]
        merged = [float(v) for v in res[True].observers[t].compute_range()]
        assert merged == direct == [float(values[t].min()), float(values[t].max())], t
        qa, qb = res[False].observers[t].qparams(), res[True].observers[t].qparams()
        assert float(qa.scale) == float(qb.scale) and int(qa.zero_point) == int(qb.zero_point), t
