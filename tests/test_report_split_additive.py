"""The report's weights vs activations paragraph says when the two noise powers do not add."""

from __future__ import annotations

from types import SimpleNamespace

from workbench.core.analysis.noise_split import NoiseSplit
from workbench.core.report.html import _split


def _page(split: NoiseSplit) -> str:
    return _split(SimpleNamespace(split=split, analysis_samples=64, eval_source="eval.npz"))


def test_a_split_that_does_not_add_says_the_shares_are_rough():
    """ppocr_mobile_v2_cls (cpu-u8s8): both 40.7 dB, weights-only 38.7, activations-only 34.3 dB: added
    they give 32.95 dB, so the paragraph must not end on "noise powers of independent sources add"."""
    text = _page(NoiseSplit(40.7, 38.7, 34.3, 16))
    assert ("the noise of the two does not add on this model (added they give 32.95 dB, both quantized "
            "40.70 dB), so the shares are rough") in text
    assert text.endswith("noise powers of independent sources add, and these two do not, so the shares "
                         "are rough.</p>")


def test_a_split_that_adds_keeps_the_rule_alone():
    text = _page(NoiseSplit(29.74, 45.08, 30.61, 16))
    assert "does not add" not in text and "rough" not in text
    assert text.endswith("noise powers of independent sources add.</p>")
