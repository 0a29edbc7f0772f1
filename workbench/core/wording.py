"""Counted nouns for every text the app, the CLI and the core show: ``count(1, "issue")`` is "1 issue", ``count(3, "issue")``
"3 issues" (never "1 issues" or "3 issue(s)")."""

from __future__ import annotations


def plural(n: int, noun: str, many: str | None = None) -> str:
    """``noun`` for ``n == 1``, else ``many`` (default: ``noun`` + "s"); ``n`` is not shown."""
    return noun if n == 1 else (many if many is not None else f"{noun}s")


def count(n: int, noun: str, many: str | None = None) -> str:
    """``"<n> <noun>"`` with the noun in the singular for exactly 1 and in the plural otherwise
    (0 included: "0 errors"). ``many`` gives an irregular plural ("1 analysis", "2 analyses")."""
    return f"{n} {plural(n, noun, many)}"
