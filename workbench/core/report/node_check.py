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
from workbench.core.report.sweep_match import check_sweep_job


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
                        sweep: SweepResult | None = None, sweep_source: str = "", job: dict | None = None) -> None:
    """Refuse a curve or sweep naming a node ``model`` (a PreparedModel) does not have, and a sweep
    measured for another job than the report's (:func:`workbench.core.report.sweep_match.check_sweep_job`:
    ``job``, the report's :func:`~workbench.core.report.sweep_match.sweep_job_stamp`, against the one the sweep
    recorded; without either, the recipe the sweep measured against ``result``'s).

    Raises
    ------
    DataError
        One line naming the JSON file and its first node missing from the model, the input that differs
        (model, calibration data, samples), or the presets and differing fields of the two recipes.
    """
    check_report_names(model, curve=curve, curve_source=curve_source, sweep=sweep, sweep_source=sweep_source,
                       units=set(result.plan.units))
    if sweep is not None:
        check_sweep_job(sweep, sweep_source, result.recipe, job)
