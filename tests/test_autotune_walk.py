"""The promotion walk (workbench.core.tuning.walk) and the Pareto front (workbench.core.tuning.front), on
metrics defined in the test so every accepted and rejected point can be counted by hand."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from workbench.core.errors import RecipeError
from workbench.core.tuning.autotune import parse_ladder
from workbench.core.tuning.front import dominates, pareto_indices
from workbench.core.tuning.walk import walk


def _recorder(metric):
    seen = []

    def measure(levels):
        seen.append(dict(levels))
        return metric(levels), 0.0
    return measure, seen


def test_a_harmful_unit_is_refused_and_the_path_never_gets_worse():
    """Float a, b, d: +0.1 each; float c: -0.3 (the failure bisection over 'first k' cannot see:
    k = 1, 2, 3, 4 give 0.6, 0.7, 0.4, 0.5 and never reach 0.75)."""
    gain = {"a": 0.1, "b": 0.1, "c": -0.3, "d": 0.1}
    measure, seen = _recorder(lambda lv: round(0.5 + sum(gain[n] for n in lv), 6))
    w = walk(["a", "b", "c", "d"], ("float",), measure, (0.5, 0.0), 0.75, 32)
    assert seen == [{"a": "float"}, dict.fromkeys("abc", "float"), dict.fromkeys("ab", "float"),
                    dict.fromkeys("abcd", "float"), dict.fromkeys("abd", "float")]  # {a,b,c} not measured twice
    assert [s.metric for s in w.path] == [0.5, 0.6, 0.7, 0.8]
    assert [s.metric for s in w.steps if not s.accepted] == [0.4, 0.5]
    assert w.final.levels == dict.fromkeys("abd", "float") and not w.budget_spent


def test_int16_is_tried_for_every_unit_before_float_and_the_last_group_is_trimmed():
    """int16 adds 1 per unit, float 2: all eight at int16 give 8; the target 12 needs four in float."""
    units = list("abcdefgh")
    measure, seen = _recorder(lambda lv: float(sum(1 if v == "int16" else 2 for v in lv.values())))
    w = walk(units, ("int16", "float"), measure, (0.0, 0.0), 12.0, 32)
    assert seen[0] == dict.fromkeys(units, "int16")  # int16 for every unit first: the level's ceiling, 8
    # float groups 1, 2, 4 on top of it (15 >= 12), bisection of the last group: 2 -> 13, 1 -> 12; then,
    # least sensitive first, each float unit back to int16 (d: measured already, as the float group a, b,
    # c) and each int16 unit back to 8 bits: 11 each time, below the target
    assert [s.metric for s in w.steps] == [0, 8, 9, 11, 15, 13, 12] + [11] * 7
    assert [s.metric for s in w.path] == [0, 8, 9, 11, 12]  # the 15 and 13 were trimmed away
    assert w.final.levels == {**dict.fromkeys("abcd", "float"), **dict.fromkeys("efgh", "int16")}
    assert [lv[u] for lv, u in zip(seen[-7:-4], "cba", strict=True)] == ["int16"] * 3
    assert [sorted(lv) for lv in seen[-4:]] == [sorted(set(units) - {u}) for u in "hgfe"]


def test_units_the_target_does_not_need_at_int16_go_back_to_8_bits():
    """int16 helps a and b only (+1 each), float gives 3: the ceiling (2) is below the target 6, so
    float comes on top of it; once a and b in float meet the target, the other six int16 units return
    to the recipe in groups of 1, 2, 3 (the metric stays 6)."""
    gain16 = {"a": 1.0, "b": 1.0}
    measure, seen = _recorder(lambda lv: sum(3.0 if v == "float" else gain16.get(n, 0.0) for n, v in lv.items()))
    w = walk(list("abcdefgh"), ("int16", "float"), measure, (0.0, 0.0), 6.0, 32)
    assert [s.metric for s in w.path] == [0, 2, 4, 6, 6, 6, 6]
    assert w.final.levels == {"a": "float", "b": "float"}
    assert [sorted(set("abcdefgh") - set(lv)) for lv in seen[-3:]] == [["h"], ["f", "g", "h"], list("cdefgh")]


def test_a_ceiling_on_target_is_cut_to_the_shortest_ranked_prefix():
    """All four at int16 meet the target; bisection finds that the first two suffice (one does not),
    and float is never tried."""
    measure, seen = _recorder(lambda lv: float(len(lv)))
    w = walk(list("abcd"), ("int16", "float"), measure, (0.0, 0.0), 2.0, 32)
    assert seen == [dict.fromkeys("abcd", "int16"), dict.fromkeys("ab", "int16"), {"a": "int16"}]
    assert w.final.levels == dict.fromkeys("ab", "int16") and [s.metric for s in w.path] == [0, 2]


def test_ties_need_the_tie_break_and_the_budget_stops_the_walk():
    """A metric that never moves: promotions are accepted only while the output gets closer to float
    (the tie-break), and the walk stops at max_trials."""
    def measure(levels):
        return 0.5, -float(len(levels)) if "b" in levels else float(len(levels))

    w = walk(list("abcd"), ("float",), measure, (0.5, 0.0), 0.9, 3)
    assert [sorted(s.levels) for s in w.steps] == [[], ["a"], ["a", "b", "c"], ["a", "b"]]
    assert [s.accepted for s in w.steps] == [True, True, False, False] and w.budget_spent


@dataclass
class P:
    metric: float
    weight_bytes: int | None
    bops: int | None


def test_pareto_front_keeps_the_points_no_other_beats():
    pts = [P(0.90, 100, 10), P(0.95, 100, 20), P(0.90, 120, 10), P(0.99, 400, 80), P(0.95, 100, 20),
           P(float("nan"), 50, 5), P(0.97, None, 30)]
    assert dominates(pts[0], pts[2]) and not dominates(pts[0], pts[1]) and not dominates(pts[1], pts[0])
    # 2 is beaten by 0; 4 repeats 1; NaN is the worst metric but the smallest model; unknown bytes count as worst
    assert pareto_indices(pts) == [5, 0, 1, 3, 6]


def test_ladder_is_parsed_cheapest_first_and_bad_levels_name_the_option():
    assert parse_ladder("int16,float") == ("int16", "float") and parse_ladder(("uint16",)) == ("uint16",)
    for bad in ("float,int16", "int8", "", "int16,int16"):
        with pytest.raises(RecipeError, match="promote_to") as err:
            parse_ladder(bad)
        assert "--promote-to int16,float" in err.value.hint


def test_a_measured_latency_replaces_bops_on_the_front():
    """With a measured latency the front weighs it, not BOPs: a point with more BOPs but a lower
    latency (e.g. one Q/DQ transition fewer) is the better one."""
    from types import SimpleNamespace

    a = SimpleNamespace(metric=0.9, weight_bytes=100, bops=50, latency=0.8)
    b = SimpleNamespace(metric=0.9, weight_bytes=100, bops=10, latency=1.1)
    assert dominates(a, b) and not dominates(b, a) and pareto_indices([a, b]) == [0]
    a.latency = b.latency = None  # not measured: BOPs decide
    assert dominates(b, a) and pareto_indices([a, b]) == [1]


def test_the_last_level_tries_a_refused_unit_again_once_others_moved():
    """Float c alone: -0.1; with a and b in float it adds 0.3 (units interact). The first pass refuses
    c; a second pass over the last level takes it and reaches the target."""
    def metric(lv):
        s = 0.5 + 0.1 * len({"a", "b"} & set(lv))
        if "c" in lv:
            s += 0.3 if {"a", "b"} <= set(lv) else -0.1
        return round(s, 6)

    measure, seen = _recorder(metric)
    w = walk(["c", "a", "b"], ("float",), measure, (0.5, 0.0), 0.95, 32)
    assert seen == [{"c": "float"}, {"a": "float"}, dict.fromkeys("ab", "float"), dict.fromkeys("abc", "float")]
    assert [s.metric for s in w.path] == [0.5, 0.6, 0.7, 1.0] and w.final.metric >= 0.95


def test_a_ceiling_no_better_than_the_recipe_is_walked_unit_by_unit():
    """int16 on c costs 0.3, on a it gains 0.2: all at int16 (0.4) is worse than the recipe (0.5), yet a
    alone at int16 meets the target 0.7 -- as on ppocrv4_rec's recipe (0.92 all at int16 against 0.93,
    0.94 with one unit at int16), where float must not be the first answer."""
    gain = {"a": 0.2, "c": -0.3}
    measure, seen = _recorder(lambda lv: round(0.5 + sum(gain.get(n, 0.0) for n in lv), 6))
    w = walk(list("acbd"), ("int16", "float"), measure, (0.5, 0.0), 0.7, 32)
    assert seen == [dict.fromkeys("acbd", "int16"), {"a": "int16"}]
    assert [s.metric for s in w.steps] == [0.5, 0.4, 0.7] and w.final.levels == {"a": "int16"}
