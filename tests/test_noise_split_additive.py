"""Whether the weights' and the activations' noise powers add up to the model's: when the model as
written is clearly better than either part alone (saturated softmax outputs), the shares are rough and
the result says so."""

from __future__ import annotations

import math

import pytest

from workbench.core.analysis.noise_split import NoiseSplit


def test_both_better_than_either_part_is_not_additive():
    """ppocr_mobile_v2_cls (cpu-u8s8): both 40.7 dB, weights-only 38.7, activations-only 34.3 dB."""
    split = NoiseSplit(40.7, 38.7, 34.3, 16)
    parts = -10 * math.log10(10 ** -3.87 + 10 ** -3.43)
    assert split.parts_db == pytest.approx(parts) and parts == pytest.approx(32.95, abs=0.01)
    assert split.additive is False
    doc = split.to_json()
    assert doc["additive"] is False and doc["parts_db"] == pytest.approx(parts)
    assert split.describe().endswith("; the noise of the two does not add on this model (added they give "
                                     "32.95 dB, both quantized 40.70 dB), so the shares are rough")


@pytest.mark.parametrize(("both", "additive"), [(32.95 - 0.99, True), (32.95 + 0.99, True),
                                               (32.95 - 1.01, False), (32.95 + 1.01, False)])
def test_the_tolerance_is_one_db_either_way(both, additive):
    split = NoiseSplit(both, 38.7, 34.3, 16)
    assert split.additive is additive
    assert ("does not add" in split.describe()) is (not additive)


def test_independent_parts_and_edge_figures():
    """Parts that add (digits_transformer-like figures), no weight noise, and nothing measured."""
    split = NoiseSplit(29.74, 45.08, 30.61, 16)
    assert split.additive and abs(split.parts_db - 29.74) < 1.0 and "rough" not in split.describe()
    exact = NoiseSplit(31.0, math.inf, 31.0, 16)
    assert exact.parts_db == 31.0 and exact.additive and exact.to_json()["additive"] is True
    silent = NoiseSplit(math.inf, math.inf, math.inf, 16)
    assert silent.parts_db == math.inf and silent.additive and silent.to_json()["parts_db"] is None
    none = NoiseSplit(math.nan, math.nan, math.nan, 0)
    assert none.to_json()["additive"] is None and none.to_json()["parts_db"] is None
    noisy = NoiseSplit(20.0, math.inf, -math.inf, 16)  # activations wipe the output out, both do not
    assert noisy.parts_db == -math.inf and not noisy.additive
