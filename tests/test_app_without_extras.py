"""The app started on the README's CLI-only install (``pip install -e .``, no ``[app]`` extras) prints one line
naming the extras to install and exits 2; it printed a ModuleNotFoundError traceback (PySide6; with
``--self-test``, pyqtgraph). The missing modules are simulated by an import blocker that ``sitecustomize``
installs in the started Python, so the test runs against this environment as it is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from import_blocker import blocked_env

from workbench.qt.main import APP_MODULES, no_app_message


def _start(tmp_path: Path, blocked: tuple[str, ...], *args: str) -> subprocess.CompletedProcess:
    """The ``workbench`` command of this environment (``python -m`` of its entry point where the script is not
    beside the interpreter) with the modules ``blocked``, and a display (so only the extras can stop it)."""
    env = blocked_env(tmp_path, blocked)
    script = Path(sys.executable).with_name("workbench")
    cmd = [str(script)] if script.is_file() else [sys.executable, "-c",
                                                   "import sys; from workbench.qt.main import main; sys.exit(main())"]
    return subprocess.run([*cmd, *args], env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)


@pytest.mark.parametrize("args", [(), ("--self-test",), (str(Path("missing.onnx")),)])
def test_without_pyside6_the_app_says_to_install_the_extras(tmp_path, args):
    run = _start(tmp_path, APP_MODULES, *args)
    assert (run.returncode, run.stdout) == (2, ""), run.stderr
    assert run.stderr == no_app_message("PySide6") + "\n"
    assert "pip install -e '.[app]'" in run.stderr and "Traceback" not in run.stderr


def test_without_pyqtgraph_the_self_test_names_it(tmp_path):
    run = _start(tmp_path, ("pyqtgraph",), "--self-test")
    assert (run.returncode, run.stderr) == (2, no_app_message("pyqtgraph") + "\n")


def test_the_blocker_blocks_and_version_needs_no_extras(tmp_path):
    """The simulation is real (PySide6 cannot be imported under it), and ``--version`` still answers."""
    run = _start(tmp_path, APP_MODULES, "--version")
    assert (run.returncode, run.stdout.split()[0], run.stderr) == (0, "workbench", "")
    site = tmp_path / "site"
    probe = subprocess.run([sys.executable, "-c", "import PySide6"], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONPATH": str(site)})
    assert probe.returncode == 1 and "ModuleNotFoundError: No module named 'PySide6'" in probe.stderr
