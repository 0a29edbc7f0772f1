"""Undoable edits: the recipe, and the calibration and evaluation settings.

Every recipe edit builds a new :class:`~workbench.core.recipe.recipe.Recipe` from the current one (pure
functions below, testable without Qt) and pushes a :class:`RecipeCommand` holding the recipe
before and after; undo and redo swap them on the document. Recipes are small, so snapshots are
simpler and safer than inverse operations. A change of the Calibration panel (data source, sample
counts) or of the Evaluate panel's settings is a :class:`SettingsCommand`, likewise holding the
settings before and after.
"""

from __future__ import annotations

import copy
from typing import Any

from PySide6.QtGui import QUndoCommand

from workbench.core.api import NodeSettings, PartialSpec, Recipe, Rule

ROLE_FIELDS = ("enabled", "dtype", "symmetric", "granularity", "axis", "block_size", "observer",
               "reduce_range", "power_of_two")


class RecipeCommand(QUndoCommand):
    """Replace the document's recipe with ``after``; undo restores ``before``. ``latency_kept``: the units of
    ``after`` the latency check kept float (a project's record, applied with its recipe), counted as its while
    the edit is done (:func:`workbench.qt.quantize_anyway.latency_kept_units`)."""

    def __init__(self, document, before: Recipe, after: Recipe, text: str, latency_kept=()):
        super().__init__(text)
        self._doc = document
        self._before = before.model_copy(deep=True)
        self._after = after.model_copy(deep=True)
        self.latency_kept = frozenset(latency_kept)

    @property
    def before(self) -> Recipe:
        """The recipe this edit replaced (a copy)."""
        return self._before.model_copy(deep=True)

    @property
    def after(self) -> Recipe:
        """The recipe this edit sets (a copy)."""
        return self._after.model_copy(deep=True)

    def redo(self) -> None:
        self._doc.set_recipe(self._after.model_copy(deep=True))

    def undo(self) -> None:
        self._doc.set_recipe(self._before.model_copy(deep=True))


class SettingsCommand(QUndoCommand):
    """Change the document's :class:`~workbench.qt.document.Settings` from ``before`` to ``after``
    (a change of the Calibration or the Evaluate panel);
    ``show(settings, panels)`` puts them in the document, and in the panels when ``panels`` is True.

    ``merge`` names the field a spin box changes ("" for none): consecutive changes of it are one edit,
    as typing is in a text editor (the undo stack never merges into the saved state), and a run of
    changes that ends where it began is no edit at all.
    """

    MERGE_ID = 0x5E7

    def __init__(self, show, before: tuple, after: tuple, text: str, merge: str = ""):
        super().__init__(text)
        self._show = show
        self._before, self._after = copy.deepcopy(before), copy.deepcopy(after)
        self._merge = merge
        self._done = False  # the first redo is the push: the panels show the user's change already

    def id(self) -> int:
        return self.MERGE_ID if self._merge else -1

    def mergeWith(self, other: QUndoCommand) -> bool:  # noqa: N802 (Qt's name)
        if not isinstance(other, SettingsCommand) or other._merge != self._merge:
            return False
        self._after = other._after
        self.setObsolete(self._after == self._before)
        return True

    def redo(self) -> None:
        self._show(copy.deepcopy(self._after), self._done)
        self._done = True

    def undo(self) -> None:
        self._show(copy.deepcopy(self._before), True)


def describe_settings_edit(before: tuple, after: tuple) -> tuple[str, str]:
    """(undo text, merge key) of a change of the settings ``before`` -> ``after`` (both
    :class:`~workbench.qt.document.Settings`): the spin boxes (sample counts, an image scale) merge."""
    changed = [f for f in before._fields if getattr(before, f) != getattr(after, f)]
    if changed == ["samples"]:
        return "Change calibration samples", "samples"
    if changed == ["analysis_samples"]:
        return "Change analysis samples", "analysis_samples"
    if changed == ["evaluation"]:
        return "Change evaluation settings", ""
    if changed == ["data"]:
        old, new = before.data or {}, after.data or {}
        keys = {k for k in set(old) | set(new) if old.get(k) != new.get(k)}
        if keys == {"scale"} and "scale" in new:
            return "Change image scale", "data.scale"
        return "Change calibration data", ""
    return "Change calibration settings", ""


def push_edit(document, after: Recipe, text: str, latency_kept=()) -> bool:
    """Push an edit if it changes the recipe; returns True when something changed. ``latency_kept``: as
    :class:`RecipeCommand` takes it."""
    before = document.recipe
    if after.model_dump() == before.model_dump():
        return False
    document.undo_stack.push(RecipeCommand(document, before, after, text, latency_kept))
    return True


# ----------------------------------------------------------------------------- pure edits
def _override(recipe: Recipe, node: str) -> dict[str, Any]:
    current = recipe.overrides.get(node)
    return current.model_dump(exclude_unset=True) if current is not None else {}


def set_role_field(recipe: Recipe, nodes: list[str], role: str, field: str, value: Any) -> Recipe:
    """A copy of ``recipe`` whose overrides set ``role.field = value`` on every node in ``nodes``.

    ``value`` None removes the field from the override (the node inherits it again).
    """
    if field not in ROLE_FIELDS:
        raise ValueError(f"unknown spec field {field!r}")
    out = recipe.model_copy(deep=True)
    for node in nodes:
        settings = _override(out, node)
        part = dict(settings.get(role) or {})
        if value is None:
            part.pop(field, None)
        else:
            part[field] = value
        if part:
            settings[role] = part
        else:
            settings.pop(role, None)
        _store(out, node, settings)
    return _sorted(out)


def set_exclude(recipe: Recipe, nodes: list[str], exclude: bool | None) -> Recipe:
    """A copy with ``exclude`` set (None: inherit) in the overrides of ``nodes``."""
    out = recipe.model_copy(deep=True)
    for node in nodes:
        settings = _override(out, node)
        if exclude is None:
            settings.pop("exclude", None)
        else:
            settings["exclude"] = exclude
        _store(out, node, settings)
    return _sorted(out)


def clear_overrides(recipe: Recipe, nodes: list[str]) -> Recipe:
    out = recipe.model_copy(deep=True)
    for node in nodes:
        out.overrides.pop(node, None)
    return out


def set_preset(recipe: Recipe, preset: str) -> Recipe:
    return recipe.model_copy(deep=True, update={"preset": preset})


def add_rule(recipe: Recipe, rule: Rule) -> Recipe:
    out = recipe.model_copy(deep=True)
    out.rules.append(rule)
    return out


def remove_rule(recipe: Recipe, index: int) -> Recipe:
    out = recipe.model_copy(deep=True)
    del out.rules[index]
    return out


def make_rule(kind: str, key: str, *, activation_dtype: str | None = None, weight_dtype: str | None = None,
              exclude: bool | None = None) -> Rule:
    """A rule matching op type ``key`` (``kind`` "op_type") or the name glob ``key`` (``kind`` "name")."""
    fields: dict[str, Any] = {kind: key}
    if activation_dtype:
        fields["activation"] = PartialSpec(dtype=activation_dtype)
    if weight_dtype:
        fields["weight"] = PartialSpec(dtype=weight_dtype)
    if exclude is not None:
        fields["exclude"] = exclude
    return Rule(**fields)


def _sorted(recipe: Recipe) -> Recipe:
    """Overrides in name order, as a saved project has them (project JSON sorts keys), so the
    recipe stamped into an export does not depend on the order nodes were selected in."""
    recipe.overrides = dict(sorted(recipe.overrides.items()))
    return recipe


def _store(recipe: Recipe, node: str, settings: dict[str, Any]) -> None:
    if settings:
        recipe.overrides[node] = NodeSettings.model_validate(settings)
    else:
        recipe.overrides.pop(node, None)
