"""``quantize -o MODEL --save-project PROJECT``: the project waits in a temp file until the model is
in place and lands right after it; a temp file of ours left by a killed run is removed by the next
run. (scripts/kill_pair.py does the same with 40 SIGKILLs at random moments on digits_cnn.)"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from qdq_helpers import save_matmul_model

from workbench.cli import main

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def job(tmp_path):
    rng = np.random.default_rng(0)
    save_matmul_model(tmp_path / "m.onnx", rng)
    np.savez(tmp_path / "calib.npz", X=rng.standard_normal((8, 4)).astype(np.float32))
    return ["quantize", str(tmp_path / "m.onnx"), "--data", str(tmp_path / "calib.npz"), "-o",
            str(tmp_path / "out.onnx"), "--save-project", str(tmp_path / "job.wbproj")]


def _temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and ".tmp" in p.name)


def test_leftover_temp_files_of_a_killed_run_are_removed_by_the_next_run(job, tmp_path):
    (tmp_path / ".job.wbproj.k1ll3d.tmp").write_text("{half a project")
    (tmp_path / ".out.onnx.k1ll3d.tmp").write_bytes(b"\x08\x08half a model")
    assert main(job) == 0
    assert _temps(tmp_path) == []
    onnx.checker.check_model(onnx.load(str(tmp_path / "out.onnx")))
    assert json.loads((tmp_path / "job.wbproj").read_text())["model"]["path"] == "m.onnx"


def test_a_project_named_after_the_model_file_lands_beside_it(job, tmp_path):
    """``-o out.onnx --save-project out.onnx.wbproj``: the model's write used to take the staged
    project's temporary file (".out.onnx.wbproj.XXXX.tmp") for a leftover of its own and delete it,
    and the project then failed with "cannot write (No such file or directory)"."""
    argv = job[:-1] + [str(tmp_path / "out.onnx.wbproj")]
    assert main(argv) == 0
    assert json.loads((tmp_path / "out.onnx.wbproj").read_text())["model"]["path"] == "m.onnx"
    onnx.checker.check_model(onnx.load(str(tmp_path / "out.onnx")))
    assert _temps(tmp_path) == []


def test_export_failure_writes_neither_file_nor_leaves_a_temp(job, tmp_path, monkeypatch, capsys):
    from workbench.core import api
    from workbench.core.errors import ExportError

    def fail(*a, **k):
        raise ExportError("out.onnx: the disk is full.", hint="Free some space.")

    monkeypatch.setattr(api, "export", fail, raising=False)
    assert main(job) == 2
    assert not (tmp_path / "out.onnx").exists() and not (tmp_path / "job.wbproj").exists()
    assert _temps(tmp_path) == []


def test_sigkill_while_the_project_is_staged_leaves_neither_and_the_next_run_cleans_up(job, tmp_path):
    """The process is killed after the project is staged and before the model is written."""
    script = ("import os, signal, sys\n"
              "from workbench.core import api\n"
              "from workbench import cli\n"
              "api.export = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)\n"
              f"cli.main({job!r})\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == -signal.SIGKILL
    assert not (tmp_path / "out.onnx").exists() and not (tmp_path / "job.wbproj").exists()
    assert any(name.startswith(".job.wbproj.") for name in _temps(tmp_path))  # the staged project
    assert main(job) == 0
    assert _temps(tmp_path) == []
    assert (tmp_path / "out.onnx").is_file() and (tmp_path / "job.wbproj").is_file()


def test_sigkill_between_the_model_rename_and_the_project_rename_is_repaired_by_the_next_run(job, tmp_path):
    """The one window two renames cannot close: the model is in place, the project still in its
    complete temp file. The next run removes that temp file and lands both, matching."""
    script = ("import os, signal\n"
              "from workbench.core.io import atomic\n"
              "from workbench import cli\n"
              "atomic.StagedWrite.commit = lambda self: os.kill(os.getpid(), signal.SIGKILL)\n"
              f"cli.main({job!r})\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == -signal.SIGKILL
    onnx.checker.check_model(onnx.load(str(tmp_path / "out.onnx")))
    assert not (tmp_path / "job.wbproj").exists()
    staged = [name for name in _temps(tmp_path) if name.startswith(".job.wbproj.")]
    assert len(staged) == 1 and json.loads((tmp_path / staged[0]).read_text())["model"]["path"] == "m.onnx"
    assert main(job) == 0
    assert _temps(tmp_path) == []
    project = json.loads((tmp_path / "job.wbproj").read_text())
    stamped = json.loads({p.key: p.value for p in onnx.load(str(tmp_path / "out.onnx")).metadata_props}
                         ["workbench.recipe"])
    assert project["model"]["path"] == "m.onnx"
    assert {k: v for k, v in stamped.items() if k != "preset"} == \
        {k: v for k, v in project["recipe"].items() if k != "preset"}
