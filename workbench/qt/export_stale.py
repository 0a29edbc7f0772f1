"""Whether an exported file still holds the open work's settings (View > Open Exported Model).

An export records what it quantized with (:func:`exported_with`): the recipe the file holds
(the latency check's and the recipe choice's units included) and the calibration rows (data, samples).
:func:`changed_since` compares that with the document as it is now, by value: an edit undone back to the
exported recipe is no change. :func:`stale_note` words it for the tab's header line, e.g. "Exported before
the recipe changed: export again (Ctrl+E) to see the current settings.".
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.core import api

#: the tab title's suffix while the file is outdated
STALE_SUFFIX = " (outdated)"


@dataclass(frozen=True)
class ExportedWith:
    """What an export quantized with: the recipe JSON the file holds and the rows (data, samples)."""

    recipe: str
    rows: tuple


def _recipe_json(text: str) -> str:
    """``text`` (recipe JSON) in the document's own form (``Recipe.to_json``), so equal recipes compare equal."""
    return api.Recipe.model_validate_json(text).to_json()


def exported_with(result: dict, rows: tuple) -> ExportedWith:
    """The state an export job's ``result`` wrote on ``rows``: its ``recipe`` (the file's), else the recipe it
    started with."""
    return ExportedWith(_recipe_json(result.get("recipe") or result["started_recipe"]), rows)


def changed_since(state: ExportedWith | None, doc) -> list[str]:
    """What of ``doc`` (the window's Document) differs from ``state``: "recipe", "calibration data", both, or
    nothing ([]; also when nothing is known of the file: ``state`` None). Exports are forgotten when another
    model opens (their tabs close with the previous model's)."""
    if state is None:
        return []
    changed = []
    if doc.recipe.to_json() != state.recipe:
        changed.append("recipe")
    if doc.rows != state.rows:
        changed.append("calibration data")
    return changed


def stale_note(changed: list[str]) -> str:
    """The tab's header line for ``changed`` (:func:`changed_since`); "" when nothing changed."""
    if not changed:
        return ""
    return f"Exported before the {' and the '.join(changed)} changed: export again (Ctrl+E) to see the current settings."
