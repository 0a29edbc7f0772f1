"""``workbench-cli inspect MODEL | head``: stdout piped into a reader that stopped. The CLI printed a
BrokenPipeError traceback; it now ends quietly with status 141 (128 + SIGPIPE, as a shell tool killed by
the signal), nothing on stderr."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _chain(path: Path, n: int = 300) -> Path:
    inits = [numpy_helper.from_array(np.eye(4, dtype=np.float32), f"w{i}") for i in range(n)]
    nodes = [helper.make_node("MatMul", ["x" if i == 0 else f"t{i - 1}", f"w{i}"], [f"t{i}"], name=f"matmul_{i}")
             for i in range(n)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info(f"t{n - 1}", TensorProto.FLOAT, ["N", 4])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_reader_gone_before_the_output(tmp_path):
    model = _chain(tmp_path / "chain.onnx")
    proc = subprocess.Popen([sys.executable, "-m", "workbench.cli", "inspect", "--units", str(model)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the CLI writes its first line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert err == ""
