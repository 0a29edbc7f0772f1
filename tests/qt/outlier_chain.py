"""A small model the recipe choice keeps one unit of float: a MatMul chain whose first MatMul reads an outlier
(built by ``test_mixed_precision._outlier_chain``)."""

from __future__ import annotations

from test_mixed_precision import _outlier_chain


def outlier_chain(folder):
    """The chain's model path, with calib.npz beside it (row 0 holds one value of 400 in x, so mm0's 8-bit
    input grid holds the output noise and the choice keeps mm0 float)."""
    path, _data, _x = _outlier_chain(folder)
    return path
