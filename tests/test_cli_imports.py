"""The CLI imports only what the verb needs: ``--help`` and ``inspect`` never load the heavy libraries
(and ``inspect`` of a model preparation would not change loads neither onnx nor numpy).

Each case runs the CLI in a fresh interpreter and lists ``sys.modules`` afterwards (no timing:
which modules are loaded is what makes a verb start slowly, and that is exact).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
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


def _all_modules_after(*argv: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", _PROBE, *argv], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    last = json.loads(out.stdout.strip().splitlines()[-1])
    assert last["rc"] == 0, out.stderr
    return set(last["modules"])


def _modules_after(*argv: str) -> set[str]:
    return {m.split(".")[0] for m in _all_modules_after(*argv)}


@pytest.mark.parametrize("verb", ["quantize", "sweep", "analyze", "autotune"])
def test_help_loads_no_model_library(verb):
    loaded = _modules_after(verb, "--help")
    assert loaded.isdisjoint(HEAVY + ("onnx", "numpy", "pydantic")), sorted(loaded & {*HEAVY, "onnx", "numpy"})


def test_inspect_of_a_plain_model_loads_neither_onnx_nor_numpy(tmp_path):
    """A model preparation leaves as it is: read with onnx's protobuf classes and its shape
    inference extension only (the onnx package, numpy and everything heavy stay unloaded)."""
    model = save_matmul_model(tmp_path / "m.onnx", np.random.default_rng(0))
    loaded = _all_modules_after("inspect", str(model))
    assert "onnx.onnx_cpp2py_export" in loaded  # the probe really ran shape inference
    tops = {m.split(".")[0] for m in loaded}
    assert "onnx" not in loaded and "numpy" not in tops, sorted(m for m in loaded if m.startswith(("onnx", "numpy")))
    assert tops.isdisjoint(HEAVY + ("pydantic", "google.protobuf.json_format")), sorted(tops & {*HEAVY, "pydantic"})


def test_inspect_loads_onnx_but_not_the_runtime_or_the_planner(tmp_path):
    # an unnamed node: preparation renames it, so inspect takes the full path (onnx loaded)
    model = save_matmul_model(tmp_path / "m.onnx", np.random.default_rng(0))
    proto = onnx.load(str(model))
    proto.graph.node[0].name = ""
    onnx.save(proto, str(model))
    loaded = _modules_after("inspect", str(model))
    assert "onnx" in loaded and "numpy" in loaded  # the full path really ran
    assert loaded.isdisjoint(HEAVY + ("pydantic",)), sorted(loaded & {*HEAVY, "pydantic"})
    # --units asks for the planner's view: the recipe loads (a built-in preset's, without pydantic),
    # inference still does not
    every = _all_modules_after("inspect", str(model), "--units")
    loaded = {m.split(".")[0] for m in every}
    assert "workbench.core.recipe.recipe" in every and loaded.isdisjoint(HEAVY + ("pydantic",)), \
        sorted(loaded & {*HEAVY, "pydantic"})


@pytest.mark.parametrize(("preset", "numpy_first", "want"), [(None, False, "1"), ("3", False, "3"), (None, True, None)])
def test_the_cli_asks_for_one_openblas_thread_unless_told_otherwise(preset, numpy_first, want):
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if preset:
        env["OPENBLAS_NUM_THREADS"] = preset
    code = ("import os, sys\n" + ("import numpy\n" if numpy_first else "")
            + "from workbench.cli import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
            + "print(os.environ.get('OPENBLAS_NUM_THREADS'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip().splitlines()[-1] == str(want)


#: a QDQ quantize with the preset as it is (--no-auto) and no latency check never loads these: the recipe
#: choice, the latency cache's folder lookup, the thread pool of a calibration whose runs are too short to
#: overlap, "did you mean" matching, the QONNX converter, writer and reader (a QDQ export), inspect's
#: quantization summary and its readers (the already-quantized check loads them to word the refusal of a
#: quantized model only), the histogram
#: observers' compiled loops (MinMax only), pydantic (a built-in preset is no recipe file to validate) and
#: OpenSSL (``_hashlib``: hashlib, hmac and secrets; small inputs are hashed by the built-in SHA-256)
NOT_FOR_A_PLAIN_QUANTIZE = ("workbench.core.tuning.recipe_choice", "platformdirs", "concurrent.futures", "difflib",
                            "workbench.core.qonnx.export", "workbench.core.qonnx.convert",
                            "workbench.core.qonnx.writer", "workbench.core.qonnx.reader",
                            "workbench.core.inspection.quant_summary", "workbench.core.inspection.quant_reader",
                            "workbench.core.graph.layout", "llvmlite",
                            "pydantic", "pydantic_core", "_hashlib", "hmac",
                            "secrets")

_QUANTIZE_PROBE = """
import json, sys
from workbench.core.calibration import calibrate
calibrate.MIN_OVERLAP_SECONDS = float("inf")  # no run is long enough to overlap: the thread pool is never needed
from workbench.cli import main
rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "modules": sorted(sys.modules)}))
"""


def test_a_plain_quantize_loads_only_what_it_runs(tmp_path):
    """Each module a run does not use costs resident memory for the whole job (digits_cnn's peak is
    mostly fixed cost); which modules are loaded is exact, so that is what is checked."""
    model = save_matmul_model(tmp_path / "m.onnx", np.random.default_rng(0))
    np.savez(tmp_path / "calib.npz", X=np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32))
    out = subprocess.run([sys.executable, "-c", _QUANTIZE_PROBE, "quantize", str(model), "--data",
                          str(tmp_path / "calib.npz"), "-o", str(tmp_path / "q.onnx"), "--no-auto",
                          "--no-latency-check"], cwd=ROOT, capture_output=True, text=True, check=True)
    last = json.loads(out.stdout.strip().splitlines()[-1])
    assert last["rc"] == 0, out.stderr
    assert onnx.load(str(tmp_path / "q.onnx")).graph.node  # the job really ran to the written file
    loaded = set(last["modules"])
    assert "workbench.core.calibration.calibrate" in loaded and "onnxruntime" in loaded
    assert loaded.isdisjoint(NOT_FOR_A_PLAIN_QUANTIZE), sorted(loaded & set(NOT_FOR_A_PLAIN_QUANTIZE))


def test_a_default_quantize_of_a_small_model_loads_no_openssl(corpus, tmp_path):
    """With the latency check on (the default), digits_cnn's first Conv and its AveragePool are probed: the
    probes' weights and inputs come from runtime.probe_values, not numpy.random, whose import loads secrets,
    hmac and OpenSSL (``_hashlib``, 3.4 MiB resident). digits_cnn is small enough to be hashed without
    OpenSSL (io.digest), so nothing else loads it."""
    folder = corpus / "digits_cnn"
    out = subprocess.run([sys.executable, "-c", _QUANTIZE_PROBE, "quantize", str(folder / "model_opset17.onnx"),
                          "--data", str(folder / "calib.npz"), "-o", str(tmp_path / "q.onnx")],
                         cwd=ROOT, capture_output=True, text=True, check=True)
    last = json.loads(out.stdout.strip().splitlines()[-1])
    assert last["rc"] == 0, out.stderr
    assert "Latency placement: probing 2 units" in out.stderr  # the probes really ran (a fresh latency cache)
    loaded = set(last["modules"])
    assert "workbench.core.runtime.unit_latency" in loaded
    assert loaded.isdisjoint({"_hashlib", "hmac", "secrets", "_ssl", "numpy.random"}), \
        sorted(loaded & {"_hashlib", "hmac", "secrets", "_ssl", "numpy.random"})
