"""Mapped calibration rows do not stay resident: the whole quantize job's memory must not grow with the
rows read (a 256-row nudenet_320n job peaked 230 MiB above a 64-row one while every row it had read stayed
mapped in). Resident bytes are read from the process's own map of the file (/proc/self/smaps, Linux)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from workbench.core.data.npy_rows import KEEP_ROWS, RowReader

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps (Linux)")

ROWS, ROW_FLOATS = 200, 64 * 1024  # 256 KiB a row, 50 MiB in all


def _resident_kib(path: Path) -> int:
    """Resident KiB of every mapping of ``path`` in this process."""
    total = 0
    for block in re.split(r"\n(?=[0-9a-f]+-[0-9a-f]+ )", Path("/proc/self/smaps").read_text()):
        head = block.split("\n", 1)[0]
        if head.endswith(str(path)):
            total += int(re.search(r"^Rss:\s+(\d+) kB", block, re.M).group(1))
    return total


def _data(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((ROWS, ROW_FLOATS), dtype=np.float32)


@pytest.mark.parametrize("kind", ["npz", "npy"])
def test_rows_read_one_by_one_leave_at_most_the_kept_window_resident(tmp_path, kind):
    data = _data(0)
    path = tmp_path / f"calib.{kind}"
    if kind == "npz":
        np.savez(path, x=data)
    else:
        np.save(path, data)
    reader = RowReader(path, "x" if kind == "npz" else None)
    held = []
    for i in range(ROWS):
        row = reader.take(1)
        assert float(row.sum(dtype=np.float64)) == float(data[i].sum(dtype=np.float64))
        held.append(row)
    row_kib = ROW_FLOATS * 4 // 1024
    resident = _resident_kib(path)
    # every row was read, but only the last KEEP_ROWS (+ the pages two row edges share) stay mapped in
    assert resident <= (KEEP_ROWS + 2) * row_kib, resident
    # a row given back is read again from the file, with its values unchanged
    np.testing.assert_array_equal(held[0][0], data[0])
    np.testing.assert_array_equal(np.concatenate(held), data)
    reader.close()


def test_a_truncated_npy_is_refused_as_before(tmp_path):
    path = tmp_path / "short.npy"
    np.save(path, _data(1)[:4])
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(ValueError, match="mmap length is greater than file size"):
        RowReader(path)
