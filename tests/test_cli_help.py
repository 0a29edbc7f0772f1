"""Every positional argument of every command says what it is in --help (evaluate's MODEL and
QUANTIZED, autotune's, cost's, convert's ... had no text: which file goes first was a guess)."""

from __future__ import annotations

import argparse

from workbench.cli import build_parser, main


def test_every_positional_argument_is_described():
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    bare = [f"{name} {a.dest}" for name, parser in sub.choices.items() for a in parser._actions
            if not a.option_strings and not a.help]
    assert bare == []


def test_evaluate_help_says_which_model_goes_first(capsys):
    try:
        main(["evaluate", "--help"])
    except SystemExit as exc:
        assert exc.code == 0
    lines = [" ".join(ln.split()) for ln in capsys.readouterr().out.splitlines()]
    assert "model the float model (MODEL.onnx)" in lines
    assert any(ln.startswith("quantized its quantized version (a QDQ .onnx") for ln in lines)
    assert any(ln.startswith("--samples SAMPLES use at most the first N eval samples") for ln in lines)
