"""A path given as an empty string (``--data "$CALIB"`` with the variable unset) is refused before any work,
in one line naming the argument. ``--data ""`` read the current folder: quantize calibrated on every .npz in
it (the eval file's rows too) and wrote the model; ``-o ""`` quantized, then failed writing ".";
``convert IN ""`` failed the same way."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main


def _files(folder: Path) -> None:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.normal(size=(4, 8)).astype(np.float32), "W")
    node = helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(folder / "m.onnx"))
    np.savez(folder / "calib.npz", x=rng.random((8, 4)).astype(np.float32))
    np.savez(folder / "eval.npz", x=rng.random((8, 4)).astype(np.float32), gt_label=np.arange(8) % 8)


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
