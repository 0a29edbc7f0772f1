"""Ctrl-C during ``sweep``: the terminal sends SIGINT to the whole process group, workers included.
The command ends with its one-line "interrupted" and no worker traceback, and leaves no JSON behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest


@pytest.mark.slow
@pytest.mark.parametrize("executor", [["--executor", "processes:2"], []], ids=["processes", "default threads"])
def test_ctrl_c_during_the_sweep_prints_no_worker_traceback(corpus, tmp_path, executor):
    folder = corpus / "digits_transformer"
    out = tmp_path / "sweep.json"
    cmd = [sys.executable, "-m", "workbench.cli", "sweep", str(folder / "model_opset17.onnx"), "--data",
           str(folder / "calib.npz"), "--samples", "32", "--top", "0", "--json", str(out), "--no-latency-check", *executor]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, start_new_session=True)
    seen = []
    for line in proc.stderr:  # progress lines (stderr is not a terminal: one line per message)
        seen.append(line)
        if "Sweeping units (" in line:  # suffix tasks are running in the worker processes (threads)
            os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
            break
    rest = proc.stderr.read()
    code = proc.wait(timeout=120)
    assert any("Sweeping units (" in s for s in seen), "".join(seen)
    assert code != 0 and "interrupted" in rest, rest
    assert "Traceback" not in rest and "KeyboardInterrupt" not in rest, rest
    assert not out.exists()
