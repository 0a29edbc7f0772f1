"""Numeric options out of their range are refused by argparse in one line naming the option, before any
work and without writing anything: ``cost --batch 0`` (it printed 0 MACs for every node), ``cost --batch -1``
("?" MACs), ``render --expand -1`` (drawn as if given a depth), ``autotune --min-score nan`` (ran the whole
tuning, wrote the model and exited 1: a NaN target is never met)."""

from __future__ import annotations

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
