"""Every cache folder is ``cache_dirs.cache_dir(name)``: with WORKBENCH_CACHE_DIR set, the LLVM objects, the
latency measurements, the canvas layouts and the CLI's recipe choices are written under ``<root>/<name>``
(before, the layout cache ignored the variable and went to the user's cache folder, tests' layouts too)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import onnx
import platformdirs
from qdq_helpers import save_matmul_model

from workbench import cli_choice_cache
from workbench.core import api, cache_dirs
from workbench.core.formats import llvm_jit
from workbench.core.graph import layout
from workbench.core.runtime import latency

ROOT = Path(__file__).resolve().parent.parent


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_each_cache_writes_under_workbench_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path))
    model_path = save_matmul_model(tmp_path / "m.onnx", np.random.default_rng(0))
    proto = onnx.load(str(model_path))

    got = layout.layout_routed(proto)  # no cache_dir given: the default folder
    digest = layout.graph_structure(proto).digest()
    assert _files(tmp_path / "layout") == [f"{digest}.json"]
    assert layout.layout_routed(proto).positions == got.positions  # read back from there

    engine = llvm_jit.compile_ir(["define i32 @cache_probe(i32 %x) #0 {\n  ret i32 %x\n}\n"])
    assert engine.get_function_address("cache_probe")
    assert len(_files(tmp_path / "llvm")) == 1 and _files(tmp_path / "llvm")[0].endswith(".o")

    measured = latency.LatencyComparison(0.002, 0.001, 9)
    monkeypatch.setattr(latency, "measure", lambda *a, **k: measured)
    feed = {"X": np.ones((2, 4), np.float32)}
    latency.compare(b"float model", b"quantized model", feed)
    key = latency.cache_key(b"float model", b"quantized model", feed)
    assert _files(tmp_path / "latency") == [f"{key}.json"]
    assert json.loads((tmp_path / "latency" / f"{key}.json").read_text())["quant_s"] == 0.001

    np.savez(tmp_path / "calib.npz", X=np.ones((8, 4), np.float32))
    recipe = api.make_recipe("cpu-u8s8")
    path = cli_choice_cache.entry_path(api.open_model(model_path), recipe, str(tmp_path / "calib.npz"), 8)
    choice = SimpleNamespace(skipped=False, recipe=recipe, calibration=SimpleNamespace(to_json=lambda: {}),
                             summary=lambda: "chosen", label="cpu-u8s8")
    cli_choice_cache.store(path, choice)
    assert _files(tmp_path / "recipe_choice") == [path.name]


def test_without_the_variable_the_user_cache_holds_them(monkeypatch):
    monkeypatch.delenv("WORKBENCH_CACHE_DIR")
    user = Path(platformdirs.user_cache_dir("workbench", appauthor=False))
    assert [llvm_jit.cache_dir(), latency.default_cache_dir(), layout.default_cache_dir(),
            cli_choice_cache.cache_dir()] == [user / "llvm", user / "latency", user / "layout", user / "recipe_choice"]
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", "")  # empty: as if unset
    assert cache_dirs.cache_dir("layout") == user / "layout"


def test_platformdirs_is_imported_only_without_a_cache_root(tmp_path):
    code = ("import sys; from workbench.core.cache_dirs import cache_dir; print(cache_dir('x'));"
            "print('platformdirs' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k != "WORKBENCH_CACHE_DIR"}
    with_root = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                               env={**env, "WORKBENCH_CACHE_DIR": str(tmp_path)})
    assert with_root.stdout.split() == [str(tmp_path / "x"), "False"]
    without = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                             env=env)
    assert without.stdout.split()[-1] == "True"
