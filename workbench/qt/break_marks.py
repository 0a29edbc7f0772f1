"""Places where a long name may wrap in a narrow panel, and copies without them.

A QLabel wraps only at spaces and a few punctuation marks, so a name such as ``model.22.cv3.1.1.conv.weight``
or ``onnx::Conv_32_quantized`` is laid out on one line wider than the panel and cut at its edge. :func:`breakable`
puts a zero-width space (:data:`BREAK`) after its dots, underscores, colons and slashes; it does not show, and
:func:`keep_copies_clean` takes it out of what the user copies from such a label (a name pasted into the search
box or a shell must be the name).
"""

from __future__ import annotations

import re

from PySide6.QtGui import QGuiApplication

#: a zero-width space: a place where a line may wrap that does not show
BREAK = "\u200b"
_BREAK_AFTER = re.compile(r"(?<=[^\W\d])[._:/](?=\w)|(?<=\d)[._:/](?=[^\W\d])")
#: words up to this many characters are not broken
LONG = 16
_LONG_WORD = re.compile(r"\S{" + str(LONG + 1) + ",}")
_hooked: list = []  # the clipboard whose dataChanged is connected (once per application)


def breakable(text: str) -> str:
    """``text`` with a :data:`BREAK` after each dot, underscore, colon and slash between two word characters
    of a word longer than :data:`LONG` characters (``per_tensor`` and ``zero_point`` stay whole), but not
    between two digits (a scale such as ``0.0158237`` stays whole): ``cv3.1.1.conv`` ->
    ``cv3.1.1.|conv``, ``Conv_32`` -> ``Conv_|32``."""
    return _LONG_WORD.sub(lambda w: _BREAK_AFTER.sub(lambda m: m.group(0) + BREAK, w.group(0)), text)


def unbroken(text: str) -> str:
    """``text`` without its :data:`BREAK` marks."""
    return text.replace(BREAK, "")


def _clean() -> None:
    board = QGuiApplication.clipboard()
    text = board.text()
    if BREAK in text and (board.ownsClipboard() or QGuiApplication.focusWindow() is not None):  # copied here
        board.setText(unbroken(text))


def keep_copies_clean() -> None:
    """Text this application puts on the clipboard loses its :data:`BREAK` marks (connected once)."""
    app = QGuiApplication.instance()
    board = QGuiApplication.clipboard() if app is not None else None
    if board is None or any(b is board for b in _hooked):
        return
    _hooked.append(board)
    board.dataChanged.connect(_clean)
