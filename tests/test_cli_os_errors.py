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
