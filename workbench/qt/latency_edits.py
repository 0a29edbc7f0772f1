"""The latency check's recipe edits on the undo stack: which units they keep float.

A calibration whose latency check kept units float pushes one undoable edit, "Keep 5 units float (latency
check)"; an export whose latency check did pushes "Keep 5 units float (latency check at export)". The
figures measured after an export come from an analysis, which runs no latency check, so its issues do not
say who kept the units float: the undo stack does.
"""

from __future__ import annotations

#: What the latency check's edits say in Edit > Undo ("Keep 135 units float (latency check, 13 islands)", and
#: "... (latency check at export)").
LATENCY_EDIT = "(latency check"


def edit_kept(command) -> set[str]:
    """The node names ``command`` (a QUndoCommand; a recipe edit has ``before`` / ``after`` recipes) turned
    to excluded when it is one of the latency check's edits; empty otherwise."""
    if command is None or LATENCY_EDIT not in command.text() or not hasattr(command, "after"):
        return set()
    before = command.before.overrides
    return {n for n, o in command.after.overrides.items() if o.exclude and not (n in before and before[n].exclude)}


def latency_edits_keep_float(doc) -> bool:
    """True when a done latency-check edit of ``doc``'s undo stack (one before its index) excluded a unit
    that ``doc``'s recipe still excludes."""
    stack, now = doc.undo_stack, doc.recipe.overrides
    return any(n in now and now[n].exclude for i in range(stack.index()) for n in edit_kept(stack.command(i)))


__all__ = ["LATENCY_EDIT", "edit_kept", "latency_edits_keep_float"]
