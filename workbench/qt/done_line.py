"""The Calibration panel's line of a finished calibration after Edit > Undo / Redo.

A calibration that chose the recipe (or whose latency check kept units float) ends with a line that says
so, with "Ctrl+Z undoes"; after Ctrl+Z the line went on saying the choice was in the recipe. The line
follows the edit state the calibration finished at: below it (its edits undone) it names what was undone
and that the figures shown are of the calibrated recipe, not the current one; back at it (Redo) it is the calibration's line again.
"""

from __future__ import annotations

#: how the panel's line starts while edits of the last calibration are undone
UNDONE_DONE = "Undone since the last calibration:"


def done_line_after_step(texts: list[str], index: int, at: int, line: str) -> str | None:
    """The panel's line at undo-stack position ``index`` for a calibration that finished at position ``at``
    with ``line`` (``texts``: the stack's edit texts, oldest first); None: leave the shown line (edits made
    after the calibration: the results' stale mark says the rest)."""
    if index == at:
        return line
    if index > at:
        return None
    undone = "; ".join(f'"{t}"' for t in texts[index:at])
    return (f"{UNDONE_DONE} {undone}. The figures shown are of the recipe calibrated then, not of the current "
            "one (out of date): F5 calibrates the recipe as it is now; Ctrl+Y redoes.")


__all__ = ["UNDONE_DONE", "done_line_after_step"]
