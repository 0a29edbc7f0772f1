"""Large arrays handed to local worker processes as ``.npy`` files instead of pickles.

A task that carries activations to a worker process would otherwise be pickled, piped and
unpickled whole (the sensitivity sweep of ppocrv4_rec ships about 0.9 GB that way for 16 units).
When the executor's workers share this machine's files (``executor.shares_files``), the producer
writes each array once with :func:`numpy.save` into a private temporary folder (``/dev/shm``,
memory-backed, when it is writable with 2 GiB free; the system temporary folder otherwise) and
tasks carry :class:`ArrayFile` references; the reader memory-maps the file (:func:`numpy.load`
with ``mmap_mode="r"``), so the bytes are shared, not copied. The values are the arrays' exact bytes: results do not depend on the route.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any

import numpy as np

_SHM = "/dev/shm"
#: /dev/shm is used only with this much free space (containers often give it 64 MiB)
_SHM_MIN_FREE = 2 << 30


def _shm_or_none() -> str | None:
    """``/dev/shm`` when it is writable and has room, else None (the system temporary folder)."""
    try:
        if os.path.isdir(_SHM) and os.access(_SHM, os.W_OK) and shutil.disk_usage(_SHM).free >= _SHM_MIN_FREE:
            return _SHM
    except OSError:
        pass
    return None


@dataclass(frozen=True)
class ArrayFile:
    """An array stored as a ``.npy`` file at ``path`` (read-only when loaded)."""

    path: str
    mapped: bool = True  # False for 0-d and empty arrays (read whole: tiny, and no data to map)

    def load(self) -> np.ndarray:
        """The array (same dtype, shape and bytes as when saved), memory-mapped read-only when ``mapped``."""
        return np.load(self.path, mmap_mode="r" if self.mapped else None, allow_pickle=False)


def resolve(value: Any) -> Any:
    """``value`` itself, or the array an :class:`ArrayFile` refers to."""
    return value.load() if isinstance(value, ArrayFile) else value


def save_array(folder: str, name: str, array: np.ndarray) -> ArrayFile:
    """Write ``array`` to ``folder/name.npy`` (``name`` is a plain file stem) and refer to it."""
    path = os.path.join(folder, f"{name}.npy")
    array = np.asarray(array)
    if not array.flags.c_contiguous:  # (np.ascontiguousarray would also turn a 0-d array into shape (1,))
        array = np.ascontiguousarray(array)
    np.save(path, array, allow_pickle=False)
    return ArrayFile(path, mapped=array.ndim > 0 and array.size > 0)


class SpillDir:
    """A private temporary folder for :class:`ArrayFile` arrays, removed with everything in it by
    :meth:`close` (or the ``with`` block)."""

    def __init__(self) -> None:
        self.path = tempfile.mkdtemp(prefix="workbench-sweep-", dir=_shm_or_none())

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> SpillDir:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
