"""A recipe entry or ``--exclude`` pattern that matches no node is warned about by every verb that plans the
recipe, as ``quantize`` and ``cost`` warn: ``analyze``, ``sweep``, ``report``, ``render`` and ``autotune`` said
nothing, so a typo in a node name silently changed nothing in their figures."""

from __future__ import annotations

import json

import pytest
from bundled_example import EXAMPLE

from workbench.cli import main

MODEL, CALIB, EVAL = (str(EXAMPLE / f) for f in ("digits_cnn.onnx", "digits_cnn_calib.npz", "digits_cnn_eval.npz"))
EXCLUDE_WARNING = ("warning: exclude '/no/such/*' matches no node name of the model, so it keeps nothing float; use a "
                   "name shown by `workbench-cli inspect` (case-sensitive; * matches any run of characters, e.g. "
                   "'/f/f.0/*')")
RULE_WARNING = ("warning: recipe rules[0] (rule name=/no/such/Conv) matches no node of the model; check its spelling "
                "(op types and names are case-sensitive)")


def _warnings(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]


@pytest.mark.parametrize("verb", ["analyze", "sweep"])
def test_job_verbs_warn_about_an_exclude_matching_nothing(verb, tmp_path, capsys):
    argv = [verb, MODEL, "--data", CALIB, "--samples", "8", "--no-auto", "--no-latency-check", "--exclude", "/no/such/*"]
    assert main(argv) == 0
    assert _warnings(capsys) == [EXCLUDE_WARNING]


def test_report_warns_about_a_recipe_rule_matching_nothing(tmp_path, capsys):
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"preset": "cpu-u8s8", "rules": [{"name": "/no/such/Conv",
                                                                    "activation": {"dtype": "uint16"}}]}))
    out = tmp_path / "r.html"
    assert main(["report", MODEL, "--data", CALIB, "--samples", "8", "--recipe", str(recipe), "--no-latency-check",
                 "-o", str(out)]) == 0
    assert _warnings(capsys) == [RULE_WARNING.replace("warning: ", f"warning: {recipe}: ", 1)] and out.is_file()


def test_autotune_warns_about_an_exclude_matching_nothing(tmp_path, capsys):
    out = tmp_path / "t.onnx"
    main(["autotune", MODEL, "--data", CALIB, "--eval", EVAL, "--samples", "8", "--eval-samples", "16",
          "--metric", "top1", "--max-trials", "2", "--no-latency-check", "--exclude", "/no/such/*",
          "-o", str(out)])
    assert _warnings(capsys)[0] == EXCLUDE_WARNING


def test_render_dtype_warns_about_a_recipe_rule_matching_nothing(tmp_path, capsys):
    pytest.importorskip("PySide6")
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"preset": "cpu-u8s8", "rules": [{"name": "/no/such/Conv",
                                                                    "activation": {"dtype": "uint16"}}]}))
    assert main(["render", MODEL, "--colour", "dtype", "--recipe", str(recipe), "-o", str(tmp_path / "g.svg")]) == 0
    assert _warnings(capsys) == [RULE_WARNING.replace("warning: ", f"warning: {recipe}: ", 1)]
