"""The latency probes' fixed-seed values (runtime.probe_values) against SplitMix64 and Box-Muller written
out here with Python integers and the math module, element by element."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from workbench.core.runtime import probe_values
from workbench.core.runtime.unit_latency import conv_probe_models

M64 = (1 << 64) - 1


def splitmix64(seed: int, n: int) -> list[int]:
    state, out = seed & M64, []
    for _ in range(n):
        state = (state + 0x9E3779B97F4A7C15) & M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        out.append(z ^ (z >> 31))
    return out


@pytest.mark.parametrize("seed", [0, 1, 12345, (1 << 64) - 1, -1])
def test_bits_are_splitmix64(seed):
    assert probe_values.bits(300, seed).tolist() == splitmix64(seed, 300)


def test_first_output_of_seed_zero():
    """The first SplitMix64 output from state 0 (Vigna's splitmix64.c): 0xE220A8397B1DCDAF."""
    assert int(probe_values.bits(1, 0)[0]) == 0xE220A8397B1DCDAF


def test_standard_normal_is_box_muller_of_two_streams():
    got = probe_values.standard_normal((4, 5, 3), 7)
    a, b = splitmix64(7, 60), splitmix64(8, 60)
    want = [math.sqrt(-2 * math.log(((x >> 11) + 1) / 2 ** 53)) * math.cos(2 * math.pi * ((y >> 11) + 1) / 2 ** 53)
            for x, y in zip(a, b, strict=True)]
    assert got.shape == (4, 5, 3) and got.dtype == np.float64
    np.testing.assert_allclose(got.reshape(-1), want, rtol=1e-12, atol=1e-12)


def test_uint8_is_the_top_byte():
    got = probe_values.uint8([2, 3, 50], 1)
    assert got.dtype == np.uint8 and got.shape == (2, 3, 50)
    assert got.reshape(-1).tolist() == [z >> 56 for z in splitmix64(1, 300)]


def test_empty_and_negative_sizes():
    assert probe_values.uint8([0, 4], 1).shape == (0, 4)
    with pytest.raises(ValueError, match="n must be >= 0"):
        probe_values.bits(-1, 0)


def test_conv_probe_weights_come_from_seed_zero():
    """The float probe's weight is 0.1 x standard_normal(weight shape, seed 0), as float32."""
    f, _ = conv_probe_models({"group": 1}, [4, 1, 3, 3], [1, 1, 8, 8], False)
    w = {t.name: numpy_helper.to_array(t) for t in onnx.load_from_string(f).graph.initializer}["w"]
    np.testing.assert_array_equal(w, (probe_values.standard_normal([4, 1, 3, 3], 0) * 0.1).astype(np.float32))
