"""Every "Menu > Entry" the app's texts and the README name is an entry of that menu.

Found by a user pass: the Inspector said "File > Export QDQ..., Ctrl+E" after the entry became "Export..."."""

from __future__ import annotations

import re
from pathlib import Path

from workbench.qt.actions import ACTIONS, MENUS
from workbench.qt.docks import DOCKS

ROOT = Path(__file__).resolve().parents[2]
MENTION = re.compile(r"\b(File|Edit|View|Run|Help) > ([^\n]{1,80})")
#: where the name of an entry ends in a sentence ("View > Fit / Zoom", "File > Export... (Ctrl+E)")
END = re.compile(r"\s*(?:[*/,;:()\"'`]|\.{3}|\.\s|\.$|\s+-\s|\s+and\s|\s+or\s|\s+in\s|'s\s)")


def menu_entries() -> dict[str, list[str]]:
    """Menu title -> the texts of its entries as the menu bar shows them (no '&', no trailing '...')."""
    texts = {spec.name: spec.text for spec in ACTIONS}
    out = {}
    for title, entries in MENUS.items():
        names = []
        for entry in entries:
            if entry == "@recent":
                names.append("Open Recent")
            elif entry == "@docks":
                names += [dock.title for dock in DOCKS]
            elif entry == "@theme":
                names.append("Theme")
            elif entry != "-":
                names.append(texts[entry])
        out[title.replace("&", "")] = [n.replace("&", "").removesuffix("...") for n in names]
    return out


def stale_mentions(text: str, entries: dict[str, list[str]]) -> list[str]:
    """The mentions in ``text`` naming no entry of their menu: the name may be cut short ("Apply Project") or
    go on with the sentence in lower case ("Edit > Undo reverts it"; "File > Export QDQ" names no entry)."""
    out = []
    for match in MENTION.finditer(text):
        menu, rest = match.group(1), match.group(2).lstrip("* ")
        named = END.split(rest, maxsplit=1)[0].strip().rstrip(".")
        if not any(e.startswith(named) or (named.startswith(f"{e} ") and named[len(e) + 1:][:1].islower())
                   for e in entries[menu]):
            out.append(f"{menu} > {named}")
    return out


def test_the_checker_finds_a_stale_entry():
    entries = menu_entries()
    assert stale_mentions("export again (File > Export QDQ..., Ctrl+E).", entries) == ["File > Export QDQ"]
    assert stale_mentions("the diff tab (Run > Compare Float vs Quantized, Ctrl+Shift+D)", entries) == [
        "Run > Compare Float vs Quantized"]
    assert stale_mentions("what File > Save writes", entries) == ["File > Save writes"]
    assert stale_mentions("*File > Export...* (Ctrl+E), View > Fit / Zoom, File > Apply Project's, Edit > Undo "
                          "reverts it, View > Legend.", entries) == []


def test_app_texts_and_readme_name_real_menu_entries():
    entries = menu_entries()
    files = [*sorted((ROOT / "workbench" / "qt").rglob("*.py")), ROOT / "README.md"]
    stale = [f"{path.relative_to(ROOT)}: {m}" for path in files
             for m in stale_mentions(path.read_text(encoding="utf-8"), entries)]
    assert stale == []
