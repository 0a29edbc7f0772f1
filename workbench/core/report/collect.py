"""Gather everything the report shows from one quantize result: one analysis pass, the local
sensitivity derived from it, histograms of the worst units, a short evaluation and the graph layout."""

from __future__ import annotations

import datetime as _dt
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnxruntime as ort

from workbench import __version__
from workbench.core.analysis.evaluate import EvalReport, RaggedRowsError, check_metric_data, evaluate
from workbench.core.analysis.noise_split import SPLIT_SAMPLES, NoiseSplit, noise_split
from workbench.core.analysis.sensitivity import Sensitivity, SweepResult, local_sensitivity
from workbench.core.data.loader import ANALYSIS_BATCH, open_data_source
from workbench.core.errors import DataError, RecipeError
from workbench.core.graph.layout import GraphStructure, graph_structure
from workbench.core.pipeline.analyze import analyze
from workbench.core.pipeline.quantize import QuantizeResult
from workbench.core.progress import CancelToken, ProgressFn, no_progress
from workbench.core.recipe.recipe import Recipe
from workbench.core.report.curve_file import read_curve
from workbench.core.report.histograms import TensorHistogram, unit_histograms
from workbench.core.report.layout import node_positions
from workbench.core.report.sweep_match import job_field_error

#: How the runs behind the figures were made (every figure caption repeats it).
ANALYSIS_RUNTIME = "onnxruntime {v}, CPUExecutionProvider; float model ORT_ENABLE_ALL, quantized model ORT_DISABLE_ALL (QDQ as written)"
EVAL_RUNTIME = "onnxruntime {v}, CPUExecutionProvider, ORT_ENABLE_ALL on both models"


@dataclass
class ReportData:
    """The figures of one report (see :func:`collect_report`); ``rows`` worst SQNR first."""

    model_path: str
    result: QuantizeResult
    rows: list
    sensitivity: list[Sensitivity]
    histograms: list[TensorHistogram]
    evaluation: EvalReport | None
    curve: dict | None
    structure: GraphStructure
    positions: dict[str, tuple[float, float]]
    calib_samples: int | None
    analysis_samples: int
    eval_source: str
    sweep: SweepResult | None = None
    choice: str = ""
    split: NoiseSplit | None = None  # weights vs activations (static recipes)
    created: str = field(default_factory=lambda: _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"))
    version: str = __version__
    ort_version: str = ort.__version__

    @property
    def analysis_runtime(self) -> str:
        return ANALYSIS_RUNTIME.format(v=self.ort_version)

    @property
    def eval_runtime(self) -> str:
        return EVAL_RUNTIME.format(v=self.ort_version)


def default_metric(model, data) -> str:
    """``top1`` when the eval data has ``gt_label`` and the model's first output a class axis (rank 2 or
    more, or unknown), else ``cosine`` (quantized vs float first output). Labels top1 cannot score are
    refused later by :func:`~workbench.core.analysis.evaluate.check_metric_data` (report), or leave
    ``evaluate`` with its per-output table (its CLI)."""
    outputs = model.proto.graph.output
    t = outputs[0].type.tensor_type if outputs else None
    no_class_axis = t is not None and t.HasField("shape") and len(t.shape.dim) < 2
    return "top1" if "gt_label" in open_data_source(data, model).labels() and not no_class_axis else "cosine"


def load_curve(path: str | Path) -> dict:
    """An autotune curve written by ``workbench-cli autotune --curve-json`` ({metric, metric_float, curve}),
    every field the report reads checked (:func:`workbench.core.report.curve_file.read_curve`).

    Raises
    ------
    DataError
        The file is missing, not JSON, or a field is missing or holds a wrong value (one line naming
        the file and the field).
    """
    return read_curve(path)


def load_sweep(doc: Any, source: str) -> SweepResult:
    """A sensitivity sweep as ``workbench-cli sweep --json`` writes it ({rows, all_quant_db, samples, tasks}).

    Raises
    ------
    DataError
        ``doc`` is not such a table (``source`` names where it came from).
    """
    rows = doc.get("rows") if isinstance(doc, dict) else None
    try:
        if not isinstance(rows, list):
            raise TypeError("no rows list")
        sweep = SweepResult.from_json(doc)
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(f"{source}: field rows: not a sensitivity sweep ({exc}).",
                        hint="Give the file `workbench-cli sweep --json FILE` wrote.") from None
    job_error = job_field_error(doc["job"]) if "job" in doc else None
    if job_error:
        raise DataError(f"{source}: {job_error}; the sweep's job cannot be read.",
                        hint="Run `workbench-cli sweep --json FILE` again with the report's model, data and "
                             "recipe options.")
    # compared with the report's once it is known: refused now if unreadable
    recipes = [("field recipe", sweep.recipe)] if sweep.recipe is not None else []
    if sweep.job is not None:
        recipes.append(("field job.recipe", sweep.job.get("recipe")))
    for field_name, text in recipes:
        try:
            if not isinstance(text, str):
                raise RecipeError(f"{field_name}: not a recipe's JSON text.")
            Recipe.from_json(text, source=field_name)
        except RecipeError as exc:
            raise DataError(f"{source}: {exc.message.rstrip('.')}; the sweep's recipe cannot be read.",
                            hint="Run `workbench-cli sweep --json FILE` again with the report's model, data and "
                                 "recipe options.") from None
    return sweep


def read_sweep(path: str | Path) -> SweepResult:
    """:func:`load_sweep` of a JSON file (DataError naming the file when it is missing or not JSON)."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise DataError(f"{path}: cannot read the sweep ({exc.strerror}).", hint="Check the path.") from None
    except ValueError as exc:
        raise DataError(f"{path}: not JSON ({exc}).", hint="Give the file sweep --json wrote.") from None
    return load_sweep(doc, str(path))


def _count(model, data, limit: int | None) -> int:
    n = open_data_source(data, model).num_samples()
    if n is None:
        return limit or 0
    return min(n, limit) if limit else n


def collect_report(model, result: QuantizeResult, eval_data: Any, *, eval_samples: int | None = 32,
                   metric: Any = None, curve: dict | None = None, sweep: SweepResult | None = None,
                   worst: int = 4, hist_samples: int = 8, progress: ProgressFn | None = None, cancel: CancelToken | None = None,
                   choice: str = "", split_samples: int | None = SPLIT_SAMPLES) -> ReportData:
    """Measure ``result`` against ``model`` on ``eval_data`` for the report.

    Parameters
    ----------
    model : PreparedModel
        The float model ``result`` was quantized from.
    eval_data : path, spec dict or DataSource
        Held-out data: per-unit SQNR, the histograms and the task metric are measured on it.
    eval_samples : int, optional
        Samples of the analysis pass and of the evaluation (None: all).
    metric : str or callable, optional
        Task metric (a name of :data:`workbench.core.analysis.metrics.METRICS` or ``metric(outputs,
        batch)``); default :func:`default_metric`.
    curve : dict, optional
        An autotune curve (:func:`load_curve`).
    sweep : SweepResult, optional
        An end-to-end sensitivity sweep of the same recipe (:func:`read_sweep`), shown beside the
        local sensitivity.
    worst : int
        Units whose histograms are drawn (lowest SQNR first).
    hist_samples : int
        Samples of those histograms, at most ``eval_samples``.
    choice : str
        What the recipe choice did (:meth:`~workbench.core.tuning.recipe_choice.ChoiceReport.summary`), shown
        with the recipe; "" when there was none.
    split_samples : int, optional
        At most this many of the ``eval_samples`` measure the weights vs activations split (static
        recipes; None: all of them, 0: no split).

    Raises
    ------
    DataError, ModelError
        Data that does not fit the model, a model onnxruntime refuses; labels the metric cannot score
        (:func:`workbench.core.analysis.evaluate.check_metric_data`), before any analysis.
    Cancelled
        ``cancel`` was set.
    """
    progress = progress or no_progress
    chosen = metric if metric is not None else default_metric(model, eval_data)
    check_metric_data(chosen, model, eval_data)  # bad labels refused before the analysis, not after it
    rows = analyze(model, result, eval_data, samples=eval_samples, progress=_phase(progress, "Per-unit SQNR"),
                   cancel=cancel)
    finite = [r for r in rows if math.isfinite(r.sqnr_db)] or rows
    written = {t: qp for t, qp in result.qparams.items() if result.tensor_map.get(t, t) != t}  # has a Q/DQ pair
    if eval_samples:
        hist_samples = min(hist_samples, eval_samples)
    hists = unit_histograms(result.float_model or model, finite[:worst], written, eval_data,
                            samples=hist_samples, progress=_phase(progress, "Histograms"), cancel=cancel)
    try:
        evaluation = evaluate(model, result.proto, eval_data, samples=eval_samples, metric=chosen,
                              progress=_phase(progress, "Task metric"), cancel=cancel)
    except RaggedRowsError as exc:
        if metric is not None:
            raise  # the user's metric
        evaluation = evaluate(model, result.proto, eval_data, samples=eval_samples,
                              progress=_phase(progress, "Model outputs"), cancel=cancel)
        evaluation.notes.append(f"default metric {chosen} not computed: {exc.message}")
    split = None
    if str(result.plan.mode) == "static" and rows and split_samples != 0:
        split = noise_split(result.float_model or model, result.proto, eval_data, samples=eval_samples,
                            max_samples=split_samples, cancel=cancel,
                            progress=_phase(progress, "Weights vs activations"))
    progress(0, 0, "Laying out the graph")
    structure = graph_structure(model.proto)
    positions = node_positions(structure)
    calib = result.calibration
    return ReportData(str(model.path or ""), result, rows, local_sensitivity(result.plan, rows, graph=(result.float_model or model).proto.graph), hists, evaluation,
                      curve, structure, positions, getattr(calib, "samples_seen", None),
                      _count(model, eval_data, eval_samples), open_data_source(eval_data, model).describe(), sweep,
                      choice, split)


def _phase(progress: ProgressFn, name: str) -> ProgressFn:
    def fn(done: int, total: int, message: str) -> None:
        progress(done, total, f"{name}: {message}" if message else name)
    return fn


__all__ = ["ANALYSIS_BATCH", "ReportData", "collect_report", "default_metric", "load_curve", "load_sweep",
           "read_sweep"]
