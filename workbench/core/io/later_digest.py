"""The SHA-256 of a file as it was when it was opened, hashed only when something asks for it.

Hashing minilm_l6_v2's 90 MB model file costs about 0.05 s of CPU (OpenSSL's SHA-NI code, plus loading
OpenSSL), a sixth of what a ``quantize --no-auto`` job spends beyond float inference, and no step of that
job reads the digest. :class:`LaterDigest` records which file was opened (device, inode, size, and
modification and change times in ns, from ``fstat`` of the descriptor that read it) and hashes it on the
first :meth:`~LaterDigest.hexdigest`. A file whose record no longer matches (rewritten, replaced or
removed since) was not the one read: its digest is then ``""``, the value of a model with no file,
never the digest of other bytes. :class:`DigestField` is the dataclass field that resolves one on first
read.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

from workbench.core.io.digest import sha256


def file_key(st: os.stat_result) -> tuple[int, ...]:
    """What identifies one version of a file: device, inode, size, mtime and ctime (ns)."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


class LaterDigest:
    """Hex SHA-256 of ``path``'s bytes, computed on first use if the file is still the version whose
    ``fstat`` result is ``opened`` (see the module docstring)."""

    def __init__(self, path: str | Path, opened: os.stat_result) -> None:
        self.path = Path(path)
        self.key = file_key(opened)
        self._hex: str | None = None

    def hexdigest(self) -> str:
        """The file's SHA-256 (FIPS 180-4) as 64 hex characters; ``""`` when the file changed or
        cannot be read any more. Computed once."""
        if self._hex is None:
            self._hex = self._compute()
        return self._hex

    def _compute(self) -> str:
        try:
            with open(self.path, "rb") as f:
                st = os.fstat(f.fileno())
                if file_key(st) != self.key:
                    return ""
                if not st.st_size:
                    return sha256(b"").hexdigest()
                with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                    h = sha256(size=st.st_size)
                    h.update(mm)
                    return h.hexdigest() if file_key(os.fstat(f.fileno())) == self.key else ""
        except (OSError, ValueError):  # removed, unreadable, or emptied meanwhile
            return ""


class DigestField:
    """Descriptor for a dataclass field holding a hex digest: it may be given a :class:`LaterDigest`,
    which is resolved (and replaced by its string) the first time the field is read. The field's
    default is ``""`` (Python's dataclasses call ``__get__(None, cls)`` for it)."""

    def __set_name__(self, owner, name: str) -> None:
        self._slot = f"_{name}_value"

    def __get__(self, obj, owner=None) -> str:
        if obj is None:
            return ""
        value = obj.__dict__.get(self._slot, "")
        if isinstance(value, LaterDigest):
            value = obj.__dict__[self._slot] = value.hexdigest()
        return value

    def __set__(self, obj, value: str | LaterDigest) -> None:
        obj.__dict__[self._slot] = value

    @staticmethod
    def pending(obj, name: str) -> bool:
        """True while ``obj``'s field ``name`` holds a :class:`LaterDigest` not read yet."""
        return isinstance(obj.__dict__.get(f"_{name}_value"), LaterDigest)
