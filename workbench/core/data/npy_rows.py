"""Rows of one array of an ``.npy`` file or ``.npz`` member, read in order and only as far as asked.

Calibration asks for a few rows (``--samples``) of files that may hold many more; reading the
whole array first costs its full size in memory. Here:

- an ``.npy`` file is memory-mapped (read-only, after its header): a row's pages are read when
  the row is used;
- an ``.npz`` member stored uncompressed (``numpy.savez``) is a plain byte range of the file: it is
  memory-mapped like an ``.npy`` (:func:`stored_offset` finds where its data starts); mapped rows are
  read from the page cache where they lie, instead of being copied into a fresh array and checksummed
  (nudenet_320n, 256 rows of 1.2 MB: 0.18 s of copying and 0.085 s of CRC-32 per pass). A zip
  member's data starts wherever its name and extra field end, so rows not aligned for their dtype
  are copied (numpy and onnxruntime get aligned arrays, as before). Like an ``.npy``, a mapped
  member is not checked against its CRC-32 (a streamed member is, and only when it is read to its end);
- a deflate-compressed member (``numpy.savez_compressed``) cannot be mapped: it is streamed from the
  start, ``take(n)`` decompressing exactly the next ``n`` rows into a fresh array (so is a stored
  member whose local header does not lead to its data);
- a Fortran-ordered member or ``.npy`` file (rows are not contiguous) is read whole, the only exception (a
  map of it would be read all over for each row, and its file saved again shorter meanwhile would end the
  process with SIGBUS).

A mapped row's pages count in the process's resident set once read. :meth:`RowReader.take` gives the
pages of rows more than :data:`KEEP_ROWS` behind the newest back (``madvise(MADV_DONTNEED)``: clean file
pages, so a row read again later is faulted in from the file, never changed), so calibration memory no
longer grows with the rows read (the whole quantize job of nudenet_320n, 256 rows of 1.2 MB: peak RSS
570 MiB, against 339 MiB at 64 rows, before; 350 and 344 MiB now).

Format: NumPy's ``.npy`` format (``numpy.lib.format``: magic, header dict, C-order data).
"""

from __future__ import annotations

import math
import mmap
import struct
import zipfile
from pathlib import Path

import numpy as np

from workbench.core.errors import DataError
from workbench.core.io.external import release_pages

#: Rows a reader keeps resident behind the newest it returned: the rows of the batch being put together
#: (a calibration batch holds at most 32 samples, ``calibration.calibrate.MAX_BATCH``), of the batch
#: onnxruntime runs meanwhile and of the one being observed, which read their row views after later
#: ``take`` calls. A row further behind that is read again is only faulted in again.
KEEP_ROWS = 2 * 32 + 2


class RowReader:
    """Sequential rows of one array: :meth:`take` returns the next ``n`` rows along axis 0.

    Attributes
    ----------
    shape : tuple of int
        Shape of the whole array (rows on axis 0).
    dtype : numpy.dtype
        Its dtype.
    """

    def __init__(self, path: Path, member: str | None = None) -> None:
        self.path, self.member = Path(path), member
        self._zip: zipfile.ZipFile | None = None
        self._stream = None
        self._array: np.ndarray | None = None
        self._map: mmap.mmap | None = None  # the file map of a mapped C-order array, whose pages are given back
        self._data_start = self._released = 0  # its data's offset in the map; rows before _released given back
        self.pos = 0
        if member is None:
            self._open_npy()
            return
        self._zip = zipfile.ZipFile(self.path)
        f = self._zip.open(member + ".npy")
        version = np.lib.format.read_magic(f)
        reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran, dtype = reader(f)
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        if self.dtype.hasobject:
            raise DataError(f"{self.path}: array '{member}' holds Python objects, which are not read (no pickles).",
                            hint="Save numeric arrays with numpy.savez.")
        if fortran and len(self.shape) > 1:
            self._array = np.asfortranarray(np.lib.format.read_array(self._zip.open(member + ".npy"),
                                                                     allow_pickle=False))
            f.close()
        elif self.shape and (start := stored_offset(self.path, self._zip.getinfo(member + ".npy"), f.tell(),
                                                    math.prod(self.shape) * self.dtype.itemsize)) is not None:
            self._map_rows(start)
            f.close()
        else:
            self._stream = f
        self._row_bytes = math.prod(self.shape[1:]) * self.dtype.itemsize

    @property
    def rows(self) -> int:
        """Rows on axis 0 (1 for a scalar)."""
        return self.shape[0] if self.shape else 1

    def take(self, n: int) -> np.ndarray:
        """The next ``n`` rows, shape ``(n, *shape[1:])``, this reader's dtype.

        Raises
        ------
        DataError
            Fewer than ``n`` rows are left, or the file ends early (truncated).
        """
        if not self.shape:  # a scalar: the whole array, every time
            return self._scalar()
        if self.pos + n > self.shape[0]:
            raise DataError(f"{self.path}: asked for rows {self.pos}..{self.pos + n} of "
                            f"'{self.member or self.path.stem}', which has {self.shape[0]}.",
                            hint="Ask for fewer samples.")
        start, self.pos = self.pos, self.pos + n
        self._release_before(start - KEEP_ROWS)
        self._check_mapped(start, start + n)
        if self._array is not None:
            rows = self._array[start:start + n]
            return rows if rows.flags.aligned else np.array(rows)  # a member's data at an odd offset: copied
        out = np.empty((n, *self.shape[1:]), self.dtype)
        view, got = memoryview(out.reshape(-1).view(np.uint8)), 0
        while got < n * self._row_bytes:
            k = self._stream.readinto(view[got:])
            if not k:
                raise DataError(f"{self.path}: array '{self.member}' ends after {got // max(self._row_bytes, 1)} "
                                f"of {self.shape[0]} rows (truncated file).", hint="Re-save the data with numpy.savez.")
            got += k
        return out

    def _open_npy(self) -> None:
        with open(self.path, "rb") as f:
            version = np.lib.format.read_magic(f)
            reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, fortran, dtype = reader(f)
            start, size = f.tell(), f.seek(0, 2)
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        data_bytes = math.prod(self.shape) * self.dtype.itemsize
        if fortran and len(self.shape) > 1 and start + data_bytes <= size and not self.dtype.hasobject:
            self._array = np.load(self.path, allow_pickle=False)  # rows not contiguous: read whole, as a member is
        elif fortran or self.dtype.hasobject or not data_bytes or start + data_bytes > size:
            self._array = np.load(self.path, mmap_mode="r", allow_pickle=False)  # numpy's own checks and errors
        else:
            self._map_rows(start)
        self._row_bytes = math.prod(self.shape[1:]) * self.dtype.itemsize

    def _map_rows(self, start: int) -> None:
        """Map the C-order array whose data starts ``start`` bytes into the file (read-only)."""
        with open(self.path, "rb") as f:
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self._data_start = start
        self._array = np.ndarray(self.shape, self.dtype, buffer=self._map, offset=start)

    def _check_mapped(self, start: int, end: int) -> None:
        """Refuse rows ``start``..``end - 1`` of a mapped array when its file no longer holds them: a file saved
        again in place (``numpy.save`` truncates it first) or cut short while read. Reading a mapped page past the
        file's end kills the process (SIGBUS) instead of raising; rows handed out before are not checked again."""
        if self._map is None or self._data_start + end * self._row_bytes <= self._map.size():
            return
        raise DataError(f"{self.path}: the file changed while it was read: it no longer holds rows {start}..{end - 1} "
                        f"of '{self.member or self.path.stem}' (saved again or cut short during the job).",
                        hint="Run the job again once the file is written, or save new data to another file.")

    def _release_before(self, row: int) -> None:
        """Give back the pages of rows ``_released``..``row`` (returned by earlier :meth:`take` calls)."""
        if self._map is None or row <= self._released:
            return
        release_pages(self._map, self._data_start + self._released * self._row_bytes,
                      self._data_start + row * self._row_bytes)
        self._released = row

    def _scalar(self) -> np.ndarray:
        if self._array is None:
            self._array = np.frombuffer(self._stream.read(self.dtype.itemsize), self.dtype).reshape(())
        return self._array

    def close(self) -> None:
        """Close the zip member and file (an ``.npy`` map closes when its arrays are freed)."""
        if self._stream is not None:
            self._stream.close()
        if self._zip is not None:
            self._zip.close()
        self._stream = self._zip = None

    def __enter__(self) -> RowReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


#: A zip local file header: signature, versions, flags, method, times, CRC-32, sizes, name and extra lengths.
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")


def stored_offset(path: Path, info: zipfile.ZipInfo, header_bytes: int, data_bytes: int) -> int | None:
    """Where the array data of the member ``info`` of the zip file ``path`` starts (bytes from the file's
    start), when the member is stored uncompressed and unencrypted, its local header is intact and it holds
    ``header_bytes`` (its ``.npy`` header) plus ``data_bytes`` (> 0) that lie inside the file; else None
    (stream it). Zip format (PKWARE APPNOTE 4.3.7): a local file header, the name and the extra field,
    then the member's bytes."""
    if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 1 or not data_bytes:
        return None
    if info.file_size != info.compress_size or info.file_size < header_bytes + data_bytes:
        return None  # truncated: streaming reads the rows that are there, then says which one is missing
    with open(path, "rb") as f:
        raw = _read_at(f, info.header_offset, _LOCAL_HEADER.size)
        size = f.seek(0, 2)
    if len(raw) != _LOCAL_HEADER.size:
        return None
    fields = _LOCAL_HEADER.unpack(raw)
    if fields[0] != b"PK\x03\x04":
        return None
    start = info.header_offset + _LOCAL_HEADER.size + fields[9] + fields[10] + header_bytes
    return start if start + data_bytes <= size else None


def _read_at(f, offset: int, n: int) -> bytes:
    f.seek(offset)
    return f.read(n)


def read_member(path: Path, member: str) -> np.ndarray:
    """One whole array of an ``.npz`` (labels, ragged samples), without reading the others."""
    with zipfile.ZipFile(path) as zf, zf.open(member + ".npy") as f:
        return np.lib.format.read_array(f, allow_pickle=False)
