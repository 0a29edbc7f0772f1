"""The progress lines autotune prints per trial (the CLI's stderr, the app's status line) count their
units with the right noun and list the levels in one order."""

from __future__ import annotations

import re

from workbench.core import api
from workbench.core.tuning.autotune import describe_levels


def test_levels_are_listed_float_first_whatever_was_promoted_first():
    # digits_transformer's walk printed "(1 float, 35 int16)" and then "(35 int16, 1 float)"
    assert describe_levels({"a": "int16", "b": "float", "c": "int16"}) == "1 float, 2 int16"
    assert describe_levels({"b": "float", "a": "int16", "c": "int16"}) == "1 float, 2 int16"
    assert describe_levels({"a": "uint16", "b": "int16"}) == "1 int16, 1 uint16"
    assert describe_levels({}) == ""


def test_a_trial_with_one_unit_promoted_says_unit(corpus):
    """digits_cnn, 5 units, SQNR target out of reach: the walk measures single-unit trials, whose line read
    '1 units promoted (1 int16): metric ...'."""
    folder = corpus / "digits_cnn"
    lines: list[str] = []
    api.autotune(api.open_model(folder / "model_opset17.onnx"), api.make_recipe("cpu-u8s8"),
                 data=str(folder / "calib.npz"), eval_data=str(folder / "eval.npz"), metric="output_sqnr",
                 min_score=46.0, samples=16, eval_samples=16, max_trials=8,
                 progress=lambda done, total, message: lines.append(message))
    trials = [m for m in lines if " promoted (" in m]
    assert trials
    counts = [int(re.match(r"(\d+) units? promoted", m).group(1)) for m in trials]
    assert 1 in counts, trials  # the case: a single unit
    for m, k in zip(trials, counts, strict=True):
        assert m.startswith(f"{k} unit promoted" if k == 1 else f"{k} units promoted"), m
        levels = re.search(r"promoted \((.*)\):", m).group(1).split(", ")
        names = [part.split(" ", 1)[1] for part in levels]
        assert names == sorted(names, key=lambda lv: (lv != "float", lv)), m


def test_the_cli_summary_counts_its_noun_and_lists_float_first():
    """The 'after autotune' and 'target NOT met' lines: '1 units promoted: 1 to int16' before, and the levels in the
    order the units were promoted."""
    from workbench.cli import _promoted_summary

    assert _promoted_summary({"a": "int16"}) == "1 unit promoted: 1 to int16"
    assert _promoted_summary({"a": "int16", "b": "float", "c": "int16"}) == "3 units promoted: 1 to float, 2 to int16"
    assert _promoted_summary({}) == "no unit promoted"
