"""One restore of an autosave: :class:`workbench.qt.autosave.RestoreCommand` (every field a project saves).

The older ``commands.RestoreCommand`` (recipe, data and cache only) was left unused beside it; a second,
partial restore command invites restoring an autosave without its results and settings."""

from __future__ import annotations

import inspect

from PySide6.QtGui import QUndoCommand

from workbench.qt import autosave, commands


def test_the_autosave_restore_is_the_only_restore_command():
    restores = [name for module in (commands, autosave) for name, obj in inspect.getmembers(module, inspect.isclass)
                if issubclass(obj, QUndoCommand) and "Restore" in name and obj.__module__ == module.__name__]
    assert restores == ["RestoreCommand"]
    assert not hasattr(commands, "RestoreCommand")
