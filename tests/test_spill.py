"""Arrays handed to local workers as .npy files come back with the same dtype, shape and bytes."""

from __future__ import annotations

import os
import tempfile

import numpy as np

from workbench.core.analysis import spill
from workbench.core.analysis.spill import ArrayFile, SpillDir, resolve, save_array


def test_arrays_round_trip_exactly_and_the_folder_is_removed():
    rng = np.random.default_rng(0)
    arrays = [rng.normal(size=(2, 3, 5)).astype(np.float32), np.arange(7, dtype=np.int64),
              np.asfortranarray(rng.normal(size=(4, 3))), np.array(3.5, np.float16), np.zeros((0, 4), np.uint8)]
    with SpillDir() as d:
        refs = [save_array(d.path, f"a{i}", a) for i, a in enumerate(arrays)]
        assert all(isinstance(r, ArrayFile) and os.path.dirname(r.path) == d.path for r in refs)
        for a, r in zip(arrays, refs, strict=True):
            b = resolve(r)
            assert b.dtype == a.dtype and b.shape == a.shape  # a 0-d array stays 0-d
            assert r.mapped == (a.ndim > 0 and a.size > 0) and b.flags.writeable != r.mapped
            assert np.ascontiguousarray(a).tobytes() == np.asarray(b).tobytes()
        assert resolve(arrays[0]) is arrays[0]  # arrays pass through
    assert not os.path.exists(d.path)


def test_small_shared_memory_falls_back_to_the_temporary_folder(monkeypatch):
    monkeypatch.setattr(spill, "_SHM_MIN_FREE", 1 << 62)  # no /dev/shm has that much room
    with SpillDir() as d:
        assert os.path.dirname(d.path) == tempfile.gettempdir()
