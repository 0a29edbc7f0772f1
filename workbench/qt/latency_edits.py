"""The latency check's recipe edits on the undo stack, and the units they keep float.

A calibration whose latency check kept units float pushes one undoable edit, "Keep 5 units float (latency
check)"; an export whose latency check did pushes "Keep 5 units float (latency check at export)". The
figures measured after an export come from an analysis, which runs no latency check, so its issues do not
say who kept the units float: the undo stack (and an opened or applied project's ``latency_kept``) does.
"""

from __future__ import annotations

#: What the latency check's edits say in Edit > Undo ("Keep 135 units float (latency check, 13 islands)", and
#: "... (latency check at export)").
LATENCY_EDIT = "(latency check"


def is_latency_edit(command) -> bool:
    """True when ``command`` (a QUndoCommand or None) is one of the latency check's recipe edits."""
    return command is not None and LATENCY_EDIT in command.text()


def latency_edit_done(doc) -> bool:
    """True when the undo stack's last done edit (what Ctrl+Z undoes) is the latency check's."""
    stack = doc.undo_stack
    return stack.index() > 0 and is_latency_edit(stack.command(stack.index() - 1))


def latency_edit_undone(doc) -> bool:
    """True when the undo stack's next redo (what Ctrl+Y does) is the latency check's edit."""
    stack = doc.undo_stack
    return stack.index() < stack.count() and is_latency_edit(stack.command(stack.index()))


def _kept_by(doc) -> tuple[set[str], set[str]]:
    """The units this session's latency edits excluded (measured on this machine) and those a project's
    ``latency_kept`` names (the opened project's, or one applied with its recipe: measured where and when that
    project was saved), whether or not the recipe still excludes them."""
    stack, measured, recorded = doc.undo_stack, set(), set(doc.latency_opened)
    for i in range(stack.index()):
        command = stack.command(i)
        if is_latency_edit(command) and hasattr(command, "after"):
            before, after = command.before.overrides, command.after.overrides
            measured |= {n for n, o in after.items() if o.exclude and not (n in before and before[n].exclude)}
        for part in [command, *(command.child(j) for j in range(command.childCount()))]:
            recorded |= getattr(part, "latency_kept", frozenset())  # a project's record applied with its recipe
    return measured, recorded


def latency_kept_units(doc) -> set[str]:
    """The units the latency check's done edits (those before the undo stack's index), a done edit that applied a
    project's recipe with its ``latency_kept`` (File > Apply Project to Model) or the opened project's
    (:attr:`~workbench.qt.document.Document.latency_opened`) excluded and the recipe still excludes: their node
    names (Conv@0 of ppocr_mobile_v2_cls, kept float with its island)."""
    measured, recorded = _kept_by(doc)
    now = doc.recipe.overrides
    return {n for n in measured | recorded if n in now and now[n].exclude}


def latency_kept_recorded(doc) -> set[str]:
    """The units of :func:`latency_kept_units` that only a project's record keeps float (an opened, restored or
    applied project's ``latency_kept``), not a latency check of this session: measured slower quantized when that
    project was saved, maybe on another machine."""
    measured, _ = _kept_by(doc)
    return latency_kept_units(doc) - measured


__all__ = ["LATENCY_EDIT", "is_latency_edit", "latency_edit_done", "latency_edit_undone", "latency_kept_recorded",
           "latency_kept_units"]
