"""Latency placement keeps at least MIN_INT8_SHARE (85 %) of the Conv/MatMul units int8: of the units measured
slower as int8 it keeps float those with the largest measured saving first, and names the rest, quantized, in one
note. ppocrv4_rec kept 11 of its 51 units float (40/51, 78 % int8) where 7 (44/51) measured as fast.

The probes are faked (``conv_unit_latency`` returns fixed timings per node), so what is kept float is exact."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.issues import IssueCode
from workbench.core.pipeline import latency_check, latency_placement
from workbench.core.runtime.latency import LatencyComparison

PAIRS = 10  # pw0, dw0, ..., pw9, dw9: 20 Conv units, 3 may be kept float (17 of 20 int8 is exactly 0.85)

#: The faked probes: int8 / float microseconds of each depthwise Conv (the pointwise ones are not probed).
#: Slower as int8: dw2 (80 us), dw0 (50), dw4 (40), dw1 (30), dw3 (10); dw5 at 1.04x is within KEEP_FLOAT_ABOVE.
PROBE_US = {"dw0": (100, 150), "dw1": (100, 130), "dw2": (100, 180), "dw3": (100, 110), "dw4": (100, 140),
            "dw5": (100, 104)}


@pytest.fixture(autouse=True)
def _scripted(fake_latency, monkeypatch):
    """The whole model measures at half its float latency (no fallback); each depthwise probe as PROBE_US says
    (the others 0.9x)."""
    fake_latency.quantized_at(0.5)
    probed = []

    def conv_unit_latency(node, weight_shape, x_shape, opset=17):
        probed.append(node.name)
        f, q = PROBE_US.get(node.name, (100, 90))
        return LatencyComparison(f * 1e-6, q * 1e-6, 9, f * 1e-6, q * 1e-6)

    monkeypatch.setattr(latency_placement, "conv_unit_latency", conv_unit_latency)
    return probed


def _chain(tmp_path):
    """A chain of PAIRS x (pointwise 4->4 Conv, depthwise 3x3 Conv), input [N, 4, 8, 8], with calibration data."""
    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "X"
    for i in range(PAIRS):
        for kind, shape, attrs in (("pw", [4, 4, 1, 1], {"kernel_shape": [1, 1]}),
                                   ("dw", [4, 1, 3, 3], {"group": 4, "kernel_shape": [3, 3], "pads": [1, 1, 1, 1]})):
            name = f"{kind}{i}"
            y = "Y" if name == f"dw{PAIRS - 1}" else f"{name}_out"
            inits += [numpy_helper.from_array((rng.standard_normal(shape) * 0.5).astype(np.float32), f"W_{name}"),
                      numpy_helper.from_array((rng.standard_normal(4) * 0.1).astype(np.float32), f"B_{name}")]
            nodes.append(helper.make_node("Conv", [x, f"W_{name}", f"B_{name}"], [y], name=name, **attrs))
            x = y
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 4, 8, 8])  # noqa: E731
    m = helper.make_model(helper.make_graph(nodes, "chain", [vi("X")], [vi("Y")], inits),
                          opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, tmp_path / "chain.onnx")
    np.savez(tmp_path / "calib.npz", X=rng.standard_normal((4, 4, 8, 8)).astype(np.float32))
    return api.open_model(str(tmp_path / "chain.onnx")), str(tmp_path / "calib.npz")


def _float_units(res) -> list[str]:
    return sorted(n for n, u in res.plan.units.items() if u.excluded)


def _capped_notes(res) -> list:
    return [i for i in res.issues if i.code == IssueCode.LATENCY_KEPT_FLOAT and not i.node]


def test_at_most_three_of_twenty_conv_units_are_kept_float_largest_saving_first(tmp_path, _scripted):
    model, data = _chain(tmp_path)
    recipe = api.make_recipe("cpu-u8s8")
    assert len(api.plan(model, recipe).units) == 20 and latency_placement.most_kept_float(20) == 3
    res = api.quantize(model, recipe, data=data, latency_check=True)
    assert sorted(_scripted) == sorted(f"dw{i}" for i in range(PAIRS))  # every depthwise Conv probed once
    assert _float_units(res) == ["dw0", "dw2", "dw4"]  # 80, 50 and 40 us; dw1 (30) and dw3 (10) quantized
    assert sum(not u.excluded for u in res.plan.units.values()) == 17  # 17 / 20 = 0.85, the boundary itself
    kept = [i for i in res.issues if i.code == IssueCode.LATENCY_KEPT_FLOAT and i.node]
    assert [(i.node, i.units, i.ratio) for i in kept] == [("dw0", ("dw0",), 1.5), ("dw2", ("dw2",), 1.8),
                                                          ("dw4", ("dw4",), 1.4)]
    (note,) = _capped_notes(res)
    assert note.severity == "info" and note.units == () and note.ratio is None
    assert note.message.startswith("latency placement: 2 more units (dw1, dw3) measured slower as int8 by their "
                                   "probes (40 us in all, onnxruntime CPU, 1 thread) and were quantized to keep 85% "
                                   "of the Conv/ConvTranspose/MatMul/Gemm units int8 (17 of 20)")
    # the result's recipe excludes the three kept float, so a replay writes the same model without probing
    assert sorted(n for n, o in res.recipe.overrides.items() if o.exclude) == ["dw0", "dw2", "dw4"]
    _scripted.clear()
    assert api.quantize(model, res.recipe, data=data).proto == res.proto and not _scripted
    # a saved project's latency_kept names the three with their probes' ratio, not the note on the others
    record = api.latency_kept_record(["dw0", "dw2", "dw4"], res.issues)
    assert [(e.node, e.ratio) for e in record] == [("dw0", 1.5), ("dw2", 1.8), ("dw4", 1.4)]


@pytest.mark.parametrize("named,floated,capped,int8", [
    # an override naming dw2 (the largest saving): dw2 stays quantized unprobed, the next three are kept float
    ({"overrides": {"dw2": {"activation": {"observer": "minmax"}}}}, ["dw0", "dw1", "dw4"], "1 more unit (dw3)", 17),
    # the user's own exclusion of pw0: 19 Conv units quantized as planned, so 2 may be kept float (17 of 19 int8)
    ({"overrides": {"pw0": {"exclude": True}}}, ["dw0", "dw2", "pw0"], "3 more units (dw1, dw3, dw4)", 17),
    # the user excludes dw2 itself: not probed; of 19, dw0 and dw4 are kept float
    ({"overrides": {"dw2": {"exclude": True}}}, ["dw0", "dw2", "dw4"], "2 more units (dw1, dw3)", 17),
])
def test_the_users_overrides_and_exclusions_win(tmp_path, _scripted, named, floated, capped, int8):
    model, data = _chain(tmp_path)
    recipe = api.Recipe.from_json(json.dumps({"preset": "cpu-u8s8", **named}))
    res = api.quantize(model, recipe, data=data, latency_check=True)
    assert not set(named["overrides"]) & set(_scripted)  # a unit the user named is never probed
    assert _float_units(res) == floated and sum(not u.excluded for u in res.plan.units.values()) == int8
    (note,) = _capped_notes(res)
    assert note.message.startswith(f"latency placement: {capped} measured slower as int8")
    for name in named["overrides"]:
        assert res.recipe.overrides[name] == recipe.overrides[name]  # the user's setting, untouched


def test_the_note_on_units_quantized_for_the_share_survives_a_latency_fallback(tmp_path, monkeypatch):
    """The fallback replaces the first run's issues by its trial's and keeps the placement's notes: the one on
    the units left quantized for the int8 share with them. Its trial (the recipe with the placement's three
    exclusions and an island float) does not keep dw1 and dw3 float on a share counted over fewer units."""
    model, data = _chain(tmp_path)

    def compare(float_model, quant_model, feed, **_):
        dq = {o for n in quant_model.graph.node if n.op_type == "DequantizeLinear" for o in n.output}
        quantized = sum(n.op_type == "Conv" and n.input[1] in dq for n in quant_model.graph.node)
        ratio = 1.5 if quantized == 17 else 0.9  # as placed: slower; with an island float: faster
        return LatencyComparison(1e-3, 1e-3 * ratio, 9, 1e-3, 1e-3 * ratio)

    monkeypatch.setattr(latency_check, "compare", compare)
    res = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data, latency_check=True)
    assert ("latency-fallback", True) in res.passes
    assert _float_units(res) == ["dw0", "dw2", "dw4", "pw0"]  # pw0: the fallback's island of one unit
    assert [i.node for i in res.issues if i.code == IssueCode.LATENCY_KEPT_FLOAT and i.units == (i.node,)
            and "as QLinearConv" in i.message] == ["dw0", "dw2", "dw4"]
    (note,) = _capped_notes(res)
    assert "2 more units (dw1, dw3)" in note.message
