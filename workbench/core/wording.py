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


#: What an island is, in plain words, where a note first names one (the latency fallback's notes in the CLI and the
#: app's Problems dock, the Problems dock's group titles).
ISLAND_MEANS = "a connected group of quantized node units between float nodes"


def island_of(units: list[str] | tuple[str, ...], shown: int = 3) -> str:
    """An island of ``units`` in plain words, as the latency fallback's notes name it: "island of 2 node units
    (else_mm, then_mm): a connected group of quantized node units between float nodes"; the first ``shown`` names,
    then how many more ("(a, b, c and 2 more)"). One unit: "island of 1 node unit (mm1): a quantized node unit between
    float nodes"."""
    names = ", ".join(units[:shown]) + (f" and {len(units) - shown} more" if len(units) > shown else "")
    means = ISLAND_MEANS if len(units) != 1 else "a quantized node unit between float nodes"
    return f"island of {count(len(units), 'node unit')} ({names}): {means}"


def share(fraction: float) -> str:
    """``fraction`` (0..1) as a percentage with two decimals ("1.25%"), except a share the two decimals would
    round away: above 0 but below 0.005% reads "<0.01%" and below 100% but above 99.995% reads ">99.99%"
    (a clip range with a few values outside it read "0.00% of values outside"). 0 reads "0.00%"."""
    if 0.0 < fraction < 0.00005:
        return "<0.01%"
    if 0.99995 < fraction < 1.0:
        return ">99.99%"
    return f"{fraction:.2%}"


def did_you_mean(name: str, choices) -> str:
    """The guess after an unknown name, as recipe, preset and project errors word it: ``" (did you mean
    'input_shapes'?)"`` for the closest of ``choices`` (difflib's default cutoff, 0.6), or "" when none is
    close."""
    import difflib  # only for a misspelt name (a plain quantize does not load it)

    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
