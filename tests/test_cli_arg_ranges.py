"""Numeric options out of their range are refused by argparse in one line naming the option, before any
work and without writing anything: ``cost --batch 0`` (it printed 0 MACs for every node), ``cost --batch -1``
("?" MACs), ``render --expand -1`` (drawn as if given a depth), ``autotune --min-score nan`` (ran the whole
tuning, wrote the model and exited 1: a NaN target is never met)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from qdq_helpers import cli_model_files

from workbench.cli import main


def _model(folder: Path) -> Path:
    path = cli_model_files(folder, "conv")
    np.savez(folder / "eval.npz", x=np.load(folder / "calib.npz")["x"], gt_label=np.arange(8) % 4)
    return path


@pytest.mark.parametrize(("argv", "flag", "says"), [
    (["cost", "{m}", "--batch", "0"], "--batch", "0: give 1 or more"),
    (["cost", "{m}", "--batch", "-1"], "--batch", "-1: give 1 or more"),
    (["render", "{m}", "--expand", "-1", "-o", "{out}/g.png"], "--expand", "-1: give 0 or more"),
    (["autotune", "{m}", "--data", "{d}/calib.npz", "--eval", "{d}/eval.npz", "--min-score", "nan", "-o", "{out}/a.onnx"],
     "--min-score", "nan: give a finite number"),
    (["autotune", "{m}", "--data", "{d}/calib.npz", "--eval", "{d}/eval.npz", "--min-score", "inf", "-o", "{out}/a.onnx"],
     "--min-score", "inf: give a finite number"),
])
def test_out_of_range_refused(tmp_path, capsys, argv, flag, says):
    model = _model(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    argv = [a.format(m=model, d=tmp_path, out=out) for a in argv]
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert exit_.value.code == 2
    assert len(lines) == 1 and lines[0].startswith("error: ") and f"argument {flag}: {says}" in lines[0], lines
    assert captured.out == "" and list(out.iterdir()) == []


@pytest.mark.parametrize(("dims", "says"), [
    ("-1x1x8x8", "dimension -1 is not allowed: every dimension is 1 or more (the size the model runs at, not -1 or 0 "
                 "for a dynamic one)."),
    ("1,0,8,8", "dimension 0 is not allowed: every dimension is 1 or more (the size the model runs at, not -1 or 0 "
                "for a dynamic one)."),
    ("1xbx8x8", "'1xbx8x8' is not a list of whole numbers (e.g. 1,3,224,224 or 1x3x224x224)."),
])
def test_input_shape_with_a_negative_or_zero_dimension_says_so(tmp_path, capsys, dims, says):
    """``--input-shape x:-1x1x8x8`` was "not a list of whole numbers (e.g. 1,3,224,224)": -1 is one, and the
    help and the message of 0 spell the dimensions with x."""
    model = _model(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(["cost", str(model), "--input-shape", f"x:{dims}"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == (f"error: workbench-cli cost: argument --input-shape: 'x:{dims}': {says} "
                                       "(see workbench-cli cost --help)\n")


def test_a_sample_count_beyond_any_data_means_every_row(tmp_path, capsys):
    """``--samples 10**30`` (or a project's "samples" of that size) ended in a ValueError traceback from
    itertools.islice; it reads every row, as no --samples does."""
    model = _model(tmp_path)
    data, huge = str(tmp_path / "calib.npz"), str(10**30)
    every, capped = tmp_path / "every.onnx", tmp_path / "capped.onnx"
    flags = ["--no-auto", "--no-latency-check"]
    assert main(["quantize", str(model), "--data", data, *flags, "-o", str(every)]) == 0
    assert main(["quantize", str(model), "--data", data, "--samples", huge, *flags, "-o", str(capped),
                 "--save-project", str(tmp_path / "job.wbproj")]) == 0
    assert capped.read_bytes() == every.read_bytes()
    assert json.loads((tmp_path / "job.wbproj").read_text())["samples"] == 10**30
    capsys.readouterr()
    assert main(["evaluate", str(model), str(capped), "--data", data, "--samples", huge]) == 0
    assert "Traceback" not in capsys.readouterr().err
