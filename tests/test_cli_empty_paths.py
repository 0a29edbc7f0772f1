"""A path given as an empty string (``--data "$CALIB"`` with the variable unset) is refused before any work,
in one line naming the argument. ``--data ""`` read the current folder: quantize calibrated on every .npz in
it (the eval file's rows too) and wrote the model; ``-o ""`` quantized, then failed writing ".";
``convert IN ""`` failed the same way."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from qdq_helpers import cli_model_files

from workbench.cli import main


def _files(folder: Path) -> None:
    cli_model_files(folder, eval_labels=np.arange(8) % 8)


@pytest.mark.parametrize(("argv", "flag"), [
    (["quantize", "m.onnx", "--data", "", "-o", "out/q.onnx"], "--data"),
    (["quantize", "m.onnx", "--data", "calib.npz", "-o", ""], "--output"),
    (["compare", "m.onnx", "m.onnx", "--data", ""], "--data"),
    (["analyze", "m.onnx", "--data", "calib.npz", "--eval", ""], "--eval"),
    (["evaluate", "", "m.onnx", "--data", "eval.npz"], "MODEL"),
    (["convert", "m.onnx", "", "--to", "qonnx"], "OUTPUT"),
    (["quantize", "m.onnx", "--data", "calib.npz", "--recipe", "", "-o", "out/q.onnx"], "--recipe"),
    (["analyze", "m.onnx", "--data", "calib.npz", "--json", ""], "--json"),
])
def test_empty_path_refused(tmp_path, capsys, monkeypatch, argv, flag):
    _files(tmp_path)
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.splitlines() == [f"error: {flag} is an empty path (an unset shell variable?). Give {flag} the "
                                         "path of a file."]
    assert captured.out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == before and list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize("argv", [["quantize", "m.onnx", "--data", "calib.npz", "--preset", "", "-o", "out/q.onnx"],
                                  ["cost", "m.onnx", "--preset", ""]])
def test_empty_preset_refused(tmp_path, capsys, monkeypatch, argv):
    """``--preset ""`` quantized (or counted) with the default preset cpu-u8s8 without a word."""
    _files(tmp_path)
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == ["error: unknown preset ''. Use one of: cpu-u8s8, s8s8, a16w8, w4-block, "
                                         "fp8-e4m3, dynamic-u8."]
    assert captured.out == "" and list((tmp_path / "out").iterdir()) == []


def test_empty_preset_beside_a_project_refused(tmp_path, capsys, monkeypatch):
    """A replayed project brings its recipe: ``--preset ""`` beside it was ignored, as any --preset is refused."""
    _files(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["quantize", "m.onnx", "--data", "calib.npz", "--no-auto", "--no-latency-check", "-o", "first.onnx",
                 "--save-project", "p.wbproj"]) == 0
    capsys.readouterr()
    assert main(["quantize", "p.wbproj", "--preset", "", "-o", "second.onnx"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("error: p.wbproj: --preset does not apply to a replayed project")
    assert not (tmp_path / "second.onnx").exists()
