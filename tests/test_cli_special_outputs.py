"""An output path that is a FIFO (or a device such as /dev/null) is refused before the job: outputs are
written to a temporary file renamed over the path, which replaced the device node itself with a regular
file (as root, `quantize ... -o /dev/null` turned /dev/null into a 34 KB model file)."""

from __future__ import annotations

import os
import stat

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main


def _model(tmp_path):
    w = numpy_helper.from_array(np.random.default_rng(0).normal(size=(4, 3, 3, 3)).astype(np.float32), "W")
    g = helper.make_graph([helper.make_node("Conv", ["x", "W"], ["y"], name="conv", pads=[1, 1, 1, 1])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 8, 8])], [w])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    data = tmp_path / "calib.npz"
    np.savez(data, x=np.random.default_rng(1).random((8, 3, 8, 8)).astype(np.float32))
    return path, data


@pytest.mark.parametrize("verb", ["quantize", "analyze-json", "report", "convert"])
def test_fifo_output_is_refused_and_kept(tmp_path, capsys, verb):
    model, data = _model(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    if verb == "convert":
        q = tmp_path / "q.onnx"
        assert main(["quantize", str(model), "--data", str(data), "--no-auto", "-o", str(q)]) == 0
        capsys.readouterr()
        argv = ["convert", str(q), str(fifo), "--to", "qonnx"]
        flag = "--output"
    elif verb == "analyze-json":
        argv = ["analyze", str(model), "--data", str(data), "--json", str(fifo)]
        flag = "--json"
    else:
        argv = [verb, str(model), "--data", str(data), "-o", str(fifo)]
        flag = "--output"
    code = main(argv)
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("error:")]
    assert code == 2 and err == [f"error: {fifo}: is a FIFO, not a regular file; writing {flag} there would "
                                 "replace it with a file. Give the path of a regular file (to discard the output, "
                                 "write it to a temporary folder)."]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert not (tmp_path / "q.onnx").exists() or verb == "convert"
