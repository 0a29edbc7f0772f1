"""A sweep table or autotune curve given to the report must come from this model.

Both name node units (sweep rows by ``node``, curve points by ``levels`` -> node lists); a file
written for another model names nodes this one does not have and would draw meaningless figures.
"""

from __future__ import annotations

from collections.abc import Iterable

from workbench.core.analysis.sensitivity import SweepResult
from workbench.core.errors import DataError
from workbench.core.graph.index import iter_graphs
from workbench.core.graph.layout import node_keys
from workbench.core.pipeline.quantize import QuantizeResult
from workbench.core.recipe.recipe import Recipe


def _first_missing(names: Iterable[str], known: set[str]) -> str | None:
    return next((n for n in names if n not in known), None)


def curve_nodes(curve: dict) -> list[str]:
    """Node units named by an autotune curve document (``curve[i].levels`` values), in file order."""
    out = []
    for point in curve.get("curve") or []:
        levels = point.get("levels") if isinstance(point, dict) else None
        for nodes in (levels or {}).values() if isinstance(levels, dict) else []:
            out.extend(str(n) for n in (nodes if isinstance(nodes, list) else []))
    return out


def _recipe_difference(sweep_json: str, report_json: str) -> tuple[str, str, list[str]]:
    """``(the sweep's preset, the report's preset, the recipe fields that differ, in field order)``, the
    defaults filled in (``sweep --json`` writes the recipe without them: a recipe of the default preset
    has no ``preset`` key; :func:`workbench.core.report.collect.load_sweep` refused a recipe it cannot read)."""
    theirs = Recipe.from_json(sweep_json, source="the sweep's recipe").model_dump(mode="json")
    ours = Recipe.from_json(report_json).model_dump(mode="json")
    fields = [k for k in dict.fromkeys([*theirs, *ours]) if theirs.get(k) != ours.get(k)]
    return str(theirs["preset"]), str(ours["preset"]), fields


def check_report_names(model, *, curve: dict | None = None, curve_source: str = "", sweep: SweepResult | None = None,
                       sweep_source: str = "", units: set[str] = frozenset()) -> None:
    """Refuse a curve or sweep naming a node that neither ``model`` (a PreparedModel) nor ``units`` (the
    plan's unit names, when known) has; needs no quantize result, so a CLI can check before its job.

    Raises
    ------
    DataError
        One line naming the JSON file and its first node missing from the model.
    """
    known = set(units) | set(node_keys(model.proto.graph.node))
    known |= {n.name for g in iter_graphs(model.proto.graph) for n in g.node}  # units inside If / Loop bodies
    checks = [(sweep_source, [r.node for r in sweep.rows] if sweep is not None else [], "sweep --json"),
              (curve_source, curve_nodes(curve) if curve is not None else [], "autotune --curve-json")]
    for source, names, verb in checks:
        missing = _first_missing(names, known)
        if missing is not None:
            raise DataError(f"{source}: names node {missing!r}, which {model.path or 'the model'} does not have "
                            "(the file was made for another model).",
                            hint=f"Give the file `workbench-cli {verb} FILE` wrote for this model.")


def check_report_inputs(model, result: QuantizeResult, *, curve: dict | None = None, curve_source: str = "",
                        sweep: SweepResult | None = None, sweep_source: str = "") -> None:
    """Refuse a curve or sweep naming a node ``model`` (a PreparedModel) does not have, and a sweep
    that records another recipe than ``result``'s.

    Raises
    ------
    DataError
        One line naming the JSON file and its first node missing from the model, or the presets of
        the two recipes.
    """
    check_report_names(model, curve=curve, curve_source=curve_source, sweep=sweep, sweep_source=sweep_source,
                       units=set(result.plan.units))
    if sweep is not None and sweep.recipe is not None and result.recipe is not None \
            and sweep.recipe != result.recipe.to_json():
        theirs, ours, fields = _recipe_difference(sweep.recipe, result.recipe.to_json())
        raise DataError(f"{sweep_source}: the sweep measured another recipe (preset {theirs}) than this "
                        f"report's (preset {ours}, as the recipe choice and the options make it); they differ "
                        f"in {', '.join(fields) or 'their JSON'}.",
                        hint="Run `workbench-cli sweep --json FILE` with the report's model, data and recipe options.")
