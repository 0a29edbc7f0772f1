"""How the outputs of a float model and of its quantized version pair up.

One rule for every comparison of two models (``evaluate``, ``compare``, the diff's error tables):
by name when every reference output is also an output of the other model, else by position when
both have as many (another tool renamed them), else no pairing.
"""

from __future__ import annotations

from collections.abc import Sequence


def pair_outputs(reference: Sequence[str], other: Sequence[str]) -> list[tuple[str, str]]:
    """``[(reference output, other output), ...]`` in the reference's order; empty when the names
    differ and so do the counts."""
    if set(reference) <= set(other):
        return [(n, n) for n in reference]
    return list(zip(reference, other, strict=True)) if len(reference) == len(other) else []


def paired_by_position(reference: Sequence[str], other: Sequence[str]) -> bool:
    """Whether :func:`pair_outputs` paired the outputs by position (their names differ)."""
    return not set(reference) <= set(other) and len(reference) == len(other)


def renamed_note(reference: Sequence[str], other: Sequence[str]) -> str | None:
    """The note a comparison gives when it pairs outputs by position; None otherwise."""
    if not paired_by_position(reference, other):
        return None
    return f"output names differ ({list(reference)} vs {list(other)}); matched by position"
