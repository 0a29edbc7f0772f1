"""Bias correction's compiled sums (LLVM IR through llvmlite) add the bits its numpy code adds, load without
numba, and ``WORKBENCH_NO_NUMBA=1`` keeps them unloaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from workbench.core.formats.qparams import QParams
from workbench.core.transforms import _sums_jit, bias_correction

_GRIDS = [QParams(np.array(0.05, np.float32), np.array(7, np.uint8), "uint8"),
          QParams(np.array(2.0 ** -7, np.float32), np.array(0, np.int8), "int8"),  # x.5 steps: ties to even
          QParams(np.array(3.3e-3, np.float32), np.array(30001, np.uint16), "uint16"),
          QParams(np.array(1e-40, np.float32), np.array(128, np.uint8), "uint8")]  # a subnormal scale


def _values(rows: int, m: int, seed: int) -> np.ndarray:
    """float32 ``(rows, m)`` over 60 decades, with NaN, +-Inf, signed zeros, subnormals, the largest float
    and exact halves of the grids' steps scattered in."""
    rng = np.random.default_rng(seed)
    x = (rng.normal(size=(rows, m)) * np.exp(rng.uniform(-70, 70, (rows, m)))).astype(np.float32)
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 1e-45, -1e-45, 3.4028235e38, -3.4028235e38,
                        2.5 * 2.0 ** -7, -3.5 * 2.0 ** -7, 0.5 * 2.0 ** -7, 127.5 * 2.0 ** -7], np.float32)
    x.flat[rng.integers(0, x.size, x.size // 7)] = rng.choice(special, x.size // 7)
    return x


@pytest.mark.parametrize(("rows", "m"), [(1, 1), (3, 17), (9, 1031), (2, 4096)])
def test_the_loops_add_the_bits_of_the_numpy_code(rows, m):
    x = _values(rows, m, rows * m)
    start = np.random.default_rng(1).normal(size=m) * 1e3  # a batch's sum so far
    want, got = start.copy(), start.copy()
    with np.errstate(all="ignore"):  # Inf - Inf, x / a subnormal scale
        for r in range(rows):  # _Sums.add without the loops: part += row, row after row
            want += x[r].astype(np.float64)
        _sums_jit.add_rows(x, got)
        assert got.tobytes() == want.tobytes()
        for qp in _GRIDS:
            table = bias_correction._Table.of(qp)
            start = table.values[np.arange(m) % table.values.size]  # a sum so far, on the grid
            want, got = start + table.sum_rows(x).reshape(-1), start.copy()
            _sums_jit.add_rounded(x, got, table.scale.reshape(()), *table.bounds)
            assert got.tobytes() == want.tobytes(), qp
            rounded = np.asarray(bias_correction._rounded(x, qp), np.float64)
            assert np.array_equal(got - start, rounded.sum(axis=0)), qp


def test_arrays_of_another_layout_are_refused():
    x, part = np.zeros((2, 4), np.float32), np.zeros(4)
    for bad_x, bad_part in ((x[:, ::2], part[:2]), (x.astype(np.float64), part), (x, part[:3]),
                            (x, part.astype(np.float32))):
        with pytest.raises(ValueError, match="float32 \\(rows, m\\)"):
            _sums_jit.add_rows(bad_x, bad_part)
    assert not part.any()


@pytest.mark.parametrize("no_numba", ["", "1"])
def test_the_loops_load_without_numba_and_the_switch_keeps_numpy(no_numba):
    code = ("import json, sys, numpy as np; from workbench.core.transforms import bias_correction as b; "
            "k = b._kernels(np.zeros((2, 1 << 15), np.float32)); "
            "print(json.dumps([k is not None, 'numba' in sys.modules, 'llvmlite' in sys.modules]))")
    env = {**os.environ, "WORKBENCH_NO_NUMBA": no_numba}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    loaded, numba, llvmlite = json.loads(out.stdout)
    assert (loaded, numba, llvmlite) == ((True, False, True) if not no_numba else (False, False, False))


def test_loops_that_cannot_load_leave_numpy_with_one_warning(monkeypatch, caplog):
    def broken(name):
        raise ImportError(f"no {name} here")

    monkeypatch.setattr(bias_correction, "KERNELS", None)
    monkeypatch.setattr(bias_correction.importlib, "import_module", broken)
    a = np.zeros((2, 1 << 15), np.float32)
    assert bias_correction._kernels(a) is None and bias_correction._kernels(a) is None
    assert bias_correction.KERNELS is False
    warned = [r.getMessage() for r in caplog.records if "compiled loops of bias correction" in r.getMessage()]
    assert warned == ["The compiled loops of bias correction are not usable (ImportError: no "
                      "workbench.core.transforms._sums_jit here); its means use numpy (same values, slower). "
                      "Reinstall llvmlite to restore them."]
