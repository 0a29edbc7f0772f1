"""Per-unit figures as Model Explorer node data: files its "Load node data" button overlays on the graph.

Format (``model_explorer.node_data_builder`` of ``ai-edge-model-explorer``, read from its source,
version 0.1.34): a JSON object keyed by graph id; each value has ``results`` (node id ->
``{"value": number}``), a ``name`` and an optional colour ``gradient`` (``stop`` 0 is the lowest
value of the file, 1 the highest). The web app loads one series per file (a file is one "run"),
so each figure gets its own file:

- ``sqnr``: the unit's output SQNR against the float model, dB (:mod:`unit_error`);
- ``sensitivity``: the SQNR the unit adds itself (local SQNR, dB; lowest = the unit to keep in a
  wider dtype or float), from :func:`workbench.core.analysis.sensitivity.local_sensitivity`.

Node ids are those of Model Explorer's ONNX adapter (:mod:`explorer_ids`). Both files colour low
dB red and high dB green. A figure that is not a finite number (SQNR of a unit whose output is
exact: +inf; no signal: NaN) is written as the string ``"inf"`` / ``"nan"``, which the viewer
shows uncoloured.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from workbench.core.analysis.explorer_ids import ExplorerIds, explorer_ids
from workbench.core.analysis.sensitivity import local_sensitivity
from workbench.core.errors import ModelError
from workbench.core.io.atomic import atomic_write_bytes, check_not_input

#: Figure -> (series name shown by Model Explorer, file suffix).
SERIES = {
    "sqnr": ("Workbench: unit output SQNR (dB)", ".sqnr.json"),
    "sensitivity": ("Workbench: SQNR the unit adds itself (dB, lowest = most sensitive)", ".sensitivity.json"),
}

#: Low dB red, middle yellow, high dB green (ColorBrewer RdYlGn end points).
GRADIENT = [{"stop": 0, "bgColor": "#d73027"}, {"stop": 0.5, "bgColor": "#fee08b"},
            {"stop": 1, "bgColor": "#1a9850"}]


@dataclass
class NodeData:
    """The node-data documents of one analysis.

    Attributes
    ----------
    documents : dict of str to dict
        Figure ("sqnr", "sensitivity") -> Model Explorer per-model node-data document.
    graph_id : str
        Model Explorer's id of the main graph.
    unmatched : list of str
        Units not found in the file (left out of the documents).
    """

    documents: dict[str, dict]
    graph_id: str
    unmatched: list[str] = field(default_factory=list)

    def node_ids(self, figure: str = "sqnr") -> list[str]:
        """Node ids of one figure's document."""
        return list(self.documents[figure][self.graph_id]["results"])


def _value(v: float):
    if math.isfinite(v):
        return round(float(v), 4)
    return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")


def build_node_data(model, plan, rows, *, measured=None, ids: ExplorerIds | None = None) -> NodeData:
    """Model Explorer node data of ``rows`` (the units of ``plan`` measured on ``model``).

    Parameters
    ----------
    model : PreparedModel
        The float model the analysis ran on; its file (``model.path``) gives the node ids.
    plan : QuantPlan
        The plan the rows were measured with (each unit's inputs, for the local SQNR).
    rows : list of UnitError
        Output of :func:`workbench.core.pipeline.analyze.analyze`.
    measured : PreparedModel, optional
        The float model the rows name when it is not ``model`` (``QuantizeResult.float_model``).
    ids : ExplorerIds, optional
        The file's Model Explorer ids (default: read from ``model.path``).

    Raises
    ------
    ModelError
        ``model`` has no file, or the file cannot be read.
    """
    if ids is None:
        if model.path is None:
            raise ModelError("Model Explorer node data: a model built in memory has no file for Model Explorer "
                             "to open.", hint="Save the model to a file first.")
        ids = explorer_ids(model.path)
    local = {s.node: s.local_sqnr_db for s in local_sensitivity(plan, rows, graph=(measured or model).proto.graph)}
    sqnr: dict[str, dict] = {}
    sens: dict[str, dict] = {}
    unmatched = []
    measured = measured or model  # the model the rows name
    for r in rows:
        outputs = _outputs(measured, r.node) or _outputs(model, r.node)
        node_id = ids.find(model.original_name(r.node), outputs[0] if outputs else None)
        if node_id is None:
            unmatched.append(r.node)
            continue
        sqnr[node_id] = {"value": _value(r.sqnr_db)}
        sens[node_id] = {"value": _value(local.get(r.node, math.nan))}
    docs = {}
    for figure, results in (("sqnr", sqnr), ("sensitivity", sens)):
        docs[figure] = {ids.graph_id: {"name": SERIES[figure][0], "results": results, "gradient": GRADIENT}}
    return NodeData(docs, ids.graph_id, unmatched)


def _outputs(model, name: str) -> list[str]:
    try:
        return [t for t in model.node(name).output if t]
    except KeyError:
        return []


def node_data_paths(out: str | Path) -> dict[str, Path]:
    """The files :func:`write_node_data` writes for ``out``: ``NAME.sqnr.json`` and ``NAME.sensitivity.json``
    beside it (``NAME`` is ``out`` without a ``.json`` suffix)."""
    out = Path(out)
    stem = out.with_suffix("") if out.suffix.lower() == ".json" else out
    return {figure: stem.with_name(stem.name + suffix) for figure, (_, suffix) in SERIES.items()}


def write_node_data(data: NodeData, out: str | Path) -> dict[str, Path]:
    """Write each figure of ``data`` to its file (:func:`node_data_paths`), atomically; returns the paths.

    Raises
    ------
    ExportError
        One of the paths is an input of this job.
    """
    paths = node_data_paths(out)
    for path in paths.values():
        check_not_input(path)
    for figure, path in paths.items():
        atomic_write_bytes(path, (json.dumps(data.documents[figure], indent=1) + "\n").encode())
    return paths
