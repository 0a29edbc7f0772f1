"""How finely a task metric can tell two models apart on the eval rows at hand.

A metric that is a fraction of rows (top1, exact match) moves in steps of ``1/N`` on ``N`` rows: a
``--max-drop`` below that step allows no lost row at all, and chasing it promotes units to win back
a single sample. Any metric also has sampling noise: the paired bootstrap (Efron & Tibshirani 1993,
ch. 13) resamples the rows with replacement and recomputes ``metric(quantized) - metric(float)`` on
the same resampled rows; the 2.5 / 97.5 percentiles bound the drop that these rows can resolve.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Score = Callable[[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]], float]

#: Bootstrap resamples; fixed seed so a run's report is reproducible.
ROUNDS = 200
SEED = 0


@dataclass(frozen=True)
class MetricResolution:
    """``rows``: eval rows; ``step``: ``1/rows`` for a fraction-of-rows metric, else None;
    ``drop_low`` / ``drop_high``: 95 % bootstrap interval of ``metric(quantized) - metric(float)``."""

    rows: int
    step: float | None
    drop_low: float
    drop_high: float

    def describe(self, label: str = "quantized") -> str:
        """One line: the rows, the step (a fraction-of-rows metric) and the interval of ``label`` - float
        (``label`` names the model the interval was measured on: "all quantized", "after autotune")."""
        step = f"moves in steps of 1/{self.rows} = {self.step:.4f}; " if self.step else ""
        return f"metric on {self.rows} eval rows: {step}{self.interval(label)}"

    def interval(self, label: str = "quantized") -> str:
        """``95% bootstrap interval of LABEL - float [lo, hi]`` (or why there is none)."""
        if not (np.isfinite(self.drop_low) and np.isfinite(self.drop_high)):
            return "no bootstrap interval (the float model scores infinite)"
        return f"95% bootstrap interval of {label} - float [{self.drop_low:+.4f}, {self.drop_high:+.4f}]"


def _take(arrays: dict[str, np.ndarray], rows: int, idx: np.ndarray) -> dict[str, np.ndarray]:
    return {k: (v[idx] if np.ndim(v) and np.shape(v)[0] == rows else v) for k, v in arrays.items()}


def measure_resolution(score: Score, quant: dict, ref: dict, labels: dict, rows: int) -> MetricResolution:
    """The resolution of ``score`` on ``rows`` eval rows (arrays of ``quant`` / ``ref`` / ``labels``
    with ``rows`` as their first dimension are resampled; others are passed as they are)."""
    if rows < 2:
        return MetricResolution(rows, None, -np.inf, np.inf)
    rng = np.random.default_rng(SEED)
    diffs, scaled = [], []
    for _ in range(ROUNDS):
        idx = rng.integers(0, rows, rows)
        r, lab = _take(ref, rows, idx), _take(labels, rows, idx)
        mq, mf = score(_take(quant, rows, idx), r, lab), score(r, r, lab)
        diffs.append(mq - mf)
        scaled.extend((mq * rows, mf * rows))
    scaled_arr = np.asarray(scaled)
    # rtol 0: a cosine of 0.99999 on 16 rows is 15.99995 rows, not a whole number of rows
    fraction = bool(np.all(np.isfinite(scaled_arr)) and np.allclose(scaled_arr, np.round(scaled_arr), rtol=0,
                                                                     atol=1e-6))
    finite = np.asarray(diffs)[np.isfinite(diffs)]  # an SQNR of the float reference is +inf
    lo, hi = np.percentile(finite, [2.5, 97.5]) if finite.size else (np.nan, np.nan)
    return MetricResolution(rows, 1.0 / rows if fraction else None, float(lo), float(hi))


def below_resolution(max_drop: float | None, m_float: float, m0: float, res: MetricResolution) -> str:
    """Why a ``max_drop`` target is not chased, as a note ("" when it is): the metric moves in steps of
    ``1/N`` on ``N`` eval rows (``res.step``) and the target asks to win back less than one row -- ``0 <
    max_drop < step`` allows no lost row, and ``max_drop == 0`` while the recipe as given (``m0``) loses a
    single row asks to win back that one sample, which the rows cannot tell from noise. ``--min-score``
    chases it anyway; a recipe as given losing several rows is chased with ``max_drop == 0``."""
    if max_drop is None or res.step is None or not max_drop < res.step:
        return ""
    if max_drop > 0:
        return (f"--max-drop {max_drop:g} is below the metric's step on {res.rows} eval rows "
                f"(1/{res.rows} = {res.step:.4f}): it allows no lost row, so nothing was promoted. Pass "
                f"--min-score {m_float:g} to ask for that, --max-drop {res.step:.4f} or more, or more eval rows.")
    if not math.isclose(m_float - m0, res.step, rel_tol=1e-6):
        return ""
    return (f"--max-drop 0 asks to win back the one eval row of {res.rows} the recipe as given loses "
            f"({m0:.4f} against float {m_float:.4f}): one step of the metric (1/{res.rows} = {res.step:.4f}), "
            f"within its noise on these rows ({res.interval('all quantized')}), so nothing was promoted. Pass "
            f"--min-score {m_float:g} to chase that row anyway, or give more eval rows.")
