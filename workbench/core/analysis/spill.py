"""Large arrays handed to local worker processes as ``.npy`` files instead of pickles.

A task that carries activations to a worker process would otherwise be pickled, piped and
unpickled whole (the sensitivity sweep of ppocrv4_rec ships about 0.9 GB that way for 16 units).
When the executor's workers share this machine's files (``executor.shares_files``), the producer
writes each array once with :func:`numpy.save` into a private temporary folder (in ``/dev/shm``,
memory-backed, where it exists) and tasks carry :class:`ArrayFile` references; the reader
memory-maps the file (:func:`numpy.load` with ``mmap_mode="r"``), so the bytes are shared, not
copied. The values are the arrays' exact bytes: results do not depend on the route.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any

import numpy as np

_SHM = "/dev/shm"


@dataclass(frozen=True)
class ArrayFile:
    """An array stored as a ``.npy`` file at ``path`` (read-only when loaded)."""

    path: str

    def load(self) -> np.ndarray:
        """The array, memory-mapped read-only (same dtype, shape and bytes as when saved)."""
        return np.load(self.path, mmap_mode="r")


def resolve(value: Any) -> Any:
    """``value`` itself, or the array an :class:`ArrayFile` refers to."""
    return value.load() if isinstance(value, ArrayFile) else value


def save_array(folder: str, name: str, array: np.ndarray) -> ArrayFile:
    """Write ``array`` to ``folder/name.npy`` (``name`` is a plain file stem) and refer to it."""
    path = os.path.join(folder, f"{name}.npy")
    np.save(path, np.ascontiguousarray(array), allow_pickle=False)
    return ArrayFile(path)


class SpillDir:
    """A private temporary folder for :class:`ArrayFile` arrays, removed with everything in it by
    :meth:`close` (or the ``with`` block)."""

    def __init__(self) -> None:
        base = _SHM if os.path.isdir(_SHM) and os.access(_SHM, os.W_OK) else None
        self.path = tempfile.mkdtemp(prefix="workbench-sweep-", dir=base)

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> SpillDir:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
