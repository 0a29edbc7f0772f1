"""Shortening names that differ only in their middle: ONNX node and tensor names share long
scope prefixes ("/bert/encoder/layer.3/attention/output/dense/Add" beside "layer.4"), so a middle
ellipsis drops exactly what tells them apart. :func:`distinct_starts` finds where each name's own
part starts, :func:`distinct_elide` drops the shared start first."""

from __future__ import annotations

import os
from collections import Counter
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


def fine_segments(name: str) -> list[str]:
    """``name`` cut after each separator of :data:`SEPARATORS`: "p2o.Add.100" -> ["p2o.", "Add.", "100"]
    (joined again they give ``name``); the pieces :func:`distinct_labels` falls back on for names whose "/"
    scopes do not tell them apart in the room there is ("p2o.Add.100" beside "p2o.Mul.100")."""
    out, piece = [], ""
    for ch in name:
        piece += ch
        if ch in SEPARATORS:
            out.append(piece)
            piece = ""
    return out + [piece] if piece or not out else out


def unique_suffix_segments(names: list[str], tails: list[str],
                           split: Callable[[str], list[str]] | None = None) -> list[int]:
    """For each name, how many of its last :func:`scope_segments` no other name of ``names`` ends with
    (its ``tail`` counted with it): 5 for "/bert/encoder/layer.3/attention/output/dense/Add" among the
    other layers' (from "layer.3/"); all of them for a name that is there twice. ``split`` cuts a name
    into its segments (default :func:`scope_segments`)."""
    segs = [(split or scope_segments)(n) for n in names]
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
    label. A name without "/" scopes is cut at its other separators instead (:func:`fine_segments`):
    "p2o.Add.100" keeps "Add.100" ("…Add.100"), which tells it from "p2o.Mul.100" (a middle ellipsis
    gave "p2o…100" for both). A name whose kept segments alone do not fit is elided in the middle from
    where they start (:func:`distinct_elide`).

    Returns one label per name, each at most ``width`` pixels wide in ``metrics``."""
    widths: dict[str, int] = {}

    def advance(text: str) -> int:
        if text not in widths:
            widths[text] = metrics.horizontalAdvance(text)
        return widths[text]

    tails = [f" ({op})" if op else "" for op in ops]  # "": the name alone
    coarse = _Splitting(names, tails, scope_segments)
    fine: _Splitting | None = None  # made when a name first needs it
    ends: Counter[str] = Counter()  # each name's end after one ellipsis, counted (made when first needed)
    options: list[list[str]] = []
    for i, (name, op, tail) in enumerate(zip(names, ops, tails, strict=True)):
        full = name + tail
        found = [full] if advance(full) <= width else coarse.candidates(i, op, advance, width)
        flat = len(coarse.parts[i]) < 2  # no "/" scopes: "p2o.Add.100", told from "p2o.Mul.100" by its "." pieces
        if not found and flat:
            fine = fine or _Splitting(names, tails, fine_segments)
            found = fine.candidates(i, op, advance, width)
        if not found:  # even the telling segments do not fit: a scoped name's end after one ellipsis
            # ("…eddings/Shape") when no other name's end reads the same (two cuts, "…emb…ape", were hard to read),
            # else elided in the middle from where they start (a flat name keeps its op: "A…100")
            start = (fine if flat and fine else coarse).key_start(i)
            found = [distinct_elide(full, start, metrics, width)] + _middles(full[start:], advance, width)
            if not flat:
                ends = ends or Counter(metrics.elidedText(n + t, Qt.TextElideMode.ElideLeft, width)
                                       for n, t in zip(names, tails, strict=True))
                end = metrics.elidedText(full, Qt.TextElideMode.ElideLeft, width)
                found = ([end] if ends[end] == 1 else []) + found
        options.append(found)
    # a label reads like another also when they differ only by " (op)"
    labels = _apart(options, [lambda text, tail=tail: text.removesuffix(tail) for tail in tails])
    return [text if metrics.horizontalAdvance(text) <= width
            else metrics.elidedText(text, Qt.TextElideMode.ElideMiddle, width) for text in labels]


def _middles(text: str, advance: Callable[[str], int], width: int) -> list[str]:
    """``text`` elided in its middle to ``width`` pixels, each way that fits: as much of its end as fits
    with its first character, its first two, ... ("A…106", "Ad…06" of "Add.106"); the options a label that
    reads like another's moves on to."""
    found: list[str] = []
    tail = len(text) - 2
    for head in range(1, len(text) - 1):
        tail = min(tail, len(text) - head - 1)  # a longer head leaves no more room for the end
        while tail > 0 and advance(text[:head] + ELLIPSIS + text[-tail:]) > width:
            tail -= 1
        if tail == 0:
            break
        found.append(text[:head] + ELLIPSIS + text[-tail:])
    return found


class _Splitting:
    """``names`` cut into segments by ``split`` (:func:`scope_segments` or :func:`fine_segments`), with
    how rare each segment is among them and how many last segments tell each name apart (``tails``: the
    " (op)" read with each)."""

    def __init__(self, names: list[str], tails: list[str], split: Callable[[str], list[str]]) -> None:
        self.parts = [split(n) for n in names]
        self.tails = tails
        self.keys = unique_suffix_segments(names, tails, split)
        having: dict[str, int] = {}
        for parts in self.parts:
            for part in set(parts):
                having[part] = having.get(part, 0) + 1
        self.rarity = {part: 1.0 / k for part, k in having.items()}

    def key_start(self, i: int) -> int:
        """Where the segments telling name ``i`` apart start (characters)."""
        parts = self.parts[i]
        return len("".join(parts[:len(parts) - self.keys[i]]))

    def candidates(self, i: int, op: str, advance: Callable[[str], int], width: int) -> list[str]:
        """Shortenings of name ``i`` within ``width`` that keep its telling segment and its last
        (:func:`_candidates`); [] for a name of one segment or when none fits."""
        parts, tail = self.parts[i], self.tails[i]
        if len(parts) < 2:
            return []
        key = min(len(parts) - self.keys[i], len(parts) - 2)  # the key segment is not the last: kept anyway
        spare = op and parts[-1].startswith(op)  # "MatMul_1 (MatMul)": the op read twice
        return _candidates(parts, key, (tail, "") if spare else (tail,), self.rarity, advance, width)


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
