"""Each letter underlined in a menu (its Alt mnemonic) opens one entry of that menu.

Found by a user pass: with File open, R was Open Recent and Export Report, Q Export QONNX and Quit; in View, F was
Fit graph and Compare Float vs Quantized, X Expand All Groups and Open Exported Model, N Colour by Sensitivity,
Show Q/DQ as Nodes and Open in Netron. Qt then only moves between the entries sharing the letter: the key no
longer runs the command."""

from __future__ import annotations

from collections import defaultdict


def mnemonic(text: str) -> str | None:
    """The letter after the single '&' of a menu text ('&&' is a literal ampersand), lower case; None without."""
    i = text.replace("&&", "\0\0").find("&")
    return text[i + 1].lower() if i >= 0 and i + 1 < len(text) else None


def test_mnemonic():
    assert mnemonic("Open &Recent") == "r"
    assert mnemonic("Save && &Close") == "c"
    assert mnemonic("Inspector") is None


def test_no_menu_underlines_one_letter_twice(window):
    shared = {}
    for top in window.menuBar().actions():
        letters = defaultdict(list)
        for action in top.menu().actions():
            key = mnemonic(action.text())
            if key is not None:
                letters[key].append(action.text())
        shared.update({f"{top.text()} {key}": texts for key, texts in letters.items() if len(texts) > 1})
    assert shared == {}
    assert {top.text() for top in window.menuBar().actions()} == {"&File", "&Edit", "&View", "&Run", "&Help"}
