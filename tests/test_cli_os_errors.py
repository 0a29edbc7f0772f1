"""A path the system refuses to look up (a file name over 255 bytes) printed an OSError traceback from
inspect, compare, evaluate, convert, quantize --data and --metric; it is one line naming the path, exit 2."""

from __future__ import annotations

import pytest
from qdq_helpers import cli_model_files

from workbench.cli import main

LONG = "a" * 300


@pytest.mark.parametrize(("argv", "bad"), [
    (["inspect", "{long}.onnx"], "{long}.onnx"),
    (["compare", "m.onnx", "{long}.onnx"], "{long}.onnx"),
    (["convert", "{long}.onnx", "out/c.onnx", "--to", "qonnx"], "{long}.onnx"),
    (["quantize", "m.onnx", "--data", "{long}.npz", "-o", "out/q.onnx"], "{long}.npz"),
    (["evaluate", "m.onnx", "m.onnx", "--data", "calib.npz", "--metric", "{long}.py", "--allow-code"], "{long}.py"),
])
def test_name_too_long(tmp_path, capsys, monkeypatch, argv, bad):
    cli_model_files(tmp_path)
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    assert main([a.format(long=LONG) for a in argv]) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [f"error: {bad.format(long=LONG)}: File name too long. Check the path."]
    assert list((tmp_path / "out").iterdir()) == []


def test_a_folder_that_takes_no_file_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    """-o /proc/x.onnx passed the permission test as root and failed only after calibration and the recipe
    choice ("cannot write (No such file or directory)", after their notes); it is refused up front, one line.
    The probe leaves no file behind in a folder that takes files."""
    cli_model_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    for cmd in (["quantize", "m.onnx", "--data", "calib.npz"], ["autotune", "m.onnx", "--data", "calib.npz",
                                                                 "--eval", "calib.npz", "--metric", "cosine",
                                                                 "--max-drop", "0.1"]):
        assert main([*cmd, "-o", "/proc/x.onnx"]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith("error: /proc/x.onnx: ")
        assert "cannot create a file in /proc" in err[0] or "the folder /proc is not writable" in err[0]
    before = sorted(p.name for p in tmp_path.iterdir())
    (tmp_path / "out").mkdir()
    assert main(["quantize", "m.onnx", "--data", "calib.npz", "--no-latency-check", "-o", "out/q.onnx"]) == 0
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["q.onnx"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "out"])
