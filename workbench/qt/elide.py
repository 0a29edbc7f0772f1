"""Shortening names that differ only in their middle: ONNX node and tensor names share long
scope prefixes ("/bert/encoder/layer.3/attention/output/dense/Add" beside "layer.4"), so a middle
ellipsis drops exactly what tells them apart. :func:`distinct_starts` finds where each name's own
part starts, :func:`distinct_elide` drops the shared start first."""

from __future__ import annotations

import os

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics

ELLIPSIS = "\u2026"
SEPARATORS = "/._:"
#: a shared start shorter than this many characters is not dropped first (middle elision as usual)
MIN_SHARED = 4


def distinct_starts(names: list[str]) -> list[int]:
    """For each name, where the part that tells it from its most alike sibling starts: the first
    character it does not share with that sibling, cut back to just after the "/" (else ".", "_",
    ":") before it ("/bert/encoder/" of "/bert/encoder/layer.0/..." beside "/bert/encoder/layer.5/...");
    0 for a name alone."""
    # the most alike name of a list shares the longest start with a neighbour in sorted order
    order = sorted(range(len(names)), key=names.__getitem__)
    shared_with = [0] * len(names)
    for a, b in zip(order, order[1:], strict=False):
        common = len(os.path.commonprefix([names[a], names[b]]))
        shared_with[a] = max(shared_with[a], common)
        shared_with[b] = max(shared_with[b], common)
    starts = []
    for name, shared in zip(names, shared_with, strict=True):
        head = name[:min(shared, len(name) - 1)]
        cut = head.rfind("/")
        if cut < 0:
            cut = max(head.rfind(c) for c in SEPARATORS)
        starts.append(cut + 1)
    return starts


def distinct_elide(name: str, start: int, metrics: QFontMetrics, width: int) -> str:
    """``name`` shortened to ``width`` pixels so that it still reads apart from names sharing its
    first ``start`` characters (:func:`distinct_starts`): that start goes first ("...layer.0/output/...",
    as much of its end kept as fits), then, if still too wide, the middle of the rest; the end stays."""
    if metrics.horizontalAdvance(name) <= width:
        return name
    if start < MIN_SHARED:  # dropping "/" saves nothing
        return metrics.elidedText(name, Qt.TextElideMode.ElideMiddle, width)
    if metrics.horizontalAdvance(ELLIPSIS + name[start:]) > width:
        rest = metrics.elidedText(name[start:], Qt.TextElideMode.ElideMiddle,
                                  width - metrics.horizontalAdvance(ELLIPSIS))
        return ELLIPSIS + rest
    keep = start  # give back as much of the shared start as fits, from its end
    while keep > 1 and metrics.horizontalAdvance(ELLIPSIS + name[keep - 1:]) <= width:
        keep -= 1
    return ELLIPSIS + name[keep:]


def shared_start(names: list[str]) -> int:
    """Length of the scope every name of ``names`` starts with, up to its last "/" ("/bert/encoder/"
    of "/bert/encoder/layer.0/..." and "/bert/encoder/layer.5/..."); 0 for fewer than two names."""
    if len(names) < 2:
        return 0
    head = os.path.commonprefix(names)
    return head.rfind("/") + 1
