"""Atomic file writes: a temporary file in the target's folder, fsync, then ``os.replace``.

A crash or kill at any point leaves either the previous file or the new one under the final
name, never a partial file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import glob
import mmap
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from workbench.core.errors import ExportError

#: Real paths of the model files (and their external data files) opened as inputs in this process.
_INPUTS: set[str] = set()
#: Bytes per ``write`` call of :func:`write_pieces`. On the 6.18 Linux kernel of the benchmark machine
#: (ext4) one ``write`` of a 58 MB buffer to a new file cost 0.15-0.65 s of system CPU, the same
#: bytes in 64 KiB calls 0.02 s (1 MiB calls: 0.02-0.35 s).
WRITE_PIECE = 64 << 10


def write_pieces(f, data: bytes | bytearray | memoryview) -> None:
    """Write ``data`` to the binary file object ``f`` in :data:`WRITE_PIECE`-byte calls (the same bytes
    as ``f.write(data)``, for a fraction of the kernel's CPU time on large buffers).

    Raises
    ------
    OSError
        As ``f.write`` (disk full, ...).
    """
    view = memoryview(data).cast("B")
    for start in range(0, len(view), WRITE_PIECE):
        f.write(view[start:start + WRITE_PIECE])


def protect_input(path: str | Path) -> None:
    """Record ``path`` as an input file: :func:`check_not_input` refuses to write onto it."""
    _INPUTS.add(os.path.realpath(path))


def check_not_input(path: str | Path) -> None:
    """Refuse an output path that is a model (or its data file) opened as input in this process.

    Raises
    ------
    ExportError
        ``path`` resolves to an input file recorded by :func:`protect_input`.
    """
    if os.path.realpath(path) in _INPUTS:
        raise ExportError(f"{path}: this is an input file (a model, its external data, a project, a recipe, or the calibration / eval data); "
                          "writing there would replace it.",
                          hint="Choose another output path (Workbench never modifies its inputs).")


def special_file_kind(path: str | Path) -> str | None:
    """What ``path`` is when it exists and is not a regular file or a link to one: "a folder", "a device",
    "a FIFO", "a socket" or "not a regular file"; None for a regular file, or a path that does not exist
    (or cannot be read: the write says why)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    return ("a folder" if stat.S_ISDIR(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")


def check_regular(path: Path) -> None:
    """Refuse an output path that exists and is not a regular file or a link to one (a device such as
    /dev/null, a FIFO, a socket, a folder): the rename onto it would replace the node itself.

    Raises
    ------
    ExportError
        ``path`` exists and is not a regular file.
    """
    kind = special_file_kind(path)
    if kind is not None:
        raise ExportError(f"{path}: is {kind}, not a regular file; writing there would replace it.",
                          hint="Give the path of a regular file.")


def same_file(path: str | Path, named) -> tuple[str | Path, str] | None:
    """The first ``(name, what)`` of ``named`` (pairs, or a dict name -> what) that is the file ``path``
    once ``~`` and symbolic links are resolved; None when none is. Empty names are skipped."""
    out = os.path.realpath(Path(path).expanduser())
    for name, what in (named.items() if isinstance(named, dict) else named):
        if name and os.path.realpath(Path(name).expanduser()) == out:
            return name, what
    return None


def _explain(path: Path, exc: OSError) -> ExportError:
    if exc.errno == errno.ENOSPC:
        return ExportError(f"{path}: the disk is full.", hint="Free some space or choose another folder.")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return ExportError(f"{path}: the folder is not writable ({exc.strerror}).",
                           hint="Choose a folder you can write to.")
    return ExportError(f"{path}: cannot write ({exc.strerror or exc}).", hint="Choose another path.")


def _file_mode(path: Path) -> int:
    """Mode for the new file: the replaced file's, else what ``open()`` would give (0o666 & ~umask);
    ``mkstemp`` creates 0o600, which would hide a saved project from the user's other accounts."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def stale_temps(path: Path) -> list[Path]:
    """The temporary files :func:`atomic_path` makes for ``path``, ``.NAME.XXXXXXXX.tmp`` exactly:
    the temporary file of ``NAME.wbproj``, staged beside ``NAME`` and not yet renamed, is not one."""
    own = re.compile(rf"\.{re.escape(path.name)}\.[a-z0-9_]+\.tmp")
    return [p for p in path.parent.glob(f".{glob.escape(path.name)}.*.tmp") if own.fullmatch(p.name)]


def save_prefix(path: Path) -> str:
    """The name prefix of what :func:`workbench.core.io.save.save_model` puts beside ``path`` while it writes:
    its temporary folder and, with external data, the hidden data file ``.NAME.wb-XXXXXXXXXXXX.data``."""
    return f".{path.name}.wb-"


def save_temps(path: Path) -> list[Path]:
    """The temporary folders and hidden data files of saves to ``path`` (:func:`save_prefix`)."""
    return list(path.parent.glob(glob.escape(save_prefix(path)) + "*"))


def references(model_file: Path, name: str) -> bool:
    """True when the bytes of ``model_file`` contain ``name`` (an external data location); False when the
    file is missing or empty."""
    try:
        with open(model_file, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            return m.find(name.encode()) >= 0
    except (OSError, ValueError):  # missing or empty file
        return False


def remove_save_temp(path: Path, temp: Path) -> bool:
    """Remove ``temp``, one of :func:`save_temps` of ``path``: a folder with what it holds, a file unless the
    model at ``path`` reads it (a save stopped between putting the model that reads the hidden data file in
    place and renaming that data onto ``NAME.data``: the pair is complete as it is). Returns whether it was
    removed; never raises."""
    if temp.is_dir() and not temp.is_symlink():
        shutil.rmtree(temp, ignore_errors=True)
        return not temp.exists()
    if references(path, temp.name):
        return False
    try:
        temp.unlink()
    except OSError:
        return False
    return True


@dataclasses.dataclass(frozen=True)
class WriteMark:
    """A write target as a job found it when it started (:func:`mark_target`): ``stamp`` its
    (st_mtime_ns, st_size), None when there was no file; ``temps`` the names of its
    :func:`stale_temps` and :func:`save_temps` then."""

    stamp: tuple[int, int] | None
    temps: frozenset[str]


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def mark_target(path: str | Path) -> WriteMark:
    """The :class:`WriteMark` of ``path`` now: taken before a job that writes ``path`` starts."""
    path = Path(path)
    return WriteMark(_stamp(path), frozenset(p.name for p in (*stale_temps(path), *save_temps(path))))


def clean_killed_write(path: str | Path, mark: WriteMark) -> tuple[list[Path], bool]:
    """After the job that writes ``path`` was killed: remove its temporary files (:func:`stale_temps` and
    :func:`save_temps` of ``path`` that ``mark`` did not hold, so made after the job started: a save's
    temporary folder with its partly written ``.data``, and its hidden data file unless the model at ``path``
    reads it; nothing else is touched). Returns (the files removed, whether ``path`` changed since ``mark``:
    its mtime or size differ, or it appeared or went, i.e. the kill came after the rename and the new file is
    in place). Never raises (a temporary file that cannot be removed is left, and is removed by the next
    write to ``path``)."""
    path = Path(path)
    removed = []
    for tmp in stale_temps(path):
        if tmp.name in mark.temps:
            continue
        with contextlib.suppress(OSError):
            tmp.unlink()
            removed.append(tmp)
    for tmp in save_temps(path):
        if tmp.name not in mark.temps and remove_save_temp(path, tmp):
            removed.append(tmp)
    return removed, _stamp(path) != mark.stamp


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it is renamed onto ``path``.

    Raises
    ------
    ExportError
        When ``path`` is an input of the job or exists and is not a regular file (a device, a FIFO, a
        folder), the folder is missing or not writable, or the disk is full.
    """
    path = Path(path)
    check_not_input(path)
    check_regular(path)
    if not path.parent.is_dir():
        raise ExportError(f"{path}: the folder {path.parent} does not exist.", hint="Create it or pick another.")
    for stale in stale_temps(path):  # left by a killed earlier write
        with contextlib.suppress(OSError):
            stale.unlink()
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise _explain(path, exc) from None
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp_path, _file_mode(path))
        os.replace(tmp_path, path)
    except OSError as exc:
        raise _explain(path, exc) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_path`)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        write_pieces(f, data)


class StagedWrite:
    """Bytes written and fsynced to a temporary file beside ``path``, renamed onto it only by
    :meth:`commit`: lets a second file (a project) land right after the first (its model)
    without being written in between. :meth:`discard` removes the temporary file if it was not
    committed; a temporary file left by a killed process is removed by the next write to ``path``.
    """

    def __init__(self, path: str | Path, data: bytes) -> None:
        self.path = Path(path)
        self._ctx = atomic_path(self.path)
        self.tmp = self._ctx.__enter__()
        self._done = False
        try:
            with open(self.tmp, "wb") as f:
                write_pieces(f, data)
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            self.discard()
            raise _explain(self.path, exc) from None

    def commit(self) -> None:
        """Rename the temporary file onto ``path``."""
        if not self._done:
            self._done = True
            self._ctx.__exit__(None, None, None)

    def discard(self) -> None:
        """Remove the temporary file (no-op after :meth:`commit`)."""
        if not self._done:
            self._done = True
            with contextlib.suppress(OSError):
                self.tmp.unlink()
