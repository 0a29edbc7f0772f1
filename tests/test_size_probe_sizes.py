"""The size probe's second feed: the first sample halved along its dynamic axes (tiled where an axis holds 1),
half a sample's work on nudenet_320n instead of the eight of tiling every axis; tiled when the model cannot
run halved."""

from __future__ import annotations

import numpy as np
from test_size_guard import _grid_model

from workbench.core.model.load import prepare_proto
from workbench.core.pipeline import size_probe


def _data(tmp_path) -> str:
    path = tmp_path / "calib.npz"
    np.savez(path, X=np.random.default_rng(1).standard_normal((8, 3, 8, 8)).astype(np.float32))
    return str(path)


def test_halved_cuts_long_axes_and_doubles_unit_ones():
    x = np.arange(1 * 3 * 8 * 6, dtype=np.float32).reshape(1, 3, 8, 6)
    y = size_probe.halved(x, [0, 2, 3])
    assert y.shape == (2, 3, 4, 3)
    np.testing.assert_array_equal(y[0], x[0, :, :4, :3])
    np.testing.assert_array_equal(y[1], x[0, :, :4, :3])
    assert size_probe.halved(x, [5]).shape == x.shape  # an axis past the rank is left alone


def test_the_second_run_is_the_halved_sample(monkeypatch, tmp_path):
    shapes = []
    halved = size_probe.halved

    def recorded(x, axes):
        y = halved(x, axes)
        shapes.append(y.shape)
        return y

    monkeypatch.setattr(size_probe, "halved", recorded)
    model = prepare_proto(_grid_model("H", "W"))
    found = size_probe.changing_with_size(model, _data(tmp_path), ["cols", "grid", "c_term"])
    assert found == ["cols", "grid"]  # c_term reads the static channel count
    assert shapes == [(1, 3, 4, 4)]  # only H and W are dynamic in this model


def test_a_model_that_cannot_run_halved_is_probed_tiled(monkeypatch, tmp_path):
    tiled_runs = []
    tiled = size_probe.tiled

    def recorded(x, axes):
        tiled_runs.append(axes)
        return tiled(x, axes)

    monkeypatch.setattr(size_probe, "halved", lambda x, axes: x[..., None])  # a rank the model refuses
    monkeypatch.setattr(size_probe, "tiled", recorded)
    model = prepare_proto(_grid_model("H", "W"))
    found = size_probe.changing_with_size(model, _data(tmp_path), ["cols", "grid", "c_term"])
    assert tiled_runs == [[2, 3]]
    assert found == ["cols", "grid"]  # the tiled run's answer, not every candidate (the graph's)
