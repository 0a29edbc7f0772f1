"""Shortening names that differ only in their middle: ONNX node and tensor names share long
scope prefixes ("/bert/encoder/layer.3/attention/output/dense/Add" beside "layer.4"), so a middle
ellipsis drops exactly what tells them apart. :func:`distinct_starts` finds where each name's own
part starts, :func:`distinct_elide` drops the shared start first."""

from __future__ import annotations

import os
from collections.abc import Callable

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


def scope_segments(name: str) -> list[str]:
    """``name`` cut after each "/": "/bert/encoder/layer.3/Add" -> ["/", "bert/", "encoder/", "layer.3/", "Add"]
    (joined again they give ``name``)."""
    parts = name.split("/")
    return [p + "/" for p in parts[:-1]] + [parts[-1]]


def unique_suffix_segments(names: list[str], tails: list[str]) -> list[int]:
    """For each name, how many of its last :func:`scope_segments` no other name of ``names`` ends with
    (its ``tail`` counted with it): 5 for "/bert/encoder/layer.3/attention/output/dense/Add" among the
    other layers' (from "layer.3/"); all of them for a name that is there twice."""
    segs = [scope_segments(n) for n in names]
    seen: dict[str, int] = {}
    for parts, tail in zip(segs, tails, strict=True):
        for k in range(1, len(parts) + 1):
            key = "".join(parts[-k:]) + tail
            seen[key] = seen.get(key, 0) + 1
    out = []
    for parts, tail in zip(segs, tails, strict=True):
        out.append(next((k for k in range(1, len(parts) + 1) if seen["".join(parts[-k:]) + tail] == 1), len(parts)))
    return out


#: room kept free when a shortening's width is estimated from its pieces' widths, pixels
SLACK = 2


def _candidates(parts: list[str], key: int, tails: tuple[str, ...], rarity: dict[str, float],
                advance: Callable[[str], int], width: int) -> list[str]:
    """Shortenings of ``parts`` + one of ``tails`` within ``width`` pixels (``advance``: a text's width)
    that keep segment ``key`` (the one telling the name apart) and the last: segments between them
    dropped as one gap ("…/"), the segments before ``key`` kept where they all fit, else dropped
    ("…layer.3/attention/…/dense/Add"). Best first: the gap whose segments are the most common among
    the names (``rarity``: segment -> 1 / how many names have it), then the first tail, then the
    segments before ``key`` kept. Widths are estimated as the sum of the pieces' (:data:`SLACK` spare)."""
    n = len(parts)
    upto = [0]  # upto[i]: width of parts[:i]
    for part in parts:
        upto.append(upto[-1] + advance(part))
    gap_w, lead_w = advance(ELLIPSIS + "/"), advance(ELLIPSIS)
    gaps = [(key + 1, key + 1)] + [(a, b) for a in range(key + 1, n - 1) for b in range(a + 1, n)]
    found = []
    for t, tail in enumerate(tails):
        for a, b in gaps:
            need = (upto[a] - upto[key]) + (upto[n] - upto[b]) + (gap_w if b > a else 0) + advance(tail) + SLACK
            # the segments before ``key`` are shared with other names: all kept, or none (one column look)
            i = 0 if upto[key] + need <= width else key if need + lead_w <= width else None
            if i is None:
                continue
            text = ((ELLIPSIS if i else "") + "".join(parts[i:a]) + (ELLIPSIS + "/" if b > a else "")
                    + "".join(parts[b:]) + tail)
            found.append((round(sum(rarity[p] for p in parts[a:b]), 9), t, i, text))
    found.sort()
    return [text for *_order, text in found]


def distinct_labels(names: list[str], ops: list[str], metrics: QFontMetrics, width: int) -> list[str]:
    """"name (op)" of each of ``names`` and its ``ops`` within ``width`` pixels, shortened so that the
    labels stay apart where the names are: the "/" segment that tells a name from the others (its
    layer, :func:`unique_suffix_segments`) and its last segment are kept, with as many segments between
    them as fit, the most common among the names dropped first ("…layer.3/…/dense/Add (Add)"); " (op)"
    goes before a segment does when the last segment names it ("…layer.3/…/self/query/MatMul"). Where
    two shortenings read the same (" (op)" aside), each takes its next one that reads like no other
    label. A name whose kept segments alone do not fit is elided in the middle (:func:`distinct_elide`).

    Returns one label per name, each at most ``width`` pixels wide in ``metrics``."""
    widths: dict[str, int] = {}

    def advance(text: str) -> int:
        if text not in widths:
            widths[text] = metrics.horizontalAdvance(text)
        return widths[text]

    tails = [f" ({op})" if op else "" for op in ops]  # "": the name alone
    keys = unique_suffix_segments(names, tails)
    having: dict[str, int] = {}
    for name in names:
        for part in set(scope_segments(name)):
            having[part] = having.get(part, 0) + 1
    rarity = {part: 1.0 / k for part, k in having.items()}
    options: list[list[str]] = []
    for name, op, tail, k in zip(names, ops, tails, keys, strict=True):
        parts = scope_segments(name)
        full = name + tail
        found = [full] if metrics.horizontalAdvance(full) <= width else []
        if not found and len(parts) > 1:  # the key segment is not the last: that one is kept anyway
            key = min(len(parts) - k, len(parts) - 2)
            spare = op and parts[-1].startswith(op)  # "MatMul_1 (MatMul)": the op read twice
            found = _candidates(parts, key, (tail, "") if spare else (tail,), rarity, advance, width)
        if not found:
            found = [distinct_elide(full, len("".join(parts[:len(parts) - k])), metrics, width)]
        options.append(found)
    # a label reads like another also when they differ only by " (op)"
    labels = _apart(options, [lambda text, tail=tail: text.removesuffix(tail) for tail in tails])
    return [text if metrics.horizontalAdvance(text) <= width
            else metrics.elidedText(text, Qt.TextElideMode.ElideMiddle, width) for text in labels]


def _apart(options: list[list[str]], reads: list[Callable[[str], str]]) -> list[str]:
    """One of each list of ``options`` (best first), all reading differently (``reads[i]``: what
    option text of list i reads as) where the options allow: every label that reads like another's
    moves on to its next option that reads like no other label, until none does or no such option is
    left."""
    chosen = [0] * len(options)
    for _round in range(256):
        used: dict[str, list[int]] = {}
        for i, (opts, c) in enumerate(zip(options, chosen, strict=True)):
            used.setdefault(reads[i](opts[c]), []).append(i)
        moved = False
        for group in [g for g in used.values() if len(g) > 1]:
            for i in group:
                nxt = next((c for c in range(chosen[i] + 1, len(options[i]))
                            if reads[i](options[i][c]) not in used), None)
                if nxt is not None:
                    used.setdefault(reads[i](options[i][nxt]), []).append(i)
                    chosen[i], moved = nxt, True
        if not moved:
            break
    return [opts[c] for opts, c in zip(options, chosen, strict=True)]
