"""The app's words for a recipe choice a calibration ran first: what was chosen and on what scores, in the
GUI's terms (the CLI's line names ``--no-auto``; here it is the Calibration panel's "Choose the recipe
first" and Ctrl+Z), and its short form for the status bar."""

from __future__ import annotations

from workbench.core.wording import count


def promoted_part(choice: dict) -> str:
    """``9 units kept float`` / ``16-bit activations on 9 units`` of ``choice`` (the calibrate job's
    ``choice``: :func:`workbench.core.jobs.choice_json`), "" when it promoted none."""
    label, chosen = choice.get("label") or choice["chosen"], choice["chosen"]
    return label.removeprefix(chosen).removeprefix(" + ") if label != chosen else ""


def choice_line(choice: dict) -> str:
    """``Recipe choice: compute+mse (output SQNR on 12 held-out rows, dB: preset 20.1, ...); 9 units kept
    float (the Recipe panel lists them).``: the variant, the scores and the promoted units, no CLI flag."""
    scores = ", ".join(f"{k} {v:.1f}" for k, v in (choice.get("scores") or {}).items())
    line = (f"Recipe choice: {choice['chosen']} (output SQNR on {count(choice.get('held_out', 0), 'held-out row')}, "
            f"dB: {scores})")
    promoted = promoted_part(choice)
    if promoted:
        line += f"; {promoted} (the Recipe panel lists them under Node overrides)"
    return line + "."


def applied_note(steps: int = 1) -> str:
    """What to do about a choice applied as one edit, in the GUI's terms; ``steps`` 2 when the latency check's
    edit was pushed after it (the first Ctrl+Z undoes that one: "Ctrl+Z restores ..." was then untrue)."""
    keys = "Ctrl+Z" if steps == 1 else "Ctrl+Z twice (the first undoes the latency check's units)"
    return (f" {keys} restores the recipe the choice started from (the preset and your node overrides; F5 then "
            "calibrates it as it is); untick \"Choose the recipe first\" in "
            "the Calibration panel to calibrate presets as they are.")


def choice_short(choice: dict | None, text: str = "", steps: int = 1) -> str:
    """The status bar's few words for a choice made (``" Recipe choice: compute+mse + 9 units kept float
    (Ctrl+Z undoes)."``; ``steps`` 2: "(Ctrl+Z twice undoes)", the latency check's edit pushed after it) or
    skipped (``text``, its whole line, holds why: the Calibration panel shows it); "" when none was made or
    skipped."""
    if choice and not choice.get("skipped"):
        keys = "Ctrl+Z" if steps == 1 else "Ctrl+Z twice"
        return f" Recipe choice: {choice.get('label') or choice['chosen']} ({keys} undoes)."
    return " Recipe choice skipped." if "skipped" in text else ""


__all__ = ["applied_note", "choice_line", "choice_short", "promoted_part"]
