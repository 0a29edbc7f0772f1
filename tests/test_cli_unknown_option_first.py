"""An unknown option is the first usage error said: ``quantize m.onnx --datas calib.npz`` without ``-o`` said
"the following arguments are required: -o/--output", and only the command with ``-o`` added said "did you mean
--data?" (found by a new user)."""

from __future__ import annotations

import pytest

from workbench.cli import build_parser
from workbench.cli_usage import unknown_options


@pytest.mark.parametrize("argv", [["quantize", "m.onnx", "--datas", "calib.npz"],
                                  ["quantize", "--datas=calib.npz", "m.onnx"],
                                  ["quantize", "--datas", "calib.npz", "m.onnx", "-o", "q.onnx"]])
def test_quantize_without_output_names_the_mistyped_option_first(usage_error, argv):
    assert usage_error(argv) == ("error: workbench-cli quantize: unrecognized option --datas: did you mean "
                                 "--data? (see workbench-cli quantize --help)")


def test_render_without_output_names_the_mistyped_option_first(usage_error):
    assert usage_error(["render", "m.onnx", "--colour", "op", "--expnd", "2"]) == (
        "error: workbench-cli render: unrecognized option --expnd: did you mean --expand? "
        "(see workbench-cli render --help)")


def test_a_missing_output_alone_is_still_said(usage_error):
    assert usage_error(["quantize", "m.onnx", "--data", "calib.npz"]) == (
        "error: workbench-cli quantize: the following arguments are required: -o/--output "
        "(see workbench-cli quantize --help)")


def test_unknown_options_reads_names_and_stops_at_the_terminator():
    sub = next(a for a in build_parser()._actions if hasattr(a, "choices") and a.choices and "quantize" in a.choices)
    quantize = sub.choices["quantize"]
    assert unknown_options(quantize, ["m.onnx", "--data=c.npz", "--datas=c.npz", "-o", "q.onnx", "--", "--x"]) == [
        "--datas=c.npz"]
    assert unknown_options(quantize, ["m.onnx", "--data", "c.npz", "--samples", "4", "-o", "q.onnx"]) == []
