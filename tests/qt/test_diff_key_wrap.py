"""The diff key wraps between its entries only: a QLabel with word wrap broke inside them ("w:" at the end of
one line, "weight DQ" on the next; "Q/" then "DQ pair inserted"). Laid out here as the key's QLabel lays it
out (its rich text in a QTextDocument, word wrap) at every width from 60 to 1400 px."""

from __future__ import annotations

import html
import re

import pytest

pytest.importorskip("PySide6")

from PySide6.QtGui import QTextDocument, QTextOption  # noqa: E402

from workbench.qt.diff_panes import legend_html  # noqa: E402

ENTRIES = ["\u25a0 struck grey: float op folded / fused (note: the node it went into)", "\u25a0 struck red: removed",
           "\u25a0 orange frame: left float", "\u25a0 green frame: added by the quantizer",
           "edge pills (u8): Q/DQ pair inserted", "w: weight DQ", "b: bias DQ", "out: pair before a graph output"]


def plain(text: str) -> str:
    """Rich or laid-out text as read: no-break spaces as spaces, word joiners dropped."""
    return text.replace("\xa0", " ").replace("\u2060", "")


def key_text(rich: str) -> str:
    """The text of the key's rich text ``rich``, tags dropped."""
    return plain(html.unescape(re.sub(r"<[^>]+>", "", rich)))


def wrapped_lines(rich: str, width: int) -> list[str]:
    """The lines of ``rich`` laid out ``width`` px wide with word wrap (as a QLabel with setWordWrap(True))."""
    doc = QTextDocument()
    option = QTextOption()
    option.setWrapMode(QTextOption.WrapMode.WordWrap)
    doc.setDefaultTextOption(option)
    doc.setHtml(rich)
    doc.setTextWidth(width)
    doc.size()  # lays it out
    block, lines = doc.begin(), []
    while block.isValid():
        layout, text = block.layout(), block.text()
        for i in range(layout.lineCount()):
            line = layout.lineAt(i)
            lines.append(plain(text[line.textStart():line.textStart() + line.textLength()]).strip(" ;"))
        block = block.next()
    return lines


def test_the_marks_key_breaks_lines_between_entries_only(qapp):
    rich = legend_html(["u8"])
    assert key_text(rich) == "   ".join(ENTRIES[:4]) + "   " + "; ".join(ENTRIES[4:])
    entry = "|".join(re.escape(e) for e in ENTRIES)
    wrapped = 0
    for width in range(60, 1401, 20):
        lines = wrapped_lines(rich, width)
        wrapped += len(lines) > 1
        for line in lines:  # whole entries, separated by the gap or "; "
            assert re.fullmatch(rf"(?:{entry})(?:(?: +|; )(?:{entry}))*", line), (width, line)
    assert wrapped > 30  # most widths wrap it somewhere
