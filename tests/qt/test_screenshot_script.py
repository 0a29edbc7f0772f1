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
from bundled_example import EXAMPLE
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


def _run(script: str, args: list[str], data_home: Path, timeout: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT), "XDG_DATA_HOME": str(data_home)}
    return subprocess.run([sys.executable, str(ROOT / "scripts" / script), *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=ROOT)


def test_screenshot_compare_exits_after_writing(tmp_path):
    # it cleared only the undo stack, so the calibration data it picks still counted as unsaved and the close
    # asked Save / Discard / Cancel until its 240 s fallback quit
    from workbench.cli import main

    quant = tmp_path / "q.onnx"
    assert main(["quantize", str(EXAMPLE / "digits_cnn.onnx"), "--data", str(EXAMPLE / "digits_cnn_calib.npz"),
                 "--no-auto", "--no-latency-check", "-o", str(quant)]) == 0
    out = tmp_path / "cmp.png"
    proc = _run("screenshot_compare.py", [str(out), str(EXAMPLE / "digits_cnn.onnx"), str(quant), "--data",
                                          str(EXAMPLE / "digits_cnn_calib.npz"), "--samples", "3"],
                tmp_path / "data", 120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # --samples reaches the comparison: it measured on the app's 32 Analysis samples whatever was given
    assert proc.stdout.splitlines()[-2:] == ["SQNR measured on 3 samples", f"wrote {out}"]
    assert QImage(str(out)).size().toTuple() == (1600, 960)


def test_screenshot_evaluation_exits_and_leaves_no_autosave(corpus, tmp_path):
    # it quit without closing the window: the close Qt makes on quit asked to save the results, the 300 s
    # fallback ended it, and the autosave written meanwhile in the user's folder was offered back (a modal
    # prompt) by the next run, which then never opened its model
    out, data_home = tmp_path / "autotune.png", tmp_path / "data"
    proc = _run("screenshot_evaluation.py", ["autotune", str(out), str(corpus)], data_home, 150)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[-1] == f"wrote {out}"
    assert QImage(str(out)).size().toTuple() == (1500, 900)
    assert not list(data_home.rglob("*.wbproj"))
