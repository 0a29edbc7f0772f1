"""A mapped .npy / stored .npz file saved again smaller (numpy.save truncates the file it writes) while its rows
are read: the next rows past its new end are refused with one line naming the file, instead of the process
dying of SIGBUS when a mapped page past the end is read. Run in a child process, so that a SIGBUS fails the test
instead of ending the test run."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="a mapped file cannot be truncated on Windows")

_CHILD = """
import sys
from pathlib import Path
import numpy as np
from workbench.core.data.npy_rows import RowReader
from workbench.core.errors import DataError
path, member = Path(sys.argv[1]), sys.argv[2] or None
rows = np.arange(300 * 4096, dtype=np.float32).reshape(300, 4096)
save = np.save if member is None else (lambda p, a: np.savez(p, x=a))
save(path, rows)
reader = RowReader(path, member)
assert np.array_equal(reader.take(10), rows[:10])
save(path, rows[:20])  # saved again, smaller, while the reader is open
try:
    got = reader.take(100)
except DataError as exc:
    print("refused:", exc)
else:
    print("read", float(got.sum()))
"""


@pytest.mark.parametrize(("name", "member"), [("cut.npy", ""), ("cut.npz", "x")])
def test_rows_past_the_end_of_a_file_saved_again_are_refused(tmp_path, name, member):
    path = tmp_path / name
    run = subprocess.run([sys.executable, "-c", _CHILD, str(path), member], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, f"child ended with {run.returncode}: {run.stderr[-2000:]}"
    assert run.stdout.startswith(f"refused: {path}: the file changed while it was read: it no longer holds rows 10..109 "
                                 f"of '{member or 'cut'}'"), run.stdout


_FORTRAN_CHILD = """
import sys
from pathlib import Path
import numpy as np
from workbench.core.data.npy_rows import RowReader
path = Path(sys.argv[1])
rows = np.asfortranarray(np.arange(300 * 4096, dtype=np.float32).reshape(300, 4096))
np.save(path, rows)
reader = RowReader(path)
assert np.array_equal(reader.take(10), rows[:10])
np.save(path, rows[:1])  # saved again, shorter, while the reader is open
print("equal" if np.array_equal(reader.take(100), rows[10:110]) else "changed")
"""


def test_a_fortran_ordered_npy_is_read_whole_and_outlives_its_file_saved_again(tmp_path):
    """A Fortran-ordered .npy (each row spread over the whole file) was mapped: its file saved again shorter
    ended the process with SIGBUS at the next row. It is read whole, as a Fortran-ordered .npz member is."""
    run = subprocess.run([sys.executable, "-c", _FORTRAN_CHILD, str(tmp_path / "f.npy")], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, f"child ended with {run.returncode}: {run.stderr[-2000:]}"
    assert run.stdout.strip() == "equal"
