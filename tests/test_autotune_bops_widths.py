"""Autotune's GBOPs count each node as the file its recipe writes reads it (:func:`workbench.core.analysis.cost.plan_bits`):
MACs x weight bits x activation bits, each input at the bits of the grid the writer gives it: 8 x 8 for an 8-bit unit,
16 x 8 for int16 activations with 8-bit weights, 32 x 32 in float, and a float node that reads a quantized pair at
that pair's bits (32 x 16 for a float MatMul after an int16 Conv). Counted as onnxruntime runs them, int16 cost the
32 x 32 of float and an int16 MatMul with an 8-bit weight the 8 x 8 of MatMulNBits, so a point with units in float
counted more than every unit at int16 (ppocr_mobile_v2_cls: 124 int16 + 11 float 16.7069 GBOPs, all 135 at int16
16.7066, all 8-bit 1.0442). Counted at each unit's own setting, an 8-bit Conv after an int16 one counted 8 x 8 where
the file reads 16-bit values (the int16 Conv writes its output on its own grid) and a float MatMul 32 x 32.

Hand counts on a small model, x: 1 x 3 x 16 x 16, pads keep 16 x 16:
conv1 (4 x 3 x 3 x 3): 256 pixels x 4 x 3 x 9 = 27,648 MACs; conv2 (2 x 4 x 3 x 3): 256 x 2 x 4 x 9 = 18,432;
matmul (y 1 x 2 x 16 x 16 @ w3 16 x 5): 2 x 16 x 5 outputs x 16 = 2,560.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.analysis.cost import model_cost
from workbench.core.tuning.autotune import apply_levels, autotune, plan_cost

CONV1, CONV2, MATMUL = 27_648, 18_432, 2_560


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bops")
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.normal(0, 0.3, s).astype(np.float32), n)
             for n, s in (("w1", (4, 3, 3, 3)), ("w2", (2, 4, 3, 3)), ("w3", (16, 5)))]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["h"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w2"], ["y"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("MatMul", ["y", "w3"], ["z"], name="matmul")]
    graph = helper.make_graph(nodes, "bops", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 2, 16, 5])],
                              initializer=inits)
    path, data = tmp / "small.onnx", tmp / "calib.npz"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    np.savez(data, x=rng.normal(0, 1, (8, 3, 16, 16)).astype(np.float32))
    return api.open_model(path), str(data)


def _bops(model, levels: dict[str, str]) -> int:
    recipe = api.make_recipe("cpu-u8s8")
    return plan_cost(model_cost(model.proto), api.plan(model, apply_levels(recipe, levels)), model.proto.graph)[1]


def _file_bops(model, levels: dict[str, str], data: str, folder) -> int:
    """BOPs of the file ``quantize`` writes for ``levels``, as ``cost`` of that file counts them."""
    result = api.quantize(model, apply_levels(api.make_recipe("cpu-u8s8"), levels), data=data)
    path = folder / "q.onnx"
    onnx.save(result.proto, str(path))
    return api.quantized_file_cost(api.open_model(path))[0].bops


def test_bops_at_the_recipes_widths(small, tmp_path):
    model, data = small
    macs = CONV1 + CONV2 + MATMUL
    assert _bops(model, {}) == macs * 8 * 8 == 3_112_960
    every = {"conv1": "int16", "conv2": "int16", "matmul": "int16"}
    assert _bops(model, every) == macs * 16 * 8 == 6_225_920  # a16w8: 16 x 8 per MAC, not float's 32 x 32
    assert _bops(model, dict.fromkeys(every, "float")) == macs * 32 * 32 == 49_807_360
    # two units at int16, the MatMul float: more than all three at int16 (it was less: the int16 MatMul
    # counted 8 x 8 as MatMulNBits, the int16 Convs 32 x 32); the float MatMul reads conv2's int16 output
    mixed = {"conv1": "int16", "conv2": "int16", "matmul": "float"}
    assert _bops(model, mixed) == (CONV1 + CONV2) * 16 * 8 + MATMUL * 32 * 16 == 7_208_960
    # conv1 at int16 writes its output on its int16 grid: conv2 reads 16 bits (counted 8 x 8 before: 4,882,432)
    one = {"conv1": "int16"}
    assert _bops(model, one) == (CONV1 + CONV2) * 16 * 8 + MATMUL * 8 * 8 == 6_062_080
    for levels in ({}, every, mixed, one):
        assert _bops(model, levels) == _file_bops(model, levels, data, tmp_path), levels


def test_more_int16_units_never_count_fewer_bops(small):
    """Every curve point of a walk on this chain: promoting a unit (8-bit -> int16 -> float) never lowers the
    BOPs. (Not a rule in general: a tensor read by several units takes its first reader's grid once its
    producer is float, which can be narrower than the one its producer wrote.)"""
    model, data = small
    res = autotune(model, api.make_recipe("cpu-u8s8"), data=data, eval_data=data, metric="sqnr", min_score=300.0,
                   samples=8, eval_samples=4, max_trials=8)
    rank = {"int16": 1, "float": 2}
    for p in res.curve:
        assert p.bops == _bops(model, p.levels)
        for q in res.curve:
            if all(rank.get(q.levels.get(n), 0) >= rank.get(lv, 0) for n, lv in p.levels.items()):
                assert q.bops >= p.bops, (p.levels, q.levels)
