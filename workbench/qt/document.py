"""The open document: model, recipe, data source, calibration cache and results.

One :class:`Document` per window. Views listen to its signals; edits of the recipe and of the
:class:`Settings` (data source, sample counts, evaluation settings) go through :mod:`workbench.qt.commands` on
:attr:`Document.undo_stack`. The plan is re-resolved on every
recipe change (cheap next to calibration) so the canvas and inspector show the effective specs
and the planner's issues at once.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import os
import re
from pathlib import Path
from typing import Any, NamedTuple

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoStack

from workbench.core import api
from workbench.core.api import (
    PreparedModel,
    QuantSummary,
    QuantTensor,
    Recipe,
    ResolvedNode,
    SweepResult,
    UnitError,
    resolve_node,
)
from workbench.core.errors import WorkbenchError
from workbench.core.issues import IssueCode, PlanIssue
from workbench.qt.commands import set_exclude
from workbench.qt.planned_dtypes import planned_node_dtypes

log = logging.getLogger(__name__)


#: One node unit's error as shown in the error view.
ErrorRow = UnitError


#: The whole model's ratio in the latency fallback's island warnings ("as quantized the model measured 1.40x its float
#: latency"), read only from an issue of a project saved before issues kept their ``ratio`` field (:func:`issue_json`)
OLD_RATIO = re.compile(r"measured (\d+(?:\.\d+)?)x its float latency")


def issue_json(issue: PlanIssue) -> dict[str, Any]:
    """``issue`` as a project's saved results hold it (:meth:`Document.results_json`'s ``problems``): node,
    severity, message and code, and the structured fields: ``units`` (a list of node names), ``ratio`` (quantized /
    float latency, a finite float, or None) and ``island`` (bool); :func:`typed_issues` reads it back equal."""
    ratio = issue.ratio if issue.ratio is not None and math.isfinite(issue.ratio) else None
    return {"node": issue.node, "severity": str(issue.severity), "message": issue.message, "code": str(issue.code),
            "units": list(issue.units), "ratio": ratio, "island": issue.island}


def _saved_issue(item: dict) -> PlanIssue:
    """A saved issue (:func:`issue_json`) as a PlanIssue. Raises KeyError (a field missing) or ValueError (an
    unknown severity or code, or ``units`` / ``ratio`` / ``island`` of the wrong type).

    A project saved before issues kept their structured fields has no ``ratio`` key: a latency note's ratio is then
    read from its message (:data:`OLD_RATIO`), as the app showed it then: a reopened project's results can be shown
    again as current after an export's latency check excluded the same units, and "Show the quantized model's
    errors" prints that ratio. Its ``units`` and ``island`` stay () and False: the app reads them only from a job's
    own issues (the latency record, the islands counted after a calibration), never from saved results."""
    units, ratio, island = item.get("units", []), item.get("ratio"), item.get("island", False)
    if not (isinstance(units, list) and all(isinstance(u, str) for u in units)):
        raise ValueError("units is not a list of node names")
    if ratio is not None and (isinstance(ratio, bool) or not isinstance(ratio, (int, float))):
        raise ValueError("ratio is not a number")
    if not isinstance(island, bool):
        raise ValueError("island is not true or false")
    issue = PlanIssue(str(item.get("node") or ""), item["severity"], str(item["message"]), item["code"],
                      units=tuple(units), ratio=None if ratio is None else float(ratio), island=island)
    if "ratio" not in item and issue.code == IssueCode.LATENCY_KEPT_FLOAT:
        found = OLD_RATIO.search(issue.message)
        issue.ratio = float(found.group(1)) if found else None
    return issue


def typed_issues(items: list) -> list[PlanIssue]:
    """A job's issues (PlanIssue objects) or a saved project's (:func:`issue_json` dicts) as PlanIssue objects; a
    saved one this version cannot read (an unknown code, a field of the wrong type) is left out."""
    out = []
    for item in items:
        if isinstance(item, PlanIssue):
            out.append(item)
        elif isinstance(item, dict):
            try:
                out.append(_saved_issue(item))
            except (KeyError, ValueError):
                continue
    return out


class Settings(NamedTuple):
    """What the Calibration and Evaluate panels set, saved in the project; a change is an undoable edit
    (:class:`workbench.qt.commands.SettingsCommand`)."""

    #: the calibration data spec (as the project holds it, its path absolute), None: no data
    data: dict | None = None
    #: calibration samples, None: all
    samples: int | None = None
    #: samples of the per-unit analysis, None: the app's default
    analysis_samples: int | None = None
    #: the Evaluate panel's ``data``, ``metric`` and ``samples``, None: its defaults for the model
    evaluation: dict | None = None
    #: the Calibration panel's "Choose the recipe first": a calibration of a bare preset runs the recipe
    #: choice first, as ``workbench-cli quantize`` does by default (False: the preset as it is, ``--no-auto``)
    choose_recipe: bool = True


#: the results a project saves, as the unsaved-changes prompt names them: (document field, words)
RESULT_PARTS = (("calibration", "calibration ranges"), ("errors", "per-unit errors"),
                ("sensitivity", "sensitivity sweep"), ("autotune", "autotune curve"), ("evaluated", "evaluation"))

#: calibration caches of earlier rows a document keeps for an undo of a data change (each may hold every
#: activation's statistics: bounded; the saved rows' cache is kept besides, as the saved state)
KEPT_CACHES = 8

#: the document's fields a project saves besides the recipe and the :class:`Settings`: its ``allow_code``,
#: ``export`` section, calibration cache, and the shown results and sweep with the rows they were measured on
SAVED_STATE = ("allow_code", "export", "calibration", "qparams", "errors", "split", "outputs", "weights", "local",
               "issues",
               "result_issues", "result_recipe", "result_data", "sensitivity", "suggestion", "sensitivity_recipe",
               "sensitivity_data", "sensitivity_quantized", "autotune", "autotune_data", "evaluated",
               "evaluated_data", "latency_opened",
               "latency_record")


def _json_db(v: Any) -> Any:
    """A dB figure as a project's JSON holds it: "inf" / "-inf" for infinities, None for NaN."""
    if not isinstance(v, (int, float)) or math.isfinite(v):
        return v
    return None if math.isnan(v) else "inf" if v > 0 else "-inf"


def check_autotune_run(run: Any) -> None:
    """Check the shape of a saved autotune run: ``{"result": the autotune job's result (``curve``: entries with a
    ``point`` dict holding ``promoted`` and ``metric``, and a ``recipe`` JSON string; ``metric_float``,
    ``metric_before``, ``metric_after``, ``promoted``, ``met``), "metric": the metric's label, "target": the
    target fields, "evaluation": the eval settings}``; a cancelled run (``"cancelled": true``) holds only the
    ``curve`` and ``metric_float`` (a number or null) of its result.

    Raises
    ------
    ValueError
        Naming the first part that is missing or of the wrong type.
    """
    if not isinstance(run, dict) or not isinstance(run.get("result"), dict):
        raise ValueError("no result")
    result = run["result"]
    if not isinstance(result.get("curve"), list) or not result["curve"]:
        raise ValueError("result.curve is not a list of points")
    for i, entry in enumerate(result["curve"]):
        point = entry.get("point") if isinstance(entry, dict) else None
        if not (isinstance(point, dict) and isinstance(entry.get("recipe"), str)
                and isinstance(point.get("promoted"), int) and isinstance(point.get("metric"), (int, float))):
            raise ValueError(f"result.curve.{i} is not a point with its recipe")
    if run.get("cancelled") is True:
        if not isinstance(result.get("metric_float"), (int, float, type(None))):
            raise ValueError("result.metric_float is not a number")
    else:
        _check_finished(result)
    for key, kind in (("metric", str), ("target", dict), ("evaluation", dict)):
        if not isinstance(run.get(key), kind):
            raise ValueError(f"{key} is not a {kind.__name__}")


def _check_finished(result: dict) -> None:
    """The fields of a finished autotune result besides its curve (see :func:`check_autotune_run`)."""
    for key in ("metric_float", "metric_before", "metric_after"):
        if not isinstance(result.get(key), (int, float)):
            raise ValueError(f"result.{key} is not a number")
    if not isinstance(result.get("promoted"), list) or not isinstance(result.get("met"), bool):
        raise ValueError("result.promoted or result.met missing")


def describe_quantization(model: PreparedModel) -> tuple[QuantSummary | None, list[QuantTensor]]:
    """(summary, parameters) of an already-quantized model, (None, []) for a float one; run it in
    the job that opens the model (it reads every quantized tensor)."""
    if not model.quantized:
        return None, []
    params = api.read_quant_params(model.proto)
    return api.summarize_quantization(model.proto, params), params


def _rows_key(rows: tuple) -> str | None:
    """(data, samples) as a key of :attr:`Document._caches`, with the data file's modification time and size,
    or those of every file under a data folder (a file written again in place leaves the folder's own as they
    were): a file written again since is other rows. None for a Python reader: the files it reads are its own
    choice, so its rows cannot be told apart from rows read again later, and no cache is given back for them."""
    spec = rows[0] if isinstance(rows[0], dict) else None
    if spec is not None and (spec.get("kind") == "python" or str(spec.get("path", "")).lower().endswith(".py")):
        return None
    path = spec.get("path") if spec is not None else None
    try:
        stamp = _stamp(path)
    except (OSError, TypeError, ValueError):
        stamp = None
    return json.dumps([rows, stamp], sort_keys=True, default=str)


def _stamp(path: str) -> list:
    """``[mtime_ns, size]`` of a file; of a folder, ``[relative path, mtime_ns, size]`` of each file under it."""
    st = os.stat(path)
    if not os.path.isdir(path):
        return [st.st_mtime_ns, st.st_size]
    files = []
    for folder, dirs, names in os.walk(path):
        dirs.sort()
        for name in sorted(names):
            full = os.path.join(folder, name)
            try:
                f = os.stat(full)
            except OSError:
                continue
            files.append([os.path.relpath(full, path), f.st_mtime_ns, f.st_size])
    return files


def _same(field: str, now: Any, saved: Any) -> bool:
    """Whether a :data:`RESULT_PARTS` field holds what was saved: the same object, or for the calibration cache
    the same ranges (a job that reused them all returns them with another ``seconds``)."""
    if now is saved:
        return True
    if field == "calibration" and isinstance(now, dict) and isinstance(saved, dict):
        return {k: v for k, v in now.items() if k != "seconds"} == {k: v for k, v in saved.items() if k != "seconds"}
    return False


class Document(QObject):
    """State of one window; emits a signal for each part that changes."""

    modelChanged = Signal()
    recipeChanged = Signal()
    resultsChanged = Signal()
    dataChanged = Signal()
    sensitivityChanged = Signal()
    #: the finished autotune run changed (:attr:`autotune`: a new run, a project opened, a new model)
    autotuneChanged = Signal()
    #: the Evaluate run shown (:attr:`evaluated`) changed
    evaluatedChanged = Signal()
    #: emitted when :attr:`modified` may have changed (a recipe edit, undo, a data change, a save)
    modifiedChanged = Signal()

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.undo_stack = QUndoStack(self)
        self.undo_stack.cleanChanged.connect(self._on_clean_changed)
        #: the settings at the last save or open: a change is an unsaved edit
        self._saved_settings = Settings()
        #: new results since the last save or open (a job's calibration cache, per-unit rows, sweep or
        #: autotune curve): unsaved work, but no undoable edit (undo never "undoes" a calibration)
        self.results_unsaved = False
        #: the project opened with its model found elsewhere (Locate Model...): the path it stores changed,
        #: unsaved until the next save
        self.model_moved = False
        #: :data:`RESULT_PARTS`' fields at the last save or open (compared by identity: a job's result replaces them)
        self._saved_results: dict[str, Any] = dict.fromkeys(f for f, _w in RESULT_PARTS)
        #: True from a new model until the document is first marked saved: the window's settings
        #: changes are then the opened state, not edits to undo
        self.opening = False
        self.model: PreparedModel | None = None
        self.model_path: Path | None = None
        #: ``[[file name, sha256], ...]`` of the model's external data files as they were when it was opened
        #: (:func:`workbench.core.api.external_identity`); a saved project records them, so its replay refuses
        #: other weights saved beside the same graph file
        self.external_data: list[list[str]] = []
        self.project_path: Path | None = None
        self.recipe: Recipe = api.make_recipe("cpu-u8s8")
        self.plan: Any = None
        self.plan_error: str | None = None
        self.plan_error_node = ""  # the node the plan error is about (RecipeError.node), "" if none
        self.data: dict | None = None
        self.samples: int | None = None
        self.analysis_samples: int | None = None
        self.evaluation: dict | None = None
        #: :attr:`Settings.choose_recipe`
        self.choose_recipe = True
        #: the opened project's ``allow_code`` (kept when saved with data that runs no code)
        self.allow_code = False
        #: the opened project's ``export`` section (how its CLI replay writes the model), saved back as is
        self.export: dict | None = None
        self.calibration: dict | None = None
        #: (data, samples) key -> the calibration cache measured on those rows, kept when other rows were
        #: chosen (:meth:`set_data`): undoing that change gives it back; emptied when a model is opened
        self._caches: dict[str, dict] = {}
        #: :func:`_rows_key` of the rows at the last save or open (their cache is the saved one)
        self._saved_rows: str | None = None
        self.qparams: dict[str, dict] = {}
        self.errors: list[ErrorRow] = []
        #: weights vs activations of the shown results (NoiseSplit JSON), None when not measured
        self.split: dict | None = None
        #: each model output's end-to-end SQNR on the analysis rows of the shown results (``{"name", "sqnr_db",
        #: "samples"}``, :func:`workbench.core.jobs.job_calibrate`'s ``outputs``); empty when not measured
        self.outputs: list[dict] = []
        #: unit -> its weight's quantization error (WeightError JSON) of the shown results
        self.weights: dict[str, dict] = {}
        #: unit -> the noise it adds itself (local SQNR, dB; "inf" / None as the calibrate job writes them)
        self.local: dict[str, float | str | None] = {}
        self.result_recipe: str | None = None
        #: the model the last calibration wrote and analysed, kept in memory (not saved) so that an export of the
        #: same inputs writes its bytes (:func:`workbench.core.api.keep_written`); None when there is none
        self.written: dict | None = None
        #: (data, samples) the shown results were measured on
        self.result_data: tuple = (None, None)
        self.issues: list[str] = []
        #: the last calibrate job's issues, typed (plan, guard and writer issues; for the Problems dock)
        self.result_issues: list[PlanIssue] = []
        self.sensitivity: SweepResult | None = None
        #: how many node units the swept model quantizes (the job's ``quantized``; None: not recorded)
        self.sensitivity_quantized: int | None = None
        self.suggestion: list[str] = []
        self.sensitivity_recipe: str | None = None
        #: (data, samples) the sweep was measured on
        self.sensitivity_data: tuple = (None, None)
        #: the last finished autotune run as the Autotune panel shows it (:func:`check_autotune_run`), saved
        #: in the project's results; None when there is none
        self.autotune: dict | None = None
        #: (data, samples) the autotune run quantized with (its ranges: its points' metrics depend on them)
        self.autotune_data: tuple = (None, None)
        #: the last Evaluate run as a project saves it (:meth:`set_evaluated`; None: none) and the calibration
        #: (data, samples) it quantized with
        self.evaluated: dict | None = None
        self.evaluated_data: tuple = (None, None)
        self._op_types: dict[str, str] = {}
        #: how the open model is quantized (None for a float model): banner, dtype colours, kernels
        self.quant_summary: QuantSummary | None = None
        #: quantized tensor -> its parameters as read from the file (already-quantized models)
        self.quant_params: dict[str, QuantTensor] = {}
        #: the units the opened project's ``latency_kept`` names: kept float by the latency check in the session
        #: that saved it (no undoable edit of this session says so; :func:`~workbench.qt.quantize_anyway.latency_kept_units`)
        self.latency_opened: frozenset[str] = frozenset()
        #: node -> :class:`~workbench.core.api.LatencyKept` (ratio, the check's note) of every unit the latency
        #: check kept float this session or in the opened project's; a saved project records those still kept
        self.latency_record: dict[str, Any] = {}

    # ------------------------------------------------------------------ model
    def set_model(self, model: PreparedModel, path: Path, *, recipe: Recipe | None = None,
                  quantization: tuple | None = None, external_data: list | None = None) -> None:
        """Adopt ``model`` (read from ``path``); ``quantization`` is :func:`describe_quantization` of it and
        ``external_data`` :func:`workbench.core.api.external_identity` of it (its external data files
        hashed) when the caller computed them off the GUI thread (else they are computed here)."""
        self.model = model
        self.model_path = Path(path).resolve()
        self.external_data = external_data if external_data is not None else api.external_identity(model)
        self._op_types = {n.name: n.op_type for n in model.graph.node}
        if quantization is None:
            quantization = describe_quantization(model)
        self.quant_summary, params = quantization
        self.quant_params = {p.tensor: p for p in params}
        self.undo_stack.clear()
        self.opening = True
        self.allow_code, self.export, self.analysis_samples, self.evaluation = False, None, None, None
        self.choose_recipe = True
        self.calibration = None
        self._caches, self._saved_rows = {}, None  # nor are the model's shown before, kept or saved
        self.qparams = {}
        self.errors = []
        self.split = None
        self.outputs = []
        self.weights = {}
        self.local = {}
        self.issues = []
        self.result_issues = []
        self.result_recipe = None
        self.written = None
        self.sensitivity, self.suggestion, self.sensitivity_recipe = None, [], None
        self.sensitivity_quantized = None
        self.autotune, self.autotune_data = None, (None, None)
        self.evaluated, self.evaluated_data = None, (None, None)
        self.latency_opened, self.latency_record = frozenset(), {}
        self.recipe = recipe if recipe is not None else api.make_recipe("cpu-u8s8")
        self._replan()
        self.modelChanged.emit()
        self.recipeChanged.emit()
        self.resultsChanged.emit()
        self.sensitivityChanged.emit()
        self.autotuneChanged.emit()

    def op_type(self, node: str) -> str:
        return self._op_types.get(node, "")

    def node_names(self) -> list[str]:
        return list(self._op_types)

    # ------------------------------------------------------------------ recipe
    def set_recipe(self, recipe: Recipe) -> None:
        """Replace the recipe (called by undo commands; use commands for user edits)."""
        self.recipe = recipe
        self._replan()
        self.recipeChanged.emit()

    def _replan(self) -> None:
        self.plan, self.plan_error, self.plan_error_node = None, None, ""
        if self.model is None:
            return
        try:
            self.plan = api.plan(self.model, self.recipe, guard=True)
        except WorkbenchError as exc:
            self.plan_error = str(exc)
            self.plan_error_node = getattr(exc, "node", "")
        except Exception as exc:  # noqa: BLE001 - shown in the inspector, never thrown at the user
            log.exception("planning failed")
            self.plan_error = f"{type(exc).__name__}: {exc}"

    def resolve(self, node: str) -> ResolvedNode | str:
        """The resolved settings of ``node``, or the error text when the recipe is invalid for it."""
        try:
            return resolve_node(self.recipe, node, self.op_type(node))
        except WorkbenchError as exc:
            return str(exc)

    def resolve_as_set(self, node: str) -> ResolvedNode:
        """``node``'s settings as the recipe's layers give them, unchecked (``resolve_node(..., check=False)``):
        what the inspector shows beside the error of :meth:`resolve` while they do not fit together (it hid them)."""
        return resolve_node(self.recipe, node, self.op_type(node), check=False)

    def node_issues(self, nodes: list[str]) -> list[str]:
        """Plan issues about any node in ``nodes`` (and the plan error, if planning failed); none for
        an already-quantized model (the recipe's advice is for float models)."""
        if self.quant_summary is not None:
            return []
        out = [self.plan_error] if self.plan_error else []
        if self.plan is not None:
            wanted = set(nodes)
            for unit_name, unit in self.plan.units.items():
                if unit_name in wanted:
                    wanted.update(unit.nodes)
            out += [f"{i.severity}: {i.node}: {i.message}" for i in self.plan.issues if i.node in wanted]
        return out

    @property
    def quantized_reason(self) -> str:
        """Why calibration is disabled ("" for a float model): the model is quantized already."""
        if self.quant_summary is None or self.model_path is None:
            return ""
        return (f"{self.model_path.name} is already quantized ({self.quant_summary.text()}); "
                "open the float model to calibrate, analyse or export.")

    def node_dtypes(self) -> dict[str, str]:
        """Node -> dtype shown by the canvas's dtype colouring: for an already-quantized model the
        dtype each node computes in as the file says; otherwise as the exported file will say
        (:func:`workbench.qt.planned_dtypes.planned_node_dtypes`: a unit's activation dtype, else its
        weight's, else float; a node between quantized tensors their dtype)."""
        if self.quant_summary is not None:
            return dict(self.quant_summary.node_dtypes)
        if self.plan is None or self.model is None:
            return {}
        return planned_node_dtypes(self.model.graph, self.plan)

    def issue_badges(self) -> dict[str, str]:
        """Node -> badge: "!" for errors (and nodes whose settings are invalid), "?" for warnings; none
        for an already-quantized model."""
        if self.quant_summary is not None:
            return {}
        if self.plan is None:
            if self.plan_error is None:
                return {}
            bad = {n: "!" for n in self._op_types if isinstance(self.resolve(n), str)}
            return bad | ({self.plan_error_node: "!"} if self.plan_error_node else {})
        badges: dict[str, str] = {}
        for issue in self.plan.issues:
            if issue.node and issue.severity in ("error", "warning"):
                badges[issue.node] = "!" if issue.severity == "error" else "?"
        return badges

    def open_latency_kept(self, record: list | None) -> None:
        """Adopt an opened project's ``latency_kept`` (LatencyKept entries; None: none recorded), before its
        recipe is set: those units read as kept float by the latency check, as right after the calibration."""
        self.latency_opened = frozenset(e.node for e in record or [])
        self.latency_record = {e.node: e for e in record or []}

    def note_latency_entries(self, record: list) -> None:
        """Remember the LatencyKept entries of ``record`` (a project's, applied to this model) for a save."""
        self.latency_record.update({e.node: e for e in record})

    def note_latency_kept(self, nodes: list[str], issues: list) -> None:
        """Remember why the latency check kept ``nodes`` float (``issues``: the job's PlanIssues; its
        ``LATENCY_KEPT_FLOAT`` notes give the ratio and the reason), for the saved project's ``latency_kept``."""
        self.latency_record.update({e.node: e for e in api.latency_kept_record(nodes, typed_issues(issues))})

    # ------------------------------------------------------------------ data and results
    @property
    def rows(self) -> tuple:
        """``(data, samples)``: the calibration rows jobs run on; results, sweeps and saves are stamped
        with it."""
        return self.data, self.samples

    def set_data(self, data: dict | None, samples: int | None) -> None:
        """Adopt other calibration rows; the calibration cache is of the rows it was measured on: the one of
        the rows left is kept (:data:`KEPT_CACHES`), and rows calibrated before (an undo or redo of a data or
        sample count change, or the saved rows) get theirs back, else none (the next job calibrates again)."""
        changed = (data, samples) != self.rows
        if changed:
            left = _rows_key(self.rows)
            if self.calibration is not None and left is not None:
                self._caches.pop(left, None)
                self._caches[left] = self.calibration
                while len(self._caches) > KEPT_CACHES:
                    self._caches.pop(next(iter(self._caches)))
            self.calibration = self._cache_of(data, samples)
        self.data, self.samples = data, samples
        if changed:
            self.dataChanged.emit()
            self.modifiedChanged.emit()

    def _cache_of(self, data: dict | None, samples: int | None) -> dict | None:
        """The calibration cache measured on these rows before (kept by :meth:`set_data`, or saved), else None."""
        key = _rows_key((data, samples))
        if key is None:
            return None
        if key in self._caches:
            return self._caches[key]
        return self._saved_results["calibration"] if key == self._saved_rows else None

    @property
    def settings(self) -> Settings:
        return Settings(self.data, self.samples, self.analysis_samples, self.evaluation, self.choose_recipe)

    def set_settings(self, settings: Settings) -> None:
        """Adopt ``settings`` (opening, undo and redo; a user's change goes through a command)."""
        changed = settings != self.settings
        self.analysis_samples, self.evaluation = settings.analysis_samples, settings.evaluation
        self.choose_recipe = settings.choose_recipe
        self.set_data(settings.data, settings.samples)
        if changed:
            self.modifiedChanged.emit()

    @property
    def modified(self) -> bool:
        """Unsaved work: an edit since the last save / open (the undo stack is not at the saved
        state), other settings than saved (data, sample counts, evaluation: all are saved in the project),
        or new results since (:meth:`note_new_results`; undoing edits back to the saved state leaves them),
        or the model's new location (:meth:`note_model_moved`)."""
        if self.model is None or self.quant_summary is not None:  # a quantized file has no project to save
            return False
        return (not self.undo_stack.isClean() or self.settings != self._saved_settings or self.results_unsaved
                or self.model_moved)

    @property
    def unsaved_text(self) -> str:
        """What a close would lose, as the unsaved-changes prompt says it after the file's name: "unsaved
        edits" (recipe or settings), "unsaved results (calibration ranges, per-unit errors)" (the
        :data:`RESULT_PARTS` new since the last save or open), "unsaved edits and results (...)", "unsaved
        model location" (:meth:`note_model_moved`, last when with others); "" when nothing is :attr:`modified`."""
        if not self.modified:
            return ""
        edits = not self.undo_stack.isClean() or self.settings != self._saved_settings
        parts = [words for field, words in RESULT_PARTS if getattr(self, field) and not _same(field, getattr(self, field),
                                                                                        self._saved_results[field])]
        results = "results" + (f" ({', '.join(parts)})" if parts else "") if self.results_unsaved else ""
        moved = "model location" if self.model_moved else ""
        return "unsaved " + " and ".join(w for w in ("edits" if edits else "", results, moved) if w)

    def note_new_results(self) -> None:
        """A job brought results a project saves (calibration cache, per-unit rows, sweep, autotune curve):
        the document has unsaved work until the next save (title "*", the save prompt, the autosave)."""
        if not self.results_unsaved:
            self.results_unsaved = True
            self.modifiedChanged.emit()

    def note_model_moved(self) -> None:
        """The project was opened with its model found at another path than it stores (Locate Model...): the
        document is :attr:`modified` until the next save writes the new path."""
        if not self.model_moved:
            self.model_moved = True
            self.modifiedChanged.emit()

    def _on_clean_changed(self, _clean: bool) -> None:
        self.modifiedChanged.emit()

    def mark_saved(self) -> None:
        """The document as it is now is saved (or freshly opened): nothing is modified."""
        self._saved_settings = self.settings
        self._saved_results = {field: getattr(self, field) for field, _w in RESULT_PARTS}
        self._saved_rows = _rows_key(self.rows)
        self.results_unsaved = self.model_moved = False
        self.opening = False
        self.undo_stack.setClean()
        self.modifiedChanged.emit()

    def set_results(self, result: dict, *, data: tuple | None = None) -> None:
        """Adopt a calibrate job's result (see :func:`workbench.qt.engine.job_calibrate`)."""
        errors = [ErrorRow.from_json(r) for r in result.get("errors", [])]  # raises before any change
        self.calibration = result.get("calibration")
        self.qparams = result.get("qparams", {})
        self.errors = errors
        self.split = result.get("split")  # weights vs activations (NoiseSplit JSON) or None
        self.outputs = [dict(o) for o in result.get("outputs") or [] if isinstance(o, dict) and "name" in o]
        self.weights = {w["node"]: w for w in result.get("weights") or []}
        self.local = dict(result.get("local") or {})
        self.issues = list(result.get("issues", []))
        self.result_issues = typed_issues(result.get("problems") or [])
        self.result_recipe = result.get("recipe")
        self.result_data = data if data is not None else self.rows
        self.written = result.get("written")
        self.resultsChanged.emit()

    def saved_state(self) -> dict[str, Any]:
        """The :data:`SAVED_STATE` fields as they are now (containers copied): what :meth:`set_saved_state`
        puts back, for the undo of an edit that replaces them (a restored autosave)."""
        return {name: copy.copy(getattr(self, name)) for name in SAVED_STATE}

    def set_saved_state(self, state: dict[str, Any]) -> None:
        """Put back fields taken by :meth:`saved_state` (emits resultsChanged, sensitivityChanged and
        autotuneChanged)."""
        for name, value in state.items():
            setattr(self, name, copy.copy(value))
        self.resultsChanged.emit()
        self.sensitivityChanged.emit()
        self.autotuneChanged.emit()
        self.evaluatedChanged.emit()

    def clear_results(self) -> None:
        """Forget the shown per-unit results, sweep and autotune run (the calibration cache stays)."""
        self.qparams, self.errors, self.split, self.weights, self.local = {}, [], None, {}, {}
        self.outputs = []
        self.issues, self.result_issues, self.result_recipe, self.result_data = [], [], None, (None, None)
        self.written = None
        self.sensitivity, self.suggestion, self.sensitivity_recipe = None, [], None
        self.sensitivity_quantized = None
        self.sensitivity_data = (None, None)
        self.autotune, self.autotune_data = None, (None, None)
        self.evaluated, self.evaluated_data = None, (None, None)
        self.resultsChanged.emit()
        self.sensitivityChanged.emit()
        self.autotuneChanged.emit()
        self.evaluatedChanged.emit()

    def restore_results(self, results: dict | None, calibration: dict | None) -> list[str]:
        """Show a project's ``results`` section (per-unit results and, under ``"sensitivity"``, the sweep)
        and its calibration cache, after the data and sample count are set (the sections say whether they
        were measured on them). A damaged part is skipped; returns one note per skipped part."""
        self.clear_results()
        self.calibration = calibration
        results = dict(results or {})
        sweep = results.pop("sensitivity", None)
        run = results.pop("autotune", None)
        evaluated = results.pop("evaluation", None)
        notes = []
        if results:
            try:
                self.set_results({**results, "calibration": calibration}, data=self.saved_rows(results))
            except Exception as exc:  # noqa: BLE001 - a damaged section must not stop the rest
                log.warning("Saved results not restored: %s", exc)
                self.clear_results()
                notes.append(f"The saved per-unit results are unreadable ({type(exc).__name__}); calibrate again (F5).")
        if sweep:
            try:
                self.set_sensitivity({k: v for k, v in sweep.items() if k != "calibration"},
                                     data=self.saved_rows(sweep))
            except Exception as exc:  # noqa: BLE001 - a damaged section must not stop the rest
                log.warning("Saved sensitivity sweep not restored: %s", exc)
                self.sensitivity, self.suggestion = None, []
                notes.append(f"The saved sensitivity sweep is unreadable ({type(exc).__name__}); run the sweep "
                             "again (F7).")
        if run:
            note = self.restore_autotune(run)
            notes += [note] if note else []
        if evaluated:
            note = self.restore_evaluated(evaluated)
            notes += [note] if note else []
        return notes

    def set_autotune(self, run: dict | None, *, data: tuple | None = None) -> None:
        """Adopt a finished autotune run (as :func:`check_autotune_run` takes it; None: none) measured on the
        calibration rows ``data`` (default: the current ones). Raises ValueError (nothing changed) when ``run`` is
        malformed."""
        if run is not None:
            check_autotune_run(run)
        self.autotune = copy.deepcopy(run)
        self.autotune_data = data if data is not None else self.rows
        self.autotuneChanged.emit()

    @property
    def autotune_current(self) -> bool:
        """True when the autotune run quantized with the current calibration rows (no run: True)."""
        return self.autotune is None or self.autotune_data == self.rows

    def autotune_json(self) -> dict | None:
        """The autotune run as a project saves it: marked ``on_current_data: false`` when measured on other rows."""
        if self.autotune is None:
            return None
        return self.autotune if self.autotune_current else {**self.autotune, "on_current_data": False}

    def restore_autotune(self, run) -> str | None:
        """Show an autotune run read from a project; a damaged one is skipped: returns the note saying so."""
        try:
            if isinstance(run, dict) and "on_current_data" in run:
                run, data = {k: v for k, v in run.items() if k != "on_current_data"}, self.saved_rows(run)
            else:
                data = None
            self.set_autotune(run, data=data)
        except ValueError as exc:
            log.warning("Saved autotune curve not restored: %s", exc)
            return "The saved autotune curve is unreadable; run Autotune again (Shift+F9)."
        return None

    def set_evaluated(self, result: dict | None, *, data: tuple | None = None) -> None:
        """Adopt an Evaluate run (None: none): the job's result with its report as JSON (``report``, ``metric``,
        ``eval_data``, ``recipe``), measured with the calibration rows ``data`` (default: the current ones).
        Raises KeyError, TypeError or ValueError (nothing changed) when it is malformed."""
        if result is not None:
            api.EvalReport.from_json(result["report"])
            if not isinstance(result["eval_data"], str):
                raise TypeError("eval_data is not a path")
        self.evaluated = copy.deepcopy(result)
        self.evaluated_data = data if data is not None else self.rows
        self.evaluatedChanged.emit()

    def evaluated_json(self) -> dict | None:
        """The Evaluate run as a project saves it: marked ``on_current_data: false`` when measured on other rows."""
        if self.evaluated is None or self.evaluated_data == self.rows:
            return self.evaluated
        return {**self.evaluated, "on_current_data": False}

    def restore_evaluated(self, section) -> str | None:
        """Show an Evaluate run read from a project; a damaged one is skipped: returns the note saying so."""
        try:
            data = self.saved_rows(section)
            self.set_evaluated({k: v for k, v in section.items() if k != "on_current_data"}, data=data)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            log.warning("Saved evaluation not restored: %s", exc)
            return "The saved evaluation is unreadable; evaluate again (F9)."
        return None

    def set_sensitivity(self, result: dict, *, data: tuple | None = None) -> None:
        """Adopt a sensitivity job's result (see :func:`workbench.qt.engine.job_sensitivity`)."""
        self.sensitivity = SweepResult.from_json(result["sweep"])
        quantized = result.get("quantized")
        self.sensitivity_quantized = quantized if isinstance(quantized, int) and not isinstance(quantized, bool) \
            else None
        self.suggestion = list(result.get("suggestion", []))
        self.sensitivity_recipe = result.get("recipe")
        self.sensitivity_data = data if data is not None else self.rows
        if result.get("calibration") is not None:
            self.calibration = result["calibration"]
        self.sensitivityChanged.emit()

    @property
    def sensitivity_current(self) -> bool:
        """True when the shown sweep was measured on the current data and sample count with the
        current recipe, or with it before its own suggestion was applied (no sweep: True)."""
        if self.sensitivity is None or self.sensitivity_recipe is None:
            return True
        if self.sensitivity_data != self.rows:
            return False
        swept = Recipe.from_json(self.sensitivity_recipe)
        applied = set_exclude(swept, self.suggestion, True) if self.suggestion else swept
        return self.recipe.to_json() in (swept.to_json(), applied.to_json())

    @property
    def results_current(self) -> bool:
        """True when the shown errors were computed with the current recipe, data and sample count."""
        return (self.result_recipe is not None and self.result_recipe == self.recipe.to_json()
                and self.result_data == self.rows)

    def results_json(self) -> dict | None:
        """The shown results as a project's ``results`` section holds them (:meth:`restore_results` takes them back):
        per-unit errors, qparams, issue lines and typed issues (:func:`issue_json`), the recipe they were measured
        with, outputs, weights, local SQNR; None when nothing was measured. A calibration that quantized nothing (the
        latency check kept every unit float) has no row but its issues and recipe: saved too, so the reopened
        project says why nothing is quantized."""
        if self.result_recipe is None and not self.errors and not self.qparams:
            return None
        return {"errors": [r.to_json() for r in self.errors], "qparams": self.qparams,
                "issues": self.issues, "recipe": self.result_recipe, "split": self.split,
                # typed, for the Problems dock of the reopened project (the issue lines above are only text)
                "problems": [issue_json(i) for i in self.result_issues],
                "outputs": [{**o, "sqnr_db": _json_db(o.get("sqnr_db")),
                             **({"worst_row_sqnr_db": _json_db(o["worst_row_sqnr_db"])} if "worst_row_sqnr_db" in o else {})}
                            for o in self.outputs],
                "weights": list(self.weights.values()), "local": self.local,
                "on_current_data": self.result_data == self.rows}

    def sensitivity_json(self) -> dict | None:
        """The sweep as :meth:`set_sensitivity` takes it back (saved in the project's results)."""
        if self.sensitivity is None:
            return None
        return {"sweep": self.sensitivity.to_json(), "suggestion": list(self.suggestion),
                "recipe": self.sensitivity_recipe,
                "on_current_data": self.sensitivity_data == self.rows} | (
            {"quantized": self.sensitivity_quantized} if self.sensitivity_quantized is not None else {})

    def saved_rows(self, section: dict) -> tuple:
        """The (data, samples) stamp of a results / sweep section read from a project: the current ones,
        or a stamp that matches no data when the section says it was measured on other rows."""
        return self.rows if section.get("on_current_data", True) else ("other rows", None)

    def payload(self, **extra: Any) -> dict:
        """JSON-safe payload for an engine job on this document."""
        return {"model_path": str(self.model_path), "recipe": self.recipe.to_json(),
                "data": self.data, "samples": self.samples, "calibration": self.calibration, **extra}

