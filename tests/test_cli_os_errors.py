"""A path the system refuses to look up (a file name over 255 bytes) printed an OSError traceback from
inspect, compare, evaluate, convert, quantize --data and --metric; it is one line naming the path, exit 2."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main

LONG = "a" * 300


def _files(folder: Path) -> None:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.normal(size=(4, 8)).astype(np.float32), "W")
    node = helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(folder / "m.onnx"))
    np.savez(folder / "calib.npz", x=rng.random((8, 4)).astype(np.float32))


@pytest.mark.parametrize(("argv", "bad"), [
    (["inspect", "{long}.onnx"], "{long}.onnx"),
    (["compare", "m.onnx", "{long}.onnx"], "{long}.onnx"),
    (["convert", "{long}.onnx", "out/c.onnx", "--to", "qonnx"], "{long}.onnx"),
    (["quantize", "m.onnx", "--data", "{long}.npz", "-o", "out/q.onnx"], "{long}.npz"),
    (["evaluate", "m.onnx", "m.onnx", "--data", "calib.npz", "--metric", "{long}.py", "--allow-code"], "{long}.py"),
])
def test_name_too_long(tmp_path, capsys, monkeypatch, argv, bad):
    _files(tmp_path)
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    assert main([a.format(long=LONG) for a in argv]) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [f"error: {bad.format(long=LONG)}: File name too long. Check the path."]
    assert list((tmp_path / "out").iterdir()) == []
