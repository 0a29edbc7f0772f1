"""Bias correction's Conv input means are kept between the quantizes of one job and of the recipe choice
(transforms.bias_correction.InputMeans): the float model runs only for tensors and grids not seen yet."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from workbench.core import api
from workbench.core.formats.qparams import QParams
from workbench.core.recipe.spec import NodeSettings, PartialSpec, Rule
from workbench.core.transforms import bias_correction
from workbench.core.transforms.bias_correction import (
    InputMeans,
    bias_shifts,
    correctable_units,
    expected_grids,
    grid_key,
    input_means,
    input_qparams,
)

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

    def counted(proto, tensors, batches, rounding=None, **kw):
        calls.append(list(tensors))
        return real(proto, tensors, batches, rounding, **kw)
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
    runs once, for the preset's MinMax grids and the MSE variants' grids together, not once per score (it
    ran 7 times) nor once per set of grids (twice)."""
    model, data, x = _setup(tmp_path)
    np.savez(data, x=(x - 0.2) ** 2 + 0.2)  # a longer tail: the MSE ranges clip three Conv inputs the MinMax ones do not
    calls = _count_runs(monkeypatch)
    convs: list[str] = []
    sessions: list[int] = []
    real_shifts = bias_correction.conv_output_shifts
    monkeypatch.setattr(bias_correction, "conv_output_shifts",
                        lambda terms: convs.extend(t[0].name for t in terms) or sessions.append(len(terms))
                        or real_shifts(terms))
    rep = api.choose_recipe(model, api.make_recipe("cpu-u8s8"), data)
    scored = len(rep.scores) + len(rep.promotion.tried)
    assert scored >= 5 and rep.recipe.bias_correction
    # the MSE variants' grids were expected, so rounded in the run the preset's correction made (without:
    # a second run for r0, r1, r2)
    assert calls == [["r0", "r1", "r2", "r3", "x"]]
    assert len(calls[0]) == DEPTH  # every Conv input of the first variant at once
    # each Conv's two shift terms once per grid set, not once per score (2 x DEPTH x scored before)
    assert len(convs) <= 2 * 2 * DEPTH < 2 * DEPTH * scored, (len(convs), scored)
    # the terms a score lacks are computed in one session, not one each
    assert 0 < len(sessions) <= scored and sum(sessions) == len(convs) and max(sessions) > 1


def _grid(scale: float, zp: int) -> QParams:
    return QParams(np.array(scale, np.float32), np.array(zp, np.uint8), "uint8")


def test_several_grids_in_one_run_are_the_bits_of_one_run_per_grid(tmp_path):
    model, _, x = _setup(tmp_path)
    batches = [{"x": x[:8]}, {"x": x[8:11]}, {"x": x[11:]}]
    grids = {"r0": [_grid(0.05, 3), _grid(0.013, 0)], "r2": [_grid(0.2, 128)]}
    one = input_means(model.proto, ["r0", "r2"], batches, {"r0": _grid(0.02, 0)}, more=grids)
    for t, qps in grids.items():
        for qp in qps:
            alone = input_means(model.proto, [t], batches, {t: qp})
            got = one[grid_key(t, qp)]
            assert got.shape == (1, 4, 8, 8) and got.tobytes() == alone[(t, "rounded")].tobytes()
            assert got.tobytes() != alone[t].tobytes()  # rounded, not the float mean
    plain = input_means(model.proto, ["r0", "r2"], batches, {"r0": _grid(0.02, 0)})
    assert set(one) - set(plain) == {grid_key(t, qp) for t, qps in grids.items() for qp in qps}
    assert all(one[k].tobytes() == plain[k].tobytes() for k in plain)


def test_expected_grids_are_rounded_in_the_run_a_call_makes_and_a_later_call_runs_nothing(tmp_path, monkeypatch):
    model, data, x = _setup(tmp_path)
    first = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data)
    other = api.quantize(model, api.make_recipe("cpu-u8s8").model_copy(
        update={"rules": [Rule(name="*", activation=PartialSpec(observer="mse"))]}), data=data)
    predicted = expected_grids(other.plan, other.calibration.observers)
    written = input_qparams(other.proto)
    assert sorted(predicted) == sorted(["x"] + [f"r{i}" for i in range(DEPTH - 1)])  # each Conv input ...
    for u in correctable_units(other.plan):  # ... on the grid the written model has in front of its Conv
        assert grid_key(u.inputs[0], predicted[u.inputs[0]][0]) == grid_key(u.inputs[0], written[u.node])
    minmax = input_qparams(first.proto)
    # MSE moves two of the grids: without them expected, the second call would run the float model again
    assert sum(grid_key("", minmax[n]) != grid_key("", written[n]) for n in written) == 2
    calls = _count_runs(monkeypatch)
    kept = InputMeans()
    kept.expect(model.proto, predicted)
    bias_shifts(model, first.plan, first.proto, [{"x": x}], means=kept)
    assert len(calls) == 1

    def unread():
        raise AssertionError("the rows were read although every grid was expected")
        yield  # a generator

    got = bias_shifts(model, other.plan, other.proto, unread(), means=kept)
    assert len(calls) == 1
    fresh = bias_shifts(model, other.plan, other.proto, [{"x": x}])
    assert sorted(got) == sorted(fresh) and all(got[b].tobytes() == fresh[b].tobytes() for b in fresh)


def _split_model(rng) -> onnx.ModelProto:
    """x [N, 4, 8, 8] -> Conv -> Relu -> r -> Split (2 + 2 channels) -> s0, s1 -> Conv each -> Add -> y."""
    def w(name, cin):
        return numpy_helper.from_array((rng.normal(size=(4, cin, 3, 3)) * 0.3).astype(np.float32), name)

    def b(name):
        return numpy_helper.from_array((rng.normal(size=4) * 0.1).astype(np.float32), name)

    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], name="conv0", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c0"], ["r"], name="relu"),
             helper.make_node("Split", ["r", "sizes"], ["s0", "s1"], name="split", axis=1),
             helper.make_node("Conv", ["s0", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["s1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c1", "c2"], ["y"], name="add")]
    inits = [w("w0", 4), b("b0"), w("w1", 2), b("b1"), w("w2", 2), b("b2"),
             numpy_helper.from_array(np.array([2, 2], np.int64), "sizes")]
    graph = helper.make_graph(nodes, "split", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 4, 8, 8])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def test_own_expected_grids_are_those_a_plan_without_the_alias_writes(tmp_path):
    """A Split output shares its input's grid; where the Split is kept float it gets its own, which
    ``expected_grids(own=True)`` tells before that model is written (the recipe choice's step 6)."""
    rng = np.random.default_rng(5)
    path = tmp_path / "split.onnx"
    path.write_bytes(_split_model(rng).SerializeToString())
    np.savez(tmp_path / "calib.npz", x=rng.normal(size=(16, 4, 8, 8)).astype(np.float32))
    model, data = api.open_model(path), str(tmp_path / "calib.npz")
    recipe = api.make_recipe("cpu-u8s8")
    shared = api.quantize(model, recipe, data=data)
    assert shared.plan.grid_of("s0") == shared.plan.grid_of("s1") == "r"
    alone = api.quantize(model, recipe.with_excluded(["split"]), data=data)
    written = input_qparams(alone.proto)
    both = expected_grids(shared.plan, shared.calibration.observers)
    assert grid_key("", both["s0"][0]) == grid_key("", both["s1"][0]) == grid_key("", input_qparams(shared.proto)["conv1"])
    own = expected_grids(shared.plan, alone.calibration.observers, own=True)
    assert sorted(own) == ["s0", "s1"]
    assert [grid_key("", own[t][0]) for t in ("s0", "s1")] == [grid_key("", written[n]) for n in ("conv1", "conv2")]
    assert grid_key("", written["conv1"]) != grid_key("", written["conv2"])  # each on its own range
    assert expected_grids(alone.plan, alone.calibration.observers, own=True) == {}  # nothing aliased there


def test_weights_dequantized_for_some_nodes_are_those_of_all_and_a_model_without_convs_dequantizes_none(
        tmp_path, monkeypatch):
    model, data, x = _setup(tmp_path)
    res = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data)
    every = bias_correction.dequantized_weights(res.proto)
    some = bias_correction.dequantized_weights(res.proto, {"conv1", "conv3"})
    assert sorted(every) == [f"conv{i}" for i in range(DEPTH)] and sorted(some) == ["conv1", "conv3"]
    assert all(some[n].tobytes() == every[n].tobytes() for n in some)
    # no Conv quantized (kept float): bias correction dequantizes no weight
    floats = api.quantize(model, api.make_recipe("cpu-u8s8").with_excluded([f"conv{i}" for i in range(DEPTH)]),
                          data=data)
    monkeypatch.setattr(bias_correction, "quantized_weights",
                        lambda *a: (_ for _ in ()).throw(AssertionError("weights read")))
    assert bias_shifts(model, floats.plan, floats.proto, [{"x": x}]) == {}


def test_kept_shifts_dequantize_no_weight_and_a_weight_on_another_grid_is_dequantized_alone(tmp_path, monkeypatch):
    """bias_shifts keys its kept shifts by the integer weight, its scale and zero point: a call whose shifts
    are all kept dequantizes no weight; one Conv's weight on another grid dequantizes that weight alone,
    to DequantizeLinear's values."""
    model, data, x = _setup(tmp_path)
    recipe = api.make_recipe("cpu-u8s8")
    res = api.quantize(model, recipe, data=data)
    kept = InputMeans()
    first = bias_shifts(model, res.plan, res.proto, [{"x": x}], means=kept)
    done: list[int] = []
    real = bias_correction.QuantizedWeight.value

    def value(self):  # counts the weights dequantized (a weight's second call returns the kept value)
        if self._value is None:
            done.append(self.shape[0])
        return real(self)
    monkeypatch.setattr(bias_correction.QuantizedWeight, "value", value)
    again = bias_shifts(model, res.plan, res.proto, [{"x": x}], means=kept)
    assert done == [] and all(np.array_equal(again[b], first[b]) for b in first)
    wide = api.quantize(model, recipe.with_override_map({"conv2": NodeSettings(weight=PartialSpec(dtype="int4"))}),
                        data=data)
    moved = bias_shifts(model, wide.plan, wide.proto, [{"x": x}], means=kept)
    assert len(done) == 1 and not np.array_equal(moved["b2"], first["b2"])
    assert all(np.array_equal(moved[b], first[b]) for b in first if b != "b2")
    fresh = bias_shifts(model, wide.plan, wide.proto, [{"x": x}])
    assert all(np.array_equal(moved[b], fresh[b]) for b in fresh)
    weights = bias_correction.quantized_weights(wide.proto)
    ref = ReferenceEvaluator(wide.proto)
    w2 = next(n.input[1] for n in wide.proto.graph.node if n.name == "conv2")
    got = ref.run([w2], {"x": x[:1]})[0]
    assert np.array_equal(weights["conv2"].value(), got.astype(np.float64))
    assert weights["conv2"].key != weights["conv1"].key
