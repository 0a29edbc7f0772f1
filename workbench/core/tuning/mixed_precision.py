"""Promote the few units that hold most of a model's output noise (the recipe choice's last step).

A promoted unit is kept float or gets 16-bit activations, as the recipe choice's
:func:`~workbench.core.tuning.recipe_choice.promotion_level` says for the preset; the search below is
the same for both ("at 16 bits" reads "promoted" for either).

A model's quantization noise is often concentrated: in nudenet_320n (a YOLOv8n detector) the
activations of its first nine units (the stem: few channels at full resolution, heavy-tailed SiLU
outputs) hold about four fifths of the output noise, and keeping them at 16 bits raises the
held-out output SQNR from 28.9 to 36.3 dB while every other unit stays 8-bit. The search, a group
test over the quantized units in graph order, measured by the recipe choice's score (output SQNR on
held-out calibration rows, :func:`~workbench.core.tuning.recipe_choice.choose_recipe`):

1. Split the units into :data:`GROUPS` runs of consecutive units; score the model with each run's
   activations at 16 bits (the others as chosen). The gain of a run is its score minus the chosen
   recipe's score (dB).
2. If no run gains :data:`MIN_GAIN_DB` (3 dB: the run's units hold at least half of the output noise
   power), nothing changes: the noise is spread out, and 16 bits on a quarter of the model would buy
   little and cost latency (onnxruntime runs 16-bit units on float kernels).
3. Else halve the best run while the better half keeps the best gain seen so far within
   :data:`KEEP_DB`, and at least :data:`MIN_GAIN_DB` (smaller groups cost less latency, and the losses
   of successive halvings cannot add up); the last group kept is promoted.

A model with fewer than :data:`MIN_UNITS` quantized units is left as it is: a run would be one unit,
a quarter of the model or more, not a few units among many.

Gains do not add up unit by unit (a promoted unit changes the grids at its boundaries: in nudenet_320n
the first nine units gain 7.4 dB, their first four 3.0 dB and the other five nothing), which is why
groups are scored whole and a split is taken only when a half keeps the gain.

A candidate is not scored when the noise its set leaves unexplained cannot make it win
(:func:`unexplained`): a gain of ``g`` dB removes the fraction ``1 - 10^(-g/10)`` of the chosen
recipe's output noise power; the runs of step 1 share the whole noise, the halves of step 3 their
parent's fraction. When what the candidates scored so far removed leaves less than the fraction a win
needs (more than the best scored, and at least the step's threshold), with :data:`SLACK` added for
noises that do not add up, the others are not scored: the best scored is the one the full test would
pick. nudenet_320n: its first run removes 84 % of the noise (8.0 dB), so the other three are not
scored (they gained 0.3, 0.1 and 0.7 dB), nor the second half at the two halvings that kept the first
(0.0 and 1.3 dB): 5 scores instead of 10, the same 9 units. ppocrv4_rec: the first three runs remove
92 % (2.8, 0.1 and 2.4 dB, none promoted), so the fourth (-0.2 dB) is not scored. The cost is at most
:data:`GROUPS` scored variants, plus two per halving when a run qualifies (:func:`searches`).

This is the "sensitivity by group" flavour of automatic mixed precision (AIMET's AMP scores one
candidate per layer and builds a Pareto curve; with 16 bits as the only wider candidate and the
held-out SQNR as the measure, a group test needs logarithmically many scores instead).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

#: Runs of consecutive units scored first.
GROUPS = 4
#: A run must raise the held-out output SQNR by this much to be promoted at all (dB) ...
MIN_GAIN_DB = 3.0
#: ... and a half replaces its parent while its gain is within this of the parent's (dB).
KEEP_DB = 1.0
#: Fewer quantized units than this: no search.
MIN_UNITS = GROUPS
#: Noise fraction added to what a candidate set leaves unexplained before candidates are skipped (module
#: docstring): the runs of nudenet_320n removed 110 % of its noise between them, overlapping by 0.1.
SLACK = 0.3
#: The 16-bit activation dtype of each 8-bit one.
WIDER = {"uint8": "uint16", "int8": "int16"}


@dataclass
class Promotion:
    """What :func:`find_promotion` found.

    ``units``: node names to promote (16-bit activations, or float), in graph order (empty: none); ``gain_db``:
    their held-out output SQNR gain (dB); ``tried``: ``(first node, last node, unit count, gain dB)``
    of every group scored, in order.
    """

    units: list[str] = field(default_factory=list)
    gain_db: float = 0.0
    tried: list[tuple[str, str, int, float]] = field(default_factory=list)

    @property
    def best_tried_db(self) -> float:
        """The largest gain of any group scored (dB; 0.0 when none was)."""
        return max((t[3] for t in self.tried), default=0.0)


def runs(units: Sequence[str], count: int) -> list[list[str]]:
    """``units`` cut into ``count`` runs of consecutive items whose sizes differ by at most one (no empty run)."""
    n = len(units)
    count = max(1, min(count, n))
    return [list(units[i * n // count:(i + 1) * n // count]) for i in range(count)]


def removed(gain_db: float) -> float:
    """The fraction of the output noise power a gain of ``gain_db`` dB removes: ``1 - 10^(-gain_db/10)``
    (negative for a loss; ``-inf`` for a group that cannot be written)."""
    return 1.0 - 10.0 ** (-gain_db / 10.0) if gain_db > -math.inf else -math.inf


def unexplained(pool: float, gains: Sequence[float]) -> float:
    """The noise fraction of ``pool`` (the whole noise, 1.0, or a parent group's :func:`removed`) that the
    disjoint candidates with ``gains`` (dB) did not remove, were noises to add up (losses count as nothing)."""
    return pool - sum(max(0.0, removed(g)) for g in gains)


def _score_all(groups: list[list[str]], pool: float, need_db: float, measure) -> list[float]:
    """Gains of ``groups`` scored in order, stopping when the others cannot win (module docstring): the
    rest is ``-inf``, so the best scored is the argmax."""
    gains = [-math.inf] * len(groups)
    for i, group in enumerate(groups):
        if i and unexplained(pool, gains[:i]) + SLACK < max(removed(max(gains[:i])), removed(need_db)):
            break
        gains[i] = measure(group)
    return gains


def find_promotion(units: Sequence[str], gain: Callable[[list[str]], float]) -> Promotion:
    """Group test of the module docstring over ``units`` (node names in graph order).

    ``gain(group)`` is the held-out output SQNR with ``group`` promoted minus that of the chosen
    recipe (dB); ``-inf`` for a group that cannot be written so. Raises whatever ``gain``
    raises (``Cancelled``). Fewer than :data:`MIN_UNITS` units: nothing is scored.
    """
    found = Promotion()

    def measure(group: list[str]) -> float:
        g = float(gain(group))
        found.tried.append((group[0], group[-1], len(group), g))
        return g

    if len(units) < MIN_UNITS:
        return found
    parts = runs(units, GROUPS)
    gains = _score_all(parts, 1.0, MIN_GAIN_DB, measure)
    best = int(np.argmax(gains))
    if not gains[best] >= MIN_GAIN_DB:
        return found
    group, kept = parts[best], gains[best]
    top = kept
    while len(group) > 1:
        halves = runs(group, 2)
        need = max(top - KEEP_DB, MIN_GAIN_DB)
        half_gains = _score_all(halves, removed(kept), need, measure)
        i = int(np.argmax(half_gains))
        if not half_gains[i] >= need:
            break
        group, kept = halves[i], half_gains[i]
        top = max(top, kept)
    found.units, found.gain_db = group, kept
    return found


def searches(budget_units: int) -> int:
    """Upper bound of the scores :func:`find_promotion` takes over ``budget_units`` units (for progress totals)."""
    if budget_units < MIN_UNITS:
        return 0
    steps = 0
    size = -(-budget_units // GROUPS)
    while size > 1:
        size = -(-size // 2)
        steps += 1
    return min(GROUPS, budget_units) + 2 * steps
