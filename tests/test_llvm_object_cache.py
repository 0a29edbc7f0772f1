"""The compiled loops' machine code is kept on disk (formats.llvm_jit): a second process loads the observers'
loops from the cache without optimising or compiling them, and they compute what freshly compiled ones do; a
damaged cache file is compiled again and rewritten; an unwritable cache only costs the compile."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.core.formats import llvm_jit

ROOT = Path(__file__).resolve().parent.parent

#: bins fixed values with the observers' loops; prints the counts, keys and whether LLVM optimised anything
_PROBE = """
import json, sys
import llvmlite.binding as llvm
import numpy as np
made = []
real = llvm.create_pass_builder
def spy(*a, **k):
    made.append(1)
    return real(*a, **k)
llvm.create_pass_builder = spy
from workbench.core.calibration.observers import _llvm
x = np.random.default_rng(3).standard_normal(70_000).astype(np.float32)
counts = np.zeros(2048, np.int64)
keys = _llvm.bin_scan_f32(x, np.float32(-5), np.float32(2047 / 10), counts)
print(json.dumps({"optimised": len(made), "counts": counts.tolist(), "keys": list(keys)}))
"""


def _probe(cache: Path) -> dict:
    env = {**os.environ, "WORKBENCH_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _reference():
    import numpy as np

    x = np.random.default_rng(3).standard_normal(70_000).astype(np.float32)
    idx = np.clip(((x - np.float32(-5)) * np.float32(2047 / 10)).astype(np.int64), 0, 2047)
    return np.bincount(idx, minlength=2048).tolist()


def test_a_second_process_loads_the_loops_without_compiling_them(tmp_path):
    first = _probe(tmp_path)
    files = sorted((tmp_path / "llvm").glob("*.o"))
    assert first["optimised"] == 1 and len(files) == 1  # the hot loops: one engine, one file
    second = _probe(tmp_path)
    assert second["optimised"] == 0  # loaded from the cache: no optimisation, no code generation
    assert second["counts"] == first["counts"] == _reference()
    assert second["keys"] == first["keys"]
    assert sorted((tmp_path / "llvm").glob("*.o")) == files


def test_a_damaged_cache_file_is_compiled_again_and_rewritten(tmp_path):
    first = _probe(tmp_path)
    (path,) = (tmp_path / "llvm").glob("*.o")
    good = path.read_bytes()
    path.write_bytes(good[:-1] + bytes([good[-1] ^ 0xFF]))  # one byte of machine code changed
    again = _probe(tmp_path)
    assert again["optimised"] == 1 and again["counts"] == first["counts"]
    assert path.read_bytes() == good
    path.write_bytes(good[:40])  # cut short
    assert _probe(tmp_path)["optimised"] == 1 and path.read_bytes() == good


def test_an_unwritable_cache_only_costs_the_compile(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")  # <cache>/llvm cannot be made under a file
    got = _probe(blocked)
    assert got["optimised"] == 1 and got["counts"] == _reference()


def test_the_cache_follows_workbench_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path))
    assert llvm_jit.cache_dir() == tmp_path / "llvm"
    monkeypatch.delenv("WORKBENCH_CACHE_DIR")
    assert llvm_jit.cache_dir().name == "llvm" and llvm_jit.cache_dir().parent.name == "workbench"


@pytest.mark.parametrize("ir_a, ir_b", [("; a\n", "; b\n")])
def test_another_ir_text_is_another_file(ir_a, ir_b):
    assert llvm_jit._cache_file(ir_a, "x86_64") != llvm_jit._cache_file(ir_b, "x86_64")
    assert llvm_jit._cache_file(ir_a, "x86_64") != llvm_jit._cache_file(ir_a, "aarch64")
