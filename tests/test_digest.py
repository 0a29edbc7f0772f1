"""workbench.core.io.digest gives hashlib's digests: the built-in SHA-256 below OPENSSL_FROM bytes, OpenSSL's
from there on (the same FIPS 180-4 values), and the interpreter's BLAKE2b."""

from __future__ import annotations

import hashlib

import pytest

from workbench.core.io import digest
from workbench.core.model.load import sha256_file


@pytest.mark.parametrize("size", [0, 1, 63, 64, 1000, digest.OPENSSL_FROM - 1, digest.OPENSSL_FROM])
def test_sha256_equals_hashlib_on_either_side_of_the_threshold(size):
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    h = digest.sha256(data)
    assert h.hexdigest() == hashlib.sha256(data).hexdigest()
    # the object hashlib makes (OpenSSL) from the threshold on, the built-in one below it
    assert (type(h) is type(hashlib.sha256())) == (size >= digest.OPENSSL_FROM)


def test_streamed_sha256_and_the_known_vector(tmp_path):
    h = digest.sha256(b"a", size=3)
    h.update(b"bc")
    assert h.hexdigest() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # FIPS 180-2, "abc"
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * (3 << 20))
    assert sha256_file(path) == hashlib.sha256(b"x" * (3 << 20)).hexdigest()


def test_blake2b_equals_hashlib():
    assert digest.blake2b(b"abc", digest_size=16).digest() == hashlib.blake2b(b"abc", digest_size=16).digest()
