"""run_ahead: the next item runs on a helper thread while the caller works on the one before, and the caller
sees what a plain loop gives (bias correction's input means overlap their float runs with their sums)."""

from __future__ import annotations

import threading

import pytest

from workbench.core.runtime import run_ahead as ahead
from workbench.core.runtime.run_ahead import run_ahead


def test_items_and_results_come_in_order_as_a_plain_loop_gives_them(monkeypatch):
    monkeypatch.setattr(ahead, "MIN_OVERLAP_SECONDS", 0.0)
    assert list(run_ahead(lambda x: x * x, range(7))) == [(i, i * i) for i in range(7)]
    assert list(run_ahead(lambda x: x, [])) == []
    assert list(run_ahead(lambda x: -x, [5])) == [(5, -5)]


def test_the_second_item_is_drawn_after_the_first_result_was_used_and_the_next_runs_meanwhile(monkeypatch):
    monkeypatch.setattr(ahead, "MIN_OVERLAP_SECONDS", 0.0)
    seen: list[str] = []
    size = [0]
    ran = {i: threading.Event() for i in range(4)}

    def items():
        for i in range(4):
            seen.append(f"draw {i} size {size[0]}")
            yield i

    def run(i):
        ran[i].set()
        return threading.current_thread().name

    out = []
    for i, where in run_ahead(run, items()):
        if i == 0:
            size[0] = 3  # what the caller learnt from the first result (input_means: its slice size)
        else:
            assert ran[i + 1].wait(5) if i + 1 < 4 else True  # the next item ran while this one is used
        out.append((i, where))
    assert seen == ["draw 0 size 0", "draw 1 size 3", "draw 2 size 3", "draw 3 size 3"]
    assert out[0][1] == threading.current_thread().name  # the first run here, timed
    assert all(w.startswith("workbench-ahead") for _, w in out[1:])


def test_short_runs_and_a_switched_off_pipeline_run_in_the_caller_thread(monkeypatch):
    here = threading.current_thread().name
    monkeypatch.setattr(ahead, "MIN_OVERLAP_SECONDS", 10.0)
    assert [w for _, w in run_ahead(lambda _: threading.current_thread().name, range(3))] == [here] * 3
    monkeypatch.setattr(ahead, "MIN_OVERLAP_SECONDS", 0.0)
    monkeypatch.setattr(ahead, "PIPELINE", False)
    assert [w for _, w in run_ahead(lambda _: threading.current_thread().name, range(3))] == [here] * 3


def test_an_error_of_a_run_is_raised_at_its_item(monkeypatch):
    monkeypatch.setattr(ahead, "MIN_OVERLAP_SECONDS", 0.0)

    def run(i):
        if i == 2:
            raise ValueError("item 2")
        return i

    got = []
    with pytest.raises(ValueError, match="item 2"):
        for _, r in run_ahead(run, range(5)):
            got.append(r)
    assert got == [0, 1]
