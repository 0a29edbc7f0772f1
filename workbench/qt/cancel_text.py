"""The status lines of a cancelled job, worded by the phase it was in and by what it leaves.

A calibration cancelled while analysing said "Cancelling Calibration..." and then "previous results
kept" when there were none; these say "Cancelling Calibration (while analysing)..." and "Calibrate
cancelled while analysing; no results yet (F5 starts it again)."
"""

from __future__ import annotations

#: job kinds that write a file: one cancelled before its write leaves nothing behind (outputs are written
#: atomically); one that returns after the cancel has written its file and ends as done (:func:`too_late`)
WRITERS = ("export", "report")


def too_late(result: dict) -> str:
    """" (the cancel came too late to stop the write)" for a file job's ``result`` whose ``cancel_too_late`` is
    set (cancelled once its write had begun: the file is written), else ""."""
    return " (the cancel came too late to stop the write)" if result.get("cancel_too_late") else ""


def killed_after_write_text(kind: str, path: str, grace: float) -> str:
    """The status line of file job ``kind`` ("export" / "report") that was killed ``grace`` seconds after its
    cancel once its file ``path`` was already in place: the file is written, the job's results were lost."""
    what = f"exported {path}" if kind == "export" else f"wrote the report to {path}"
    return (f"Done: {what} (the cancel came too late to stop the write; the job did not end within {grace:g} s "
            "of the cancel and was stopped, so its results are not shown).")


def phase_of(message: str) -> str:
    """The phase a progress message names ("Analysing: 3/120 units" -> "Analysing"; a job's name first,
    "Sensitivity: Sweeping units (conv) (4/64)" -> "Sweeping"; "" for none)."""
    head, _, rest = message.partition(":")
    if head.strip().endswith("ing") and " " not in head.strip():
        return head.strip()
    first = rest.split(None, 1)[0] if rest.strip() else ""
    return first if first.endswith("ing") and first[:1].isupper() else ""


#: job kinds worded otherwise than their capitalized name in a status line
KIND_WORDS = {"choose": "Recipe choice"}
#: phases worded otherwise: a job's "Opening" reads its copy of the open model (the window's model stays open;
#: "Choose cancelled while opening" read as if opening the model had been cancelled)
PHASE_WORDS = {"Opening": "while reading the model"}


def _while(phase: str) -> str:
    return PHASE_WORDS.get(phase) or f"while {phase.lower()}" if phase else ""


def cancelling_text(title: str, phase: str) -> str:
    """What the job ``title`` is cancelled as: "Calibration (while analysing)" (``phase`` "" : ``title``)."""
    return f"{title} ({_while(phase)})" if phase else title


def cancelled_text(kind: str, phase: str, had_results: bool | None) -> str:
    """The status line once job ``kind`` stopped: by ``phase`` and by whether results of that kind
    existed before it (``had_results`` None: the kind keeps none, e.g. a recipe choice)."""
    when = f" {_while(phase)}" if phase else ""
    if kind in WRITERS:
        tail = "nothing was written"
    elif had_results:
        tail = "the previous results are kept"
    elif kind == "choose":
        tail = "the model stays open with its recipe unchanged (Run > Choose Recipe, Ctrl+F5, runs it again)"
    elif had_results is None:
        tail = "nothing changed"
    else:
        tail = "no results yet (start it again when ready)"
    return f"{KIND_WORDS.get(kind) or kind.capitalize()} cancelled{when}; {tail}."


__all__ = ["cancelled_text", "cancelling_text", "killed_after_write_text", "phase_of", "too_late"]
