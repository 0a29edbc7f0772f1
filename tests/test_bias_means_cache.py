"""Bias correction's Conv input means are kept between the quantizes of one job and of the recipe choice
(transforms.bias_correction.InputMeans): the float model runs only for tensors and grids not seen yet."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.recipe.spec import NodeSettings, PartialSpec
from workbench.core.transforms import bias_correction
from workbench.core.transforms.bias_correction import InputMeans, bias_shifts

DEPTH = 5


def _conv_chain(rng) -> onnx.ModelProto:
    """x [N, 4, 8, 8] -> DEPTH x (Conv 3x3 with bias -> Relu) -> y: DEPTH correctable Convs."""
    nodes, inits, prev = [], [], "x"
    for i in range(DEPTH):
        inits += [numpy_helper.from_array((rng.normal(size=(4, 4, 3, 3)) * 0.3).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array((rng.normal(size=4) * 0.1).astype(np.float32), f"b{i}")]
        nodes += [helper.make_node("Conv", [prev, f"w{i}", f"b{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}")]
        prev = f"r{i}"
    nodes[-1].output[0] = "y"
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 4, 8, 8])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _setup(tmp_path):
    rng = np.random.default_rng(3)
    path = tmp_path / "chain.onnx"
    path.write_bytes(_conv_chain(rng).SerializeToString())
    x = (rng.exponential(1.0, (24, 4, 8, 8)) + 0.2).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=x)
    return api.open_model(path), str(tmp_path / "calib.npz"), x


def _count_runs(monkeypatch) -> list[list[str]]:
    """The tensors of every input_means call from here on."""
    calls: list[list[str]] = []
    real = bias_correction.input_means

    def counted(proto, tensors, batches, rounding=None):
        calls.append(list(tensors))
        return real(proto, tensors, batches, rounding)
    monkeypatch.setattr(bias_correction, "input_means", counted)
    return calls


def test_kept_means_give_the_shifts_of_a_fresh_run_and_run_only_for_what_they_lack(tmp_path, monkeypatch):
    model, data, x = _setup(tmp_path)
    res = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data)
    calls = _count_runs(monkeypatch)
    fresh = bias_shifts(model, res.plan, res.proto, [{"x": x}])
    kept = InputMeans()
    first = bias_shifts(model, res.plan, res.proto, [{"x": x}], means=kept)
    assert len(calls) == 2 and sorted(first) == sorted(fresh) == [f"b{i}" for i in range(DEPTH)]
    assert all(np.array_equal(first[b], fresh[b]) for b in fresh)  # the same bits as without kept means

    def unread():
        raise AssertionError("the rows were read although every mean is kept")
        yield  # a generator

    again = bias_shifts(model, res.plan, res.proto, unread(), means=kept)
    assert len(calls) == 2 and all(np.array_equal(again[b], fresh[b]) for b in fresh)
    # conv2's input on another grid: only that tensor runs again
    wider = api.quantize(model, api.make_recipe("cpu-u8s8").with_override_map(
        {"conv1": NodeSettings(activation=PartialSpec(dtype="uint16"))}), data=data)  # its output r1 (Relu folded)
    moved = bias_shifts(model, wider.plan, wider.proto, [{"x": x}], means=kept)
    assert calls[2:] == [["r1"]]
    assert np.array_equal(moved["b0"], fresh["b0"]) and not np.array_equal(moved["b2"], fresh["b2"])


def test_the_recipe_choice_runs_the_float_model_once_per_set_of_grids(tmp_path, monkeypatch):
    """Every variant and promoted group is scored with bias correction; with kept means the float model
    runs for the preset's MinMax grids and the MSE variants' grids, not once per score (it ran 7 times)."""
    model, data, _ = _setup(tmp_path)
    calls = _count_runs(monkeypatch)
    convs: list[str] = []
    real_shift = bias_correction.conv_output_shift
    monkeypatch.setattr(bias_correction, "conv_output_shift",
                        lambda node, dw, mean: convs.append(node.name) or real_shift(node, dw, mean))
    rep = api.choose_recipe(model, api.make_recipe("cpu-u8s8"), data)
    scored = len(rep.scores) + len(rep.promotion.tried)
    assert scored >= 5 and rep.recipe.bias_correction
    assert 1 <= len(calls) <= 2, calls
    assert len(calls[0]) == DEPTH  # every Conv input of the first variant at once
    # each Conv's two shift terms once per grid set, not once per score (2 x DEPTH x scored before)
    assert len(convs) <= 2 * 2 * DEPTH < 2 * DEPTH * scored, (len(convs), scored)
