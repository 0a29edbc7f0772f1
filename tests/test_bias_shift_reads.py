"""bias_shifts reads only what its Conv units need from a written model: the input grids of those nodes
(input_qparams ``nodes=``), and the per-position rounding differences of terms not kept from an earlier call."""

from __future__ import annotations

import numpy as np

from tests.test_bias_means_cache import DEPTH, _setup
from workbench.core import api
from workbench.core.transforms import bias_correction
from workbench.core.transforms.bias_correction import (
    InputMeans,
    bias_shifts,
    correctable_units,
    input_qparams,
)


def test_input_qparams_of_some_nodes_are_those_of_every_node(tmp_path):
    model, data, _ = _setup(tmp_path)
    res = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data)
    every = input_qparams(res.proto)
    convs = {u.node for u in correctable_units(res.plan)}
    assert convs == {f"conv{i}" for i in range(DEPTH)} and convs <= set(every)
    some = input_qparams(res.proto, {"conv1", "conv3", "not_a_node"})
    assert sorted(some) == ["conv1", "conv3"]
    for name, qp in some.items():
        assert qp.qtype == every[name].qtype == "uint8"
        assert np.asarray(qp.scale).tobytes() == np.asarray(every[name].scale).tobytes()
        assert np.asarray(qp.zero_point).tobytes() == np.asarray(every[name].zero_point).tobytes()


class _Spied(np.ndarray):
    """A kept mean that records each subtraction made from it."""

    subtractions: list[int] = []

    def __sub__(self, other):
        _Spied.subtractions.append(1)
        return np.ndarray.__sub__(np.asarray(self), np.asarray(other))


def test_kept_terms_compute_no_rounding_difference_and_give_the_same_shifts(tmp_path, monkeypatch):
    """A second bias_shifts with the same means and model computes no term again: no thunk is called and no
    rounded-minus-mean difference is taken (the recipe choice's later scores: 58 of them a call on nudenet_320n,
    computed eagerly before); its shifts are the first call's bits, which equal a fresh call's."""
    model, data, x = _setup(tmp_path)
    res = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data)
    fresh = bias_shifts(model, res.plan, res.proto, [{"x": x}])
    kept = InputMeans()
    first = bias_shifts(model, res.plan, res.proto, [{"x": x}], means=kept)
    kept._means = {k: v.view(_Spied) for k, v in kept._means.items()}
    made: list[int] = []
    real = InputMeans.shifts

    def counting(self, terms):
        return real(self, [(key, lambda make=make: made.append(1) or make()) for key, make in terms])
    monkeypatch.setattr(bias_correction.InputMeans, "shifts", counting)
    monkeypatch.setattr(_Spied, "subtractions", [])
    again = bias_shifts(model, res.plan, res.proto, [{"x": x}], means=kept)
    assert made == [] and _Spied.subtractions == []
    assert sorted(again) == sorted(first) == sorted(fresh) == [f"b{i}" for i in range(DEPTH)]
    for b in fresh:
        assert np.asarray(again[b]).tobytes() == first[b].tobytes() == fresh[b].tobytes()
