"""Why the recipe choice does not run on the document's recipe, in one line with what to do.

The choice starts from a static preset, with or without node overrides, which it keeps
(:func:`workbench.core.api.why_not_choose`); rules, an op-type list or SmoothQuant make it skip. A recipe
it chose holds rules, node settings or an op-type list of its own (compute+mse on digits_transformer:
one rule and ``op_types`` MatMul, Gemm): an edit made after it must not count those as the user's edits
(F5 said "the recipe has 3 edits" after one node edit). :func:`choice_skip_text` tells the two cases
apart with the choice the window applied last (:class:`AppliedChoice`).
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.core.wording import count


@dataclass(frozen=True)
class AppliedChoice:
    """A recipe choice made the document's recipe: ``label`` ("compute+mse") and the recipe it chose."""

    label: str
    recipe: object  # Recipe


def recipe_edits(recipe) -> int:
    """How many edits ``recipe`` holds over its preset: its rules, node settings, an op-type list and
    SmoothQuant (each counts one)."""
    return (len(recipe.rules) + len(recipe.overrides) + (recipe.op_types is not None)
            + (recipe.smoothquant is not None))


def blocking_edits(recipe) -> int:
    """How many edits of ``recipe`` make the choice skip it: its rules, an op-type list and SmoothQuant (each
    counts one; node overrides do not, the choice keeps them)."""
    return len(recipe.rules) + (recipe.op_types is not None) + (recipe.smoothquant is not None)


def holds_choice(recipe, chosen) -> bool:
    """True when ``recipe`` still holds what the choice wrote into ``chosen`` over its preset (its rules, node
    settings, op-type list, SmoothQuant) and that is something (a choice that kept the preset wrote none)."""
    if not recipe_edits(chosen):
        return False
    return (all(rule in recipe.rules for rule in chosen.rules)
            and all(recipe.overrides.get(node) == spec for node, spec in chosen.overrides.items())
            and recipe.op_types == chosen.op_types
            and chosen.smoothquant in (None, recipe.smoothquant))


def edits_after(recipe, chosen) -> int:
    """How many edits ``recipe`` holds over ``chosen`` (a recipe it was made from), counted as
    :func:`recipe_edits` counts: each rule added, each node whose settings differ, the op-type list and
    SmoothQuant when changed."""
    rules = list(chosen.rules)
    added = 0
    for rule in recipe.rules:
        if rule in rules:
            rules.remove(rule)
        else:
            added += 1
    nodes = set(recipe.overrides) | set(chosen.overrides)
    return (added + len(rules) + sum(recipe.overrides.get(n) != chosen.overrides.get(n) for n in nodes)
            + (recipe.op_types != chosen.op_types) + (recipe.smoothquant != chosen.smoothquant))


def after_choice_text(applied: AppliedChoice, recipe) -> str:
    """The choice made ``applied`` and ``recipe`` was edited since: why it does not run again, and how to
    choose again (after "Recipe choice skipped: ")."""
    edits = edits_after(recipe, applied.recipe)
    since = f"was edited after it ({count(edits, 'edit')} since)" if edits else "changed after it"
    return (f"the choice already ran on this model ({applied.label}) and the recipe {since}, "
            "so the recipe is used as it is; to choose again from the preset, undo back to before "
            f"'Choose recipe: {applied.label}' (Edit > Undo, Ctrl+Z; the later edits go too), then Run > Choose "
            "Recipe (Ctrl+F5)")


def choice_skip_text(recipe, why: str, applied: AppliedChoice | None = None) -> str:
    """The one line a calibration says when "Choose the recipe first" is ticked but ``recipe`` is not a bare
    preset (``why``: :func:`workbench.core.api.why_not_choose`), with what to do; ``applied``: the choice the
    window applied last on this model (None: none), when ``recipe`` still holds what it wrote."""
    if applied is not None and holds_choice(recipe, applied.recipe):
        return f"Recipe choice skipped: {after_choice_text(applied, recipe)}."
    edits = blocking_edits(recipe)
    if edits:
        return (f"Recipe choice skipped: the recipe has {count(edits, 'rule or op-type edit', 'rule or op-type edits')}; "
                "the choice starts from a preset with node overrides at most (to let it choose: undo those edits, F5, "
                "then edit the chosen recipe).")
    return (f"Recipe choice skipped: {why}; the choice starts from a static integer preset, so the recipe was "
            "calibrated as it is (to let it choose, pick a static integer preset in the Recipe panel).")
