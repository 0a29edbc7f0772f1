"""``scripts/screenshot.py`` (the README pictures, run by ``scripts/screenshot.sh`` under Xvfb) writes its
picture and exits: after calibrating the bundled example, and on a file quantized elsewhere.

It waited for its 120 s fallback in both cases: the calibration results counted as unsaved work, so the
window's close asked Save / Discard / Cancel (a modal prompt nobody answered), and a quantized file, which
cannot be calibrated, was never grabbed (exit 1, no picture, no message). The script runs in a child
process (it makes its own QApplication); the timeout below is far under that fallback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from PySide6.QtGui import QImage

ROOT = Path(__file__).resolve().parents[2]


def _shoot(out: Path, *model: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "screenshot.py"), str(out), *model],
                          capture_output=True, text=True, timeout=90, env=env, cwd=ROOT)


def _qdq_file(path: Path) -> str:
    """x -> Q/DQ (uint8) -> Conv with an int8 DequantizeLinear weight -> y: a file quantized elsewhere."""
    w = np.arange(-13, 14, dtype=np.int8).reshape(1, 3, 3, 3)
    inits = [numpy_helper.from_array(np.array(0.02, np.float32), "s"), numpy_helper.from_array(np.uint8(128), "z"),
             numpy_helper.from_array(w, "wq"), numpy_helper.from_array(np.array(0.01, np.float32), "ws")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="x_q"),
             helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], name="x_dq"),
             helper.make_node("DequantizeLinear", ["wq", "ws"], ["wd"], name="w_dq"),
             helper.make_node("Conv", ["xd", "wd"], ["y"], name="conv")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 6, 6])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return str(path)


def test_screenshot_of_the_calibrated_example_exits_after_writing(tmp_path):
    out = tmp_path / "shot.png"
    proc = _shoot(out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[-1] == f"wrote {out}"
    assert QImage(str(out)).size().toTuple() == (1400, 860)


def test_screenshot_of_a_quantized_file_is_written_without_calibrating(tmp_path):
    out = tmp_path / "q.png"
    proc = _shoot(out, _qdq_file(tmp_path / "q.onnx"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[-1] == f"wrote {out}"
    assert QImage(str(out)).size().toTuple() == (1400, 860)
