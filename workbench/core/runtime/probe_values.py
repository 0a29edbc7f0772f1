"""Fixed-seed values for latency probes, made without ``numpy.random``.

Importing ``numpy.random`` imports :mod:`secrets`, hence :mod:`hmac` and ``_hashlib``: OpenSSL's
libcrypto (about 3.4 MiB resident) in every quantize whose latency check builds a probe model, although
the probes only need values that depend on nothing but the shape and a seed (their bytes are a cache
key, and the figures measured are timings, not results). These are numpy arrays computed from the
element index:

* :func:`bits` -- SplitMix64 of ``seed + i + 1`` (Steele, Lea and Flood, "Fast Splittable Pseudorandom
  Number Generators", OOPSLA 2014; the mixer Vigna's ``splitmix64.c`` uses to seed xoshiro):
  ``z = (seed + (i + 1) * 0x9E3779B97F4A7C15) mod 2^64``, ``z = (z ^ z >> 30) * 0xBF58476D1CE4E5B9``,
  ``z = (z ^ z >> 27) * 0x94D049BB133111EB``, ``z ^ z >> 31``;
* :func:`standard_normal` -- the Box-Muller transform (Box and Muller, 1958) of two such streams;
* :func:`uint8` -- the top 8 bits of :func:`bits`.
"""

from __future__ import annotations

import math

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def bits(n: int, seed: int) -> np.ndarray:
    """``n`` SplitMix64 outputs (uint64, shape ``[n]``) of the stream seeded with ``seed`` (an int taken
    modulo 2^64), element ``i`` the ``(i + 1)``-th output (module docstring). Raises ValueError for
    ``n < 0``."""
    if n < 0:
        raise ValueError(f"bits: n must be >= 0, got {n}")
    z = np.arange(1, n + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):  # arithmetic modulo 2^64 is the algorithm
        z *= _GOLDEN
        z += np.uint64(seed % (1 << 64))
        z ^= z >> np.uint64(30)
        z *= _MIX1
        z ^= z >> np.uint64(27)
        z *= _MIX2
        z ^= z >> np.uint64(31)
    return z


def _unit(z: np.ndarray) -> np.ndarray:
    """uint64 -> float64 in (0, 1]: the top 53 bits plus one, over 2^53."""
    return ((z >> np.uint64(11)).astype(np.float64) + 1.0) * (1.0 / (1 << 53))


def standard_normal(shape: list[int] | tuple[int, ...], seed: int) -> np.ndarray:
    """float64 array of ``shape`` with standard normal values: Box-Muller
    ``sqrt(-2 ln u1) * cos(2 pi u2)`` of the uniforms (0, 1] from the streams ``seed`` and ``seed + 1``
    (:func:`bits`)."""
    n = math.prod(shape)
    u1, u2 = _unit(bits(n, seed)), _unit(bits(n, seed + 1))
    return (np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)).reshape(shape)


def uint8(shape: list[int] | tuple[int, ...], seed: int) -> np.ndarray:
    """uint8 array of ``shape``, each value the top 8 bits of the stream ``seed`` (:func:`bits`): every value
    0-255 equally likely."""
    return (bits(math.prod(shape), seed) >> np.uint64(56)).astype(np.uint8).reshape(shape)
