"""Usage errors of the verbs: a mistyped option gets the close name and the verb's help (it pointed to the
top-level help, without a suggestion), an abbreviation is refused in every verb (``--sample`` was taken as
``--samples`` silently), and a data file where the model goes is said to look swapped."""

from __future__ import annotations

import argparse

import pytest

from workbench.cli import build_parser, main


def test_mistyped_option_names_the_close_one_and_the_verbs_help(corpus, usage_error):
    model = str(corpus / "digits_cnn" / "model_opset13.onnx")
    assert usage_error(["cost", model, "--datas", "calib.npz"]) == (
        "error: workbench-cli cost: unrecognized option --datas: did you mean --data? "
        "(see workbench-cli cost --help)")
    assert usage_error(["evaluate", model, model, "--data", "e.npz", "--metric-out", "x"]) == (
        "error: workbench-cli evaluate: unrecognized option --metric-out: did you mean --metric-output? "
        "(see workbench-cli evaluate --help)")


@pytest.mark.parametrize("verb", ["quantize", "analyze", "sweep", "report", "render", "evaluate", "compare"])
def test_abbreviated_option_is_refused_in_every_verb(corpus, usage_error, verb):
    model = str(corpus / "digits_cnn" / "model_opset13.onnx")
    positional = [model, model] if verb in ("evaluate", "compare") else [model]
    err = usage_error([verb, *positional, "--sample", "3", "--data", "calib.npz", "-o", "out.onnx"])
    assert err == (f"error: workbench-cli {verb}: unrecognized option --sample: did you mean --samples? "
                   f"(see workbench-cli {verb} --help)")


def test_every_parser_refuses_abbreviations():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert [name for name, p in {"": parser, **sub.choices}.items() if p.allow_abbrev] == []


def test_data_file_where_the_model_goes_looks_swapped(corpus, usage_error):
    d = corpus / "digits_cnn"
    model, calib = str(d / "model_opset13.onnx"), str(d / "calib.npz")
    # -o is missing too: the swap is said first, not "required: -o"
    assert usage_error(["quantize", calib, model]) == (
        f"error: workbench-cli quantize: {calib} is data and {model} a model: the arguments look swapped; give "
        f"the model first and the data with --data: workbench-cli quantize {model} --data {calib} "
        "(see workbench-cli quantize --help)")
    assert usage_error(["cost", calib]) == (
        f"error: workbench-cli cost: {calib} is data, not a model: give the model first (MODEL.onnx) and the data "
        f"with --data: workbench-cli cost MODEL.onnx --data {calib} (see workbench-cli cost --help)")
    assert usage_error(["quantize", model, calib, "-o", "out.onnx"]) == (
        f"error: workbench-cli quantize: unrecognized argument {calib}: did you mean --data {calib}? "
        "(see workbench-cli quantize --help)")


def test_option_values_are_not_taken_for_positionals(corpus, capsys):
    """``--data calib.npz`` before the model is the data, not a swapped model."""
    d = corpus / "digits_cnn"
    assert main(["cost", "--data", str(d / "calib.npz"), str(d / "model_opset13.onnx"), "--json"]) == 0
    assert '"macs"' in capsys.readouterr().out


@pytest.mark.parametrize(("typed", "verb"), [("quantise", "quantize"), ("analyse", "analyze"), ("inspct", "inspect"),
                                             ("Compare", "compare"), ("autotun", "autotune")])
def test_mistyped_command_names_the_close_one(usage_error, typed, verb):
    assert usage_error([typed, "model.onnx", "--data", "calib.npz"]) == (
        f"error: workbench-cli: unknown command '{typed}': did you mean '{verb}'? (see workbench-cli --help)")
    assert usage_error(["-v", typed]) == (
        f"error: workbench-cli: unknown command '{typed}': did you mean '{verb}'? (see workbench-cli --help)")


def test_unknown_command_lists_the_commands_and_a_model_first_is_told_the_order(usage_error):
    verbs = "inspect, quantize, evaluate, compare, analyze, sweep, autotune, convert, cost, report, render, presets"
    assert usage_error(["frobnicate"]) == (
        f"error: workbench-cli: unknown command 'frobnicate': the commands are {verbs} (see workbench-cli --help)")
    assert usage_error(["model.onnx", "--data", "calib.npz"]) == (
        "error: workbench-cli: model.onnx: the command comes first, e.g. workbench-cli inspect model.onnx "
        f"(the commands: {verbs}) (see workbench-cli --help)")


def test_command_typed_as_an_option_is_told_to_drop_the_dashes(usage_error):
    assert usage_error(["--quantize", "model.onnx", "--data", "calib.npz"]) == (
        "error: workbench-cli: unrecognized option --quantize: commands are written without dashes (workbench-cli "
        "quantize ...) (see workbench-cli --help)")
    assert usage_error(["-v", "--Inspect"]) == (
        "error: workbench-cli: unrecognized option --Inspect: commands are written without dashes (workbench-cli "
        "inspect ...) (see workbench-cli --help)")
