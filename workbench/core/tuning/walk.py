"""The promotion walk of autotune: greedy over measured points, never worse as it promotes.

Bisection over "the k most sensitive units promoted" assumes the metric rises with k; it does not
(a SmoothQuant recipe on ppocrv4_rec lost 21 points of exact match with 32 of 51 units in float).
The walk keeps the best point measured so far and accepts a promotion only when the metric on the
eval rows does not fall below it, so the accepted points form a path whose metric never decreases
while it promotes (after the target holds, settling may lower it, never below the target):

* every level of the ladder but the last (``("int16", "float")`` by default: wider activations are tried
  before float) is first measured on all units not yet at it -- its ceiling, one trial. A ceiling on
  the target is cut back by bisection to the shortest ranked prefix that still meets it (below); a
  ceiling under the target that is better than the path so far becomes the path's next point, and
  the next level starts from it (walking such a level unit by unit spent the budget: on
  digits_transformer every unit at int16 reaches 31.5 dB of the 45 asked, most units gain under
  0.1 dB alone, and 30 of 32 trials went to int16 steps); a ceiling no better than the path
  (ppocrv4_rec's recipe: 0.92 all at int16 against 0.93, while one unit at int16 alone gives 0.94) is
  walked unit by unit as below, in one pass;
* on the last level, the units not yet at it are taken in ranking order, in groups that double
  after each accepted group and halve after each rejected one; a single unit that is rejected stays
  where it is for the rest of that pass; when a pass promoted anything, the units it left are tried
  again in a new pass (the model around them changed: on digits_cnn, the most sensitive Conv alone in
  float lowered the output SQNR from 45.49 to 45.41 dB, and with three other units in float it
  completed the all-float model);
* once the target holds after a ceiling was taken, units go back down while the target still holds,
  least sensitive first, in groups that double and halve the same way: units in float to the level
  the ceiling gave them, then units at that level to the recipe as given (a settling phase: the
  path's metric may fall there, down to the target, as it drops promotions it does not need);
* when a group of more than one unit reaches the target, the shortest prefix of it that still
  reaches it is found by bisection (the target is met on both ends, so the path stays monotone);
* a promotion that leaves the task metric where it is (a fraction of rows often does not move) is
  accepted only when the tie-break -- output SQNR against the float model -- does not fall either, so
  the walk does not wander through promotions that buy nothing measurable;
* :func:`demote` then goes the other way for weights (int4 where the op has a constant weight):
  least sensitive units first, a demotion accepted while the target still holds; it trades metric
  for bytes, so it is a separate phase after the promotion path;
* a point measured before is not measured again; every trial counts against ``max_trials``; the walk
  stops at the target (after settling), when the ladder is done or when the budget is spent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from workbench.core.wording import count

Levels = dict[str, str]


@dataclass
class Step:
    """One measured point: ``levels`` maps each promoted unit (node name) to its level; ``accepted``
    says whether it is on the walk's path (a point trimmed away afterwards is no longer accepted)."""

    levels: Levels
    metric: float
    accepted: bool
    note: str = ""
    tie_break: float = float("-inf")


@dataclass
class Walk:
    """All measured points in trial order and whether the budget ran out."""

    steps: list[Step] = field(default_factory=list)
    budget_spent: bool = False

    @property
    def path(self) -> list[Step]:
        return [s for s in self.steps if s.accepted]

    @property
    def final(self) -> Step:
        return self.path[-1]


Score = tuple[float, float]  # (task metric, tie-break)


def _better(m: Score, best: Score) -> bool:
    """``m`` is not worse than ``best``: a higher metric, or the same metric and a tie-break not lower."""
    if m[0] != m[0]:  # NaN never wins
        return False
    if m[0] != best[0]:
        return m[0] > best[0]
    return not (m[1] < best[1])


def walk(ranked: list[str], ladder: tuple[str, ...], measure: Callable[[Levels], Score], m0: Score,
         min_score: float, max_trials: int) -> Walk:
    """Promote units of ``ranked`` (most harmful first) along ``ladder`` until ``min_score`` holds.

    ``measure(levels)`` returns ``(task metric, tie-break)`` of the recipe with those units promoted
    (higher is better for both); ``m0`` is that of the recipe as given (no unit promoted).
    """
    order = {lv: i for i, lv in enumerate(ladder)}
    w = Walk([Step({}, m0[0], True, "recipe as given", m0[1])])
    current: Levels = {}
    best, trials = m0, 0
    seen: dict[tuple, Score] = {(): m0}

    def trial(levels: Levels, note: str) -> Score | None:
        """The score of ``levels``; None when it was measured before (it was rejected then)."""
        nonlocal trials
        key = tuple(sorted(levels.items()))
        if key in seen:
            return None
        trials += 1
        m = seen[key] = measure(levels)
        w.steps.append(Step(levels, m[0], False, note, m[1]))
        return m

    def promote_pass(level: str, again: bool) -> bool:
        """Promote the units below ``level`` in ranking order, in doubling / halving groups; with
        ``again``, new passes while a pass promotes. False when the budget ran out."""
        nonlocal current, best
        moved = True
        while moved and best[0] < min_score:
            moved = False
            queue = [n for n in ranked if order.get(current.get(n, ""), -1) < order[level]]
            step = 1
            while queue and best[0] < min_score:
                if trials >= max_trials:
                    w.budget_spent = True
                    return False
                group = queue[:step]
                before, m_before = current, best
                m = trial({**current, **dict.fromkeys(group, level)}, f"{count(len(group), 'unit')} to {level}")
                if m is not None and _better(m, best):
                    w.steps[-1].accepted = True
                    current, best, queue, step = w.steps[-1].levels, m, queue[step:], step * 2
                    moved = again
                    if best[0] >= min_score and len(group) > 1:
                        _trim(w, before, m_before, group, level, min_score, trial, max_trials - trials)
                else:
                    queue = queue[1:] if step == 1 else queue
                    step = max(1, step // 2)
        return True

    lifted: list[str] = []  # levels whose ceiling is on the path
    lifted_to: Levels = {}  # each unit a ceiling on the path promoted, and to which level
    for level in ladder[:-1]:
        queue = [n for n in ranked if order.get(current.get(n, ""), -1) < order[level]]
        if not queue or best[0] >= min_score:
            continue
        if trials >= max_trials:
            w.budget_spent = True
            return w
        before, m_before = current, best
        m = trial({**current, **dict.fromkeys(queue, level)}, f"ceiling: {count(len(queue), 'unit')} to {level}")
        if m is None or not _better(m, best):  # some units may still gain alone
            if not promote_pass(level, again=False):
                return w
            continue
        w.steps[-1].accepted = True
        current, best = w.steps[-1].levels, m
        if best[0] >= min_score:
            if len(queue) > 1:
                _trim(w, before, m_before, queue, level, min_score, trial, max_trials - trials)
            return w
        lifted.append(level)
        lifted_to.update(dict.fromkeys(queue, level))
    if best[0] < min_score and not promote_pass(ladder[-1], again=True):
        return w
    if best[0] >= min_score and lifted:
        least_first = list(reversed(ranked))
        lower = [(n, lifted_to.get(n)) for n in least_first if w.final.levels.get(n) == ladder[-1]]
        _settle(w, lower, min_score, trial, max_trials - trials)
        _settle(w, [(n, None) for n in least_first if w.final.levels.get(n) in lifted], min_score, trial,
                max_trials - trials)
    return w


def _settle(w: Walk, queue: list[tuple[str, str | None]], min_score: float,
            trial: Callable[[Levels, str], Score | None], budget: int) -> None:
    """Move units of ``queue`` (least sensitive first) down to the level paired with each (None: the
    recipe as given), on top of the walk's final point, in groups that double after each accepted
    group and halve after each rejected one, while the metric stays ``>= min_score``; the accepted
    points extend the path."""
    current = w.final
    step = 1
    while queue and budget > 0:
        group = dict(queue[:step])
        budget -= 1
        levels = {n: group[n] if n in group else lv for n, lv in current.levels.items()}
        levels = {n: lv for n, lv in levels.items() if lv is not None}
        where = "/".join(sorted({lv or "the recipe" for lv in group.values()}))
        m = trial(levels, f"{count(len(group), 'unit')} back to {where}")
        if m is not None and m[0] == m[0] and m[0] >= min_score:
            current = w.steps[-1]
            current.accepted = True
            queue, step = queue[step:], step * 2
        else:
            queue = queue[1:] if step == 1 else queue
            step = max(1, step // 2)


def _trim(w: Walk, before: Levels, m_before: Score, group: list[str], level: str, min_score: float,
          trial: Callable[[Levels, str], Score | None], budget: int) -> None:
    """Replace the last accepted point (``before`` + ``group``, on target) by ``before`` + the shortest
    prefix of ``group`` that is on target and not below ``m_before``, by bisection."""
    full = w.steps[-1]
    lo, hi, found = 0, len(group), full
    while hi - lo > 1 and budget > 0:
        mid = (lo + hi) // 2
        budget -= 1
        m = trial({**before, **dict.fromkeys(group[:mid], level)}, f"trim: {mid} of {count(len(group), 'unit')} to {level}")
        if m is not None and m[0] >= min_score and _better(m, m_before):
            hi, found = mid, w.steps[-1]
        else:
            lo = mid
    if found is not full:
        full.accepted = False
        found.accepted = True


def demote(w: Walk, candidates: list[str], level: str, measure: Callable[[Levels], Score], min_score: float,
           max_trials: int) -> None:
    """Give ``candidates`` (least sensitive first) ``level`` on top of the walk's final point, in
    groups that double after each accepted group and halve after each rejected one, accepting a group
    while the metric stays ``>= min_score``. Appends its points to ``w``; the accepted ones extend the
    path (whose metric may fall here, down to the target). ``max_trials`` counts this phase's runs only."""
    current = w.final
    queue = [n for n in candidates if n not in current.levels]
    step, trials = 1, 0
    while queue and trials < max_trials:
        group = queue[:step]
        levels = {**current.levels, **dict.fromkeys(group, level)}
        if any(s.levels == levels for s in w.steps):
            m = None
        else:
            trials += 1
            m = measure(levels)
            w.steps.append(Step(levels, m[0], False, f"{count(len(group), 'unit')} to {level}", m[1]))
        if m is not None and m[0] == m[0] and m[0] >= min_score:
            current = w.steps[-1]
            current.accepted = True
            queue, step = queue[step:], step * 2
        else:
            queue = queue[1:] if step == 1 else queue
            step = max(1, step // 2)
