"""SHA-256 and BLAKE2b hash objects that load OpenSSL only where it pays.

``import hashlib`` loads OpenSSL's libcrypto (about 3.4 MiB resident), a fifth of what separated a
quantize of a small model from onnxruntime's ``quantize_static`` in peak memory. The interpreter's
built-in SHA-256 (``_sha256``, ``_sha2`` from Python 3.12) gives the same digests without it, but
runs about 6x slower than OpenSSL's SHA-NI code (0.30 s against 0.05 s of CPU for 90 MiB on this
machine's EPYC), so inputs of :data:`OPENSSL_FROM` bytes or more still go to :mod:`hashlib`. BLAKE2b
is always the interpreter's own code (``_blake2``, which ``hashlib.blake2b`` is too).
"""

from __future__ import annotations

from typing import Any

try:
    from _sha256 import sha256 as _builtin_sha256  # Python 3.11
except ImportError:  # pragma: no cover - Python 3.12+ names the module _sha2
    try:
        from _sha2 import sha256 as _builtin_sha256
    except ImportError:
        _builtin_sha256 = None

#: inputs of at least this many bytes are hashed by OpenSSL (hashlib): from about 4 MiB its speed saves
#: more CPU time (~10 ms) than loading it costs
OPENSSL_FROM = 4 << 20


def sha256(data: bytes = b"", *, size: int | None = None) -> Any:
    """A SHA-256 hash object (``update``, ``digest``, ``hexdigest``) started with ``data``.

    ``size``: how many bytes it will hash in all (default ``len(data)``); from :data:`OPENSSL_FROM`
    bytes on, hashlib's (OpenSSL) object, else the built-in one. The digests are the same (FIPS 180-4).
    """
    total = len(data) if size is None else size
    if total >= OPENSSL_FROM or _builtin_sha256 is None:
        import hashlib  # OpenSSL: large inputs only

        return hashlib.sha256(data)
    return _builtin_sha256(data)


def blake2b(data: bytes = b"", *, digest_size: int = 64) -> Any:
    """A BLAKE2b hash object (RFC 7693) of ``digest_size`` bytes started with ``data``, from the
    interpreter's ``_blake2`` module (the object ``hashlib.blake2b`` returns, without loading OpenSSL)."""
    try:
        from _blake2 import blake2b as make
    except ImportError:  # pragma: no cover - an interpreter built without it
        from hashlib import blake2b as make
    return make(data, digest_size=digest_size)
