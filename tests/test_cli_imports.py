"""The CLI imports only what the verb needs: ``--help`` and ``inspect`` never load the heavy libraries.

Each case runs the CLI in a fresh interpreter and lists ``sys.modules`` afterwards (no timing:
which modules are loaded is what makes a verb start slowly, and that is exact).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from qdq_helpers import save_matmul_model

ROOT = Path(__file__).resolve().parent.parent
#: loaded on first use only: inference, compiled observer kernels, graph IR (and sympy), distributed runs, plots
HEAVY = ("onnxruntime", "onnx_ir", "sympy", "numba", "scipy", "ray", "matplotlib", "igraph")

_PROBE = """
import json, sys
from workbench.cli import main
try:
    rc = main(sys.argv[1:])
except SystemExit as exc:
    rc = exc.code
print(json.dumps({"rc": rc, "modules": sorted(sys.modules)}))
"""


def _modules_after(*argv: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", _PROBE, *argv], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    last = json.loads(out.stdout.strip().splitlines()[-1])
    assert last["rc"] == 0, out.stderr
    return {m.split(".")[0] for m in last["modules"]}


@pytest.mark.parametrize("verb", ["quantize", "sweep", "analyze", "autotune"])
def test_help_loads_no_model_library(verb):
    loaded = _modules_after(verb, "--help")
    assert loaded.isdisjoint(HEAVY + ("onnx", "numpy", "pydantic")), sorted(loaded & {*HEAVY, "onnx", "numpy"})


def test_inspect_loads_onnx_but_not_the_runtime_or_the_planner(tmp_path):
    model = save_matmul_model(tmp_path / "m.onnx", np.random.default_rng(0))
    loaded = _modules_after("inspect", str(model))
    assert "onnx" in loaded  # the probe really ran the verb
    assert loaded.isdisjoint(HEAVY + ("pydantic",)), sorted(loaded & {*HEAVY, "pydantic"})
    # --units asks for the planner's view: the recipe (pydantic) loads, inference still does not
    loaded = _modules_after("inspect", str(model), "--units")
    assert "pydantic" in loaded and loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))
