"""The app's background jobs, Qt-free: ``fn(payload: dict, progress, cancel) -> dict``.

Each job takes a JSON-safe payload (model path, recipe JSON, data spec, cached calibration) and
returns a picklable dict; :mod:`workbench.qt.engine` runs them in a child process and
:mod:`workbench.qt.workers` carries progress, cancel and the result over pipes. The jobs use the
core only through its facade (:mod:`workbench.core.api`), so they run just as well headless.

A job that has results before it ends (the autotune curve) sends each one with
``progress.partial(data)`` when the runner gives ``progress`` that attribute (:func:`partial_sender`);
headless callers without it simply get everything in the final result.
"""

from __future__ import annotations

import time
from dataclasses import asdict, replace
from pathlib import Path

from workbench.core import api
from workbench.core.api import (
    CalibrationResult,
    InlineExecutor,
    Recipe,
    sensitivity_sweep,
)
from workbench.core.errors import DataError, ExportError, ModelError, WorkbenchError
from workbench.core.issues import IssueCode, PlanIssue
from workbench.core.progress import PIPELINE_PHASES, CancelToken, in_phase, one_step


# ----------------------------------------------------------------------------- helpers
def _recipe(payload: dict):
    return Recipe.model_validate_json(payload["recipe"])


def _calibration(payload: dict):
    if not payload.get("calibration"):
        return None

    return CalibrationResult.from_json(payload["calibration"])


def _open(payload: dict, progress):
    """The payload's model, opened and prepared as one reported step (phase "Opening")."""
    done = one_step(progress, f"Opening: {Path(payload['model_path']).name}")
    model = api.open_model(payload["model_path"])
    done()
    return model


def _quantize_with_cache(model, recipe, payload, progress, cancel, *, latency_check: bool = False):
    """Calibrate (reusing the payload's cache when ``reuse``) and write the model in memory; with
    ``latency_check`` and data, as ``workbench-cli quantize`` writes it (units measured slower
    quantized kept float, the latency fallback). Returns ``(result, cache)``: the cache is the
    calibration used plus the reused cache's observers it did not need (:func:`_with_cache`)."""
    previous = _calibration(payload) if payload.get("reuse", True) else None
    if latency_check and payload.get("data"):  # the CLI's steps (calibrating only what the cache lacks)
        done = one_step(progress, "Quantizing: calibrating, writing and measuring the latency")
        result = api.quantize(model, recipe, data=payload["data"], samples=payload.get("samples"),
                              calibration=previous, latency_check=True, progress=in_phase(progress, "Quantizing"),
                              cancel=cancel)
        done()
        return result, _with_cache(result.calibration, previous)
    done = one_step(progress, "Planning: resolving the recipe")
    facts = api.GraphFacts(model.proto)  # one graph analysis for this plan and quantize()'s own
    the_plan = api.plan(model, recipe, guard=True, facts=facts)  # what quantize() below calibrates
    done()
    calib = previous
    if the_plan.mode == "static" and the_plan.activations and (previous is None or payload.get("data")):
        # reuses every cached observer whose statistics serve the current spec (copied with it; the
        # model is not run when all do) and calibrates the rest: a cache made under an earlier
        # recipe (an undone int16 or symmetric edit) never lends its old spec to the written model
        calib = api.calibrate(model, the_plan, payload["data"], samples=payload.get("samples"),
                              progress=in_phase(progress, "Calibrating"), cancel=cancel, previous=previous)
    cancel.check()
    done = one_step(progress, "Quantizing: planning and writing the quantized model")
    # the data too: a recipe with bias_correction reads it (its Conv input means); the ranges are all cached
    result = api.quantize(model, recipe, data=payload.get("data"), samples=payload.get("samples"), calibration=calib,
                          progress=in_phase(progress, "Quantizing"), cancel=cancel, facts=facts)
    done()
    # the cached ranges this plan did not need stay (those only the export's latency-placed plan fetches)
    return result, _with_cache(calib, previous)


def _with_cache(new, previous):
    """``new`` (the calibration a job used) plus the observers of ``previous`` it did not need (the
    latency check's plan leaves some tensors out), so the next job finds the whole cache."""
    if new is None or previous is None:
        return new or previous
    return replace(new, observers={**previous.observers, **new.observers})


def partial_sender(progress):
    """``progress.partial`` (send one intermediate result to the front end), or a no-op without it."""
    return getattr(progress, "partial", None) or (lambda _data: None)


def _metric(payload: dict):
    """The payload's metric: None, a built-in name, or a loaded ``.py`` file (needs ``allow_code``)."""
    metric = payload.get("metric") or None
    if metric is not None and metric.endswith(".py"):
        return api.load_metric(metric, allow_code=bool(payload.get("allow_code")))
    if metric is not None:
        api.load_metric(metric)  # an unknown name fails here, before any calibration
    return metric


def _qparams_json(result) -> dict[str, dict]:
    return {t: qp.to_json() for t, qp in result.qparams.items()}


# ----------------------------------------------------------------------------- jobs
def job_calibrate(payload: dict, progress, cancel: CancelToken) -> dict:
    """Calibrate, quantize in memory and analyse every node unit.

    A calibration from the start (``reuse`` false) or after a recipe choice quantizes the model as
    ``workbench-cli quantize`` writes it, latency check included (:func:`_calibrate_as_the_cli`), and analyses
    that model; an analysis with the cached ranges (``reuse``) writes the recipe as it is, without it.

    Payload: ``model_path``, ``recipe`` (JSON), ``data`` (spec), ``samples``, ``calibration``
    (cache JSON or None), ``reuse`` (False recalibrates every tensor), ``analysis_samples``.
    With ``choose`` true, data, and a recipe the recipe choice applies to (a static preset, alone or
    with node overrides, which it keeps: :func:`workbench.core.api.why_not_choose`), the choice runs first (:func:`choose_first`, as
    ``workbench-cli quantize`` does by default): the chosen recipe is the one calibrated, on the choice's
    own ranges over every row (no second calibration pass).
    Result: ``calibration`` (JSON), ``errors`` (UnitError.to_json rows, worst first),
    ``qparams`` (tensor -> QParams JSON), ``issues`` (strings, as projects store them), ``problems``
    (the same issues as PlanIssue objects), ``recipe`` (the JSON analysed: the chosen one after a choice; after
    a calibration from the start or a choice, with the units the latency check kept float), ``latency_kept``
    (those units, sorted; [] without), ``written`` (that model kept for an export of the same inputs,
    :func:`workbench.core.api.keep_written`, with the latency check's result and notes, which ``issues`` leaves
    out; None after an analysis with the
    cached ranges, which runs no latency check, or for a model kept apart from its weights),
    ``choice`` (:func:`choice_json` of the choice, None when none ran), ``split`` (weights vs
    activations, :meth:`workbench.core.analysis.noise_split.NoiseSplit.to_json`, on the same rows;
    None for a recipe without activation pairs), ``outputs`` (:func:`_output_sqnr`: each model output's
    SQNR over every calibration row and its worst row, as ``workbench-cli analyze`` / ``evaluate`` measure it), ``weights`` (each unit's weight error,
    :meth:`workbench.core.analysis.weight_error.WeightError.to_json`), ``local`` (:func:`_local_json`).
    """
    model = _open(payload, progress)
    recipe = _recipe(payload)
    choice = choose_first(model, recipe, payload, progress, cancel)
    recipe, payload = _after_choice(choice, recipe, payload)
    as_cli = False
    if not payload.get("reuse", True) or (choice is not None and choice.skipped is None):
        result, calib, as_cli = _calibrate_as_the_cli(model, recipe, payload, progress, cancel)
    else:
        result, calib = _quantize_with_cache(model, recipe, payload, progress, cancel)
    rows = api.analyze(model, result, payload["data"], samples=payload.get("analysis_samples"),
                       progress=in_phase(progress, "Analysing"), cancel=cancel)
    outputs = _output_sqnr(model, result, payload, progress, cancel) if rows else []
    split = None
    if rows and result.plan.mode == "static":  # a StrEnum
        split = api.noise_split(result.float_model or model, result.proto, payload["data"],
                                samples=payload.get("analysis_samples"), cancel=cancel,
                                progress=in_phase(progress, "Weights vs activations"))
    cast = _cast_issues(model, payload, result.issues)
    # the latency check's measurement notes stay with the kept model (an export reports them); the units it
    # kept float are listed with the plan's issues, as the recipe's exclusions they explain
    shown = [i for i in result.issues if getattr(i, "code", None) not in _MEASUREMENT_NOTES]
    issues = shown + _calibration_issues(calib) + cast
    analysed = result.recipe.to_json() if as_cli else payload["recipe"]  # with the latency check's exclusions
    written = api.keep_written(model, result, api.written_inputs(model.sha256, analysed, payload.get("data"),
                                                                 payload.get("samples")),
                               list(result.issues) + cast) if as_cli else None
    return {"calibration": calib.to_json() if calib is not None else None,
            "errors": [asdict(r) for r in rows],  # pickled: +inf (bit-exact unit) stays +inf
            "split": split.to_json() if split is not None else None,
            "outputs": outputs,
            "weights": _weights_json(result, model) if rows else [],
            "local": _local_json(result, model, rows),
            "qparams": _qparams_json(result),
            "issues": [_issue_text(i) for i in issues],
            "problems": _typed(issues),
            "recipe": analysed, "choice": choice_json(choice) if choice is not None else None,
            "latency_kept": _kept_float(recipe, result.recipe) if as_cli else [], "written": written}


def _weights_json(result, model) -> list[dict]:
    """Each unit's weight error (:meth:`workbench.core.analysis.weight_error.WeightError.to_json`) with ``qparams``,
    the grid its weight was written with (QParams JSON, :func:`workbench.core.api.written_weight_qparams`; None
    where it cannot be read back), which the app's weight histogram draws."""
    fp = (result.float_model or model).proto
    grids = api.written_weight_qparams(result.plan, fp, result.proto)
    return [{**e.to_json(), "qparams": grids[e.node].to_json() if e.node in grids else None}
            for e in api.weight_errors(result.plan, fp, result.proto)]


def _output_sqnr(model, result, payload: dict, progress, cancel: CancelToken) -> list[dict]:
    """Each model output's end-to-end SQNR over every calibration row (the payload's ``samples``; None: all), not
    just the analysis rows: a few rows can hold most of the error (ppocr_mobile_v2_cls, cpu-u8s8 with the recipe
    choice's MSE ranges: 63.2 dB on the first 32 rows, 41.0 dB on all 64, row 32 alone 19.9 dB), and only the
    fused quantized model and the float model run
    (:func:`workbench.core.api.analyze_end_to_end`: onnxruntime's fused kernels, as ``evaluate`` and the CLI's
    ``analyze`` measure a written file). A list of ``{"name", "sqnr_db" (float, dB; +inf when equal), "samples"
    (rows measured), "worst_row_sqnr_db" (the lowest per-row SQNR, dB, or None), "worst_row" (its index in the
    data, or None), "analysis_samples" (the rows the per-node figures were measured on)}``, in the model's
    output order."""
    phase, totals = in_phase(progress, "Output error"), set()

    def report(done: int, total: int, message: str) -> None:  # each count starts at 0, as the other phases do
        if total not in totals:
            totals.add(total)
            if done:
                phase(0, total, message)
        phase(done, total, message)

    e2e = api.analyze_end_to_end(model, result, payload["data"], samples=payload.get("samples"),
                                 progress=report, cancel=cancel)
    analysed = _rows_among_first(e2e, payload.get("analysis_samples"))
    return [{"name": o.name, "sqnr_db": float(o.sqnr_db), "samples": e2e.samples,
             "worst_row_sqnr_db": o.worst_row_sqnr_db, "worst_row": o.worst_row, "analysis_samples": analysed}
            for o in e2e.outputs]


def _rows_among_first(e2e, first: int | None) -> int:
    """How many of the rows ``e2e`` measured lie among the data's first ``first`` rows (None: all of them): the
    rows the per-node analysis measures with ``samples=first`` (both leave out rows with NaN / Inf inputs)."""
    if not first:
        return e2e.samples
    read = e2e.samples + len(e2e.left_out)  # rows read from the data's start, consecutive
    return min(first, read) - sum(1 for i in e2e.left_out if i < first)


def _local_json(result, model, rows) -> dict:
    """Unit -> the noise it adds itself (local SQNR, dB; :func:`workbench.core.api.local_sensitivity` on the
    measured graph: its quantized nodes run on float inputs, or derived through probed residual Adds where they
    cannot run alone), JSON-safe: "inf" when that noise is none (derived: its output is no noisier than its
    input), None when an input's noise was not measured."""
    graph = (result.float_model or model).proto.graph
    out = {}
    for s in api.local_sensitivity(result.plan, rows, graph=graph):
        v = s.local_sqnr_db
        out[s.node] = None if v != v else ("inf" if v == float("inf") else "-inf" if v == float("-inf") else v)
    return out


def _calibrate_as_the_cli(model, recipe, payload: dict, progress, cancel: CancelToken):
    """The model as ``workbench-cli quantize`` writes it (its latency check included), calibrated afresh (from
    the payload's ``calibration`` when ``reuse``, else from nothing): ``(result, cache, as_cli)`` as
    :func:`_quantize_with_cache` returns the first two; ``as_cli`` is True when ``result`` is the CLI's quantize.

    With data and a static plan, ``result`` is the CLI's quantize itself: its latency placement keeps some
    units float before calibrating (so its pass fetches fewer tensors, and onnxruntime fuses that
    instrumented model otherwise: digits_transformer, cpu-u8s8, a range calibrated beside every tensor was an
    ulp off), the latency check measures the written model and the fallback keeps float what did not pay;
    ``result.recipe`` holds those exclusions. That model is the one analysed, and the one an export of the
    same inputs writes (:func:`workbench.core.api.keep_written`). Then only the tensors that plan left out
    are calibrated (phase "Calibrating the rest"), so the cache also serves the recipe without the
    exclusions. Phases: Planning, Latency placement, Calibrating, Placement guard, Latency check, Latency
    fallback (the CLI quantize's latency passes, each named as it runs:
    :data:`~workbench.core.progress.PIPELINE_PHASES`), Calibrating the rest; without data or activations to
    calibrate: Planning, Quantizing (the recipe written as it is, no latency check)."""
    previous = _calibration(payload) if payload.get("reuse", True) else None
    done = one_step(progress, "Planning: resolving the recipe")
    facts = api.GraphFacts(model.proto)
    the_plan = api.plan(model, recipe, guard=True, facts=facts)
    done()
    if the_plan.mode == "static" and the_plan.activations and payload.get("data"):
        cli = api.quantize(model, recipe, data=payload["data"], samples=payload.get("samples"), calibration=previous,
                           latency_check=True, check=False, cancel=cancel,
                           progress=in_phase(progress, "Calibrating", keep=PIPELINE_PHASES))
        seed = _with_cache(cli.calibration, previous)
        calib = _with_cache(api.calibrate(model, the_plan, payload["data"], samples=payload.get("samples"),
                                          progress=in_phase(progress, "Calibrating the rest"), cancel=cancel,
                                          previous=seed), seed)
        return cli, calib, True
    cancel.check()
    done = one_step(progress, "Quantizing: planning and writing the quantized model")
    result = api.quantize(model, recipe, calibration=previous, progress=in_phase(progress, "Quantizing"),
                          cancel=cancel, facts=facts)
    done()
    return result, previous, False


#: the latency check's own notes (its ratio, not measured, slower than float): reported by an export, not
#: listed with a calibration's issues
_MEASUREMENT_NOTES = (IssueCode.LATENCY, IssueCode.LATENCY_NOT_MEASURED, IssueCode.SLOWER_THAN_FLOAT)


def _kept_float(ran, written) -> list[str]:
    """The nodes ``written`` (the recipe as the latency check wrote it) keeps float that ``ran`` (the recipe
    the job ran) did not: the latency placement's and the latency fallback's, sorted."""
    return sorted(n for n, o in written.overrides.items()
                  if o.exclude and not (n in ran.overrides and ran.overrides[n].exclude))


#: the phase of the recipe choice's progress messages (those that do not name it already)
CHOICE_PHASE = "Choosing the recipe"


def choose_first(model, recipe, payload: dict, progress, cancel: CancelToken):
    """The recipe choice before a calibration (:func:`workbench.core.api.choose_recipe`), as
    ``workbench-cli quantize`` runs it by default: only with the payload's ``choose`` true, data, and a
    recipe it applies to (a static preset, alone or with node overrides: :func:`workbench.core.api.why_not_choose`
    is None);
    else None. Progress messages say "Choosing the recipe: ..." (its calibration pass too).

    Returns
    -------
    ChoiceReport or None
        Its ``skipped`` says why no choice was made (e.g. fewer than 6 calibration rows).

    Raises
    ------
    DataError, CalibrationError, Cancelled
        As the choice raises them.
    """
    if not payload.get("choose") or not payload.get("data") or api.why_not_choose(recipe) is not None:
        return None

    def phase(done: int, total: int, message: str) -> None:
        named = message.startswith(("Choosing the recipe", "Choosing units"))
        progress(done, total, message if named else f"{CHOICE_PHASE}: {message}" if message else CHOICE_PHASE)

    return api.choose_recipe(model, recipe, payload["data"], samples=payload.get("samples"), progress=phase,
                             cancel=cancel)


def _after_choice(choice, recipe, payload: dict) -> tuple:
    """``(recipe, payload)`` to go on with after :func:`choose_first`'s ``choice``: the chosen recipe, calibrated
    on the choice's ranges (``reuse``), when it chose; else ``recipe`` and ``payload`` as given."""
    if choice is None or choice.skipped is not None:
        return recipe, payload
    calibration = choice.calibration.to_json() if choice.calibration is not None else None
    return choice.recipe, {**payload, "recipe": choice.recipe.to_json(), "reuse": True, "calibration": calibration}


def choice_json(rep) -> dict:
    """A :class:`~workbench.core.api.ChoiceReport` as the app takes it: ``recipe`` (chosen recipe JSON),
    ``chosen``, ``label`` (the variant and its promoted unit count), ``scores`` (variant -> held-out output
    SQNR, dB), ``held_out`` (rows), ``promoted`` (nodes kept float or given 16-bit activations), ``skipped`` (None or
    why) and ``summary`` (the CLI's one line)."""
    return {"recipe": rep.recipe.to_json(), "chosen": rep.chosen, "label": rep.label, "scores": rep.scores,
            "held_out": rep.held_out, "promoted": list(rep.promotion.units) if rep.promotion is not None else [],
            "skipped": rep.skipped, "summary": rep.summary()}


def _cast_issues(model, payload: dict, issues) -> list[PlanIssue]:
    """The notes of the payload's calibration data cast to the model's input dtypes (float64 -> float32,
    :func:`workbench.core.api.data_cast_issues`), unless ``issues`` (the quantize's) already hold them: the
    app's calibrate job calibrates apart from its quantize, which reads no data. None when the data cannot be
    opened now (an export from the cache after the file moved: the job did not need it)."""
    if not payload.get("data") or any(i.code == IssueCode.DATA_CAST for i in issues):
        return []
    try:
        return api.data_cast_issues(payload["data"], model)
    except WorkbenchError:
        return []


def _calibration_issues(calib) -> list[PlanIssue]:
    """The calibration's warnings (NaN / Inf in the data or computed by the model, empty tensors) as
    issues, so the app lists them with the plan's (the CLI prints them from the log)."""
    if calib is None:
        return []
    return [PlanIssue("", "warning", f"Calibration: {w}", IssueCode.CALIBRATION_DATA) for w in calib.warnings]


def _spec_path(spec) -> str | None:
    """The file or folder a data spec names (a spec dict or a plain path), or None."""
    if isinstance(spec, dict):
        return spec.get("path")
    return str(spec) if isinstance(spec, (str, Path)) else None


def _refuse_inputs(payload: dict) -> None:
    """Refuse before any work an output ``path`` that is one of the job's inputs: the model, the
    calibration data, the eval data, a metric file, or a path in ``inputs`` (path -> what it is; the app
    sends its open project there); the CLI refuses the same (``this is an input file``).

    Raises
    ------
    ExportError
        ``path`` resolves to one of those files.
    """
    named = [(payload.get("model_path"), "the model"), (_spec_path(payload.get("data")), "the calibration data"),
             (_spec_path(payload.get("eval") or payload.get("eval_data")), "the eval data"),
             (payload["metric"] if str(payload.get("metric") or "").endswith(".py") else None, "the metric file"),
             *(payload.get("inputs") or {}).items()]
    refuse_output_onto_inputs(payload["path"], named)


#: what to do when a QDQ export meets QONNX-only dtypes (:func:`workbench.core.api.refuse_qdq_only`), in the app's words
QDQ_ONLY_HINT = "Export it as QONNX instead: choose QONNX in the Export dialog's file type (File > Export..., Ctrl+E)."


def refuse_qdq_export(recipe, plan) -> None:
    """The app's refusal of a QDQ export of ``plan`` (planned from ``recipe``) that uses QONNX-only dtypes,
    before any work (:func:`workbench.core.api.refuse_qdq_only`): the message names the node units and their
    dtypes; the hint names the recipe fields that set them (:func:`workbench.core.api.qdq_only_fields`) and
    what to do, or is :data:`QDQ_ONLY_HINT` when no field of the recipe sets them.

    Raises
    ------
    ExportError
        E.g. hint 'The recipe sets them in overrides["conv1"].weight.dtype: change that dtype to one QDQ
        holds (int8, uint8, int4, uint4, int16, uint16), or export it as QONNX: ...'.
    """
    fields = api.qdq_only_fields(recipe, plan)
    hint = (f"The recipe sets them in {api.qdq_only_fields_text(fields)}: change that dtype to one QDQ holds "
            "(int8, uint8, int4, uint4, int16, uint16), or export it as QONNX: choose QONNX in the Export "
            "dialog's file type (File > Export..., Ctrl+E).") if fields else QDQ_ONLY_HINT
    api.refuse_qdq_only(plan, hint=hint)


def refuse_output_onto_inputs(path: str | Path, inputs) -> None:
    """Raise ExportError when the output ``path`` is one of ``inputs`` (``(path, what it is)`` pairs or
    a dict path -> what; paths compared after ``~`` and symbolic links are resolved).

    Raises
    ------
    ExportError
        Naming ``path`` and the input it is, the first one in ``inputs`` order.
    """
    hit = api.same_file(path, inputs)
    if hit is not None:
        raise ExportError(f"{path} is {hit[1]}; writing there would replace it.",
                          hint="Choose another file name for the output (Workbench never modifies its inputs).")


def job_export(payload: dict, progress, cancel: CancelToken) -> dict:
    """Quantize with the cached calibration (calibrating only what is missing) and write ``path``,
    with the CLI's latency check when the payload has data (``latency_check`` False skips it): the
    file equals ``workbench-cli quantize MODEL --recipe R --data D --samples N``. Result: ``path``,
    ``calibration``, ``issues``, ``problems``, ``recipe`` (as written: with the units the latency check
    kept float) and ``units`` ([quantized, total]). ``format`` "qonnx" writes static input shapes as
    ``workbench-cli quantize --format qonnx`` does: ``input_shapes`` ({input: [dims]}) where given, else
    batch 1 for a symbolic batch. An output ``path`` that is one of the inputs (the
    model, the data, a path in ``inputs``) is refused before any work (:func:`_refuse_inputs`), as is a QDQ
    export of a recipe with QONNX-only dtypes (ExportError, :func:`refuse_qdq_export`). With ``choose``
    (as :func:`job_calibrate`) the recipe choice runs first and the chosen recipe is written, on the
    choice's ranges, as ``workbench-cli quantize MODEL --data D`` writes it; result ``choice``
    (:func:`choice_json`, None when none ran).

    With ``calibrated`` (the calibrate job's ``written``: the model it analysed, quantized as the CLI writes
    it) and the same inputs (model file, recipe, data, samples; no choice: :func:`calibrated_changes`),
    those bytes are written as they are (QDQ), or that model is written as QONNX from the calibration's ranges
    without calibrating or measuring again (:func:`_write_calibrated_qonnx`), with the issues and latency result
    of that calibration (result ``reused`` True, ``latency``: the latency check's figures or None); else the job
    quantizes as above and ``rerun`` says why the kept model could not be written (None without one).

    A cancel stops the job until its write begins (``path`` is then left as it was); once the write began, the
    job writes the whole file and returns (the app says the cancel came too late)."""
    _refuse_inputs(payload)
    rerun = calibrated_changes(payload)
    if rerun is None and payload.get("format", "qdq") == "qdq":
        cancel.check()  # a cancel before the write begins stops it (the file is left as it was)
        return _write_calibrated(payload, progress)
    model = _open(payload, progress)
    if rerun is None:
        written = _write_calibrated_qonnx(model, payload, progress, cancel)
        if written is not None:
            return written
        rerun = "the calibration's ranges no longer give the model it analysed"
    recipe = _recipe(payload)
    fmt = payload.get("format", "qdq")
    if fmt == "qdq":  # QONNX-only dtypes: refused before calibrating, not after
        refuse_qdq_export(recipe, api.plan(model, recipe))
    choice = choose_first(model, recipe, payload, progress, cancel)
    recipe, payload = _after_choice(choice, recipe, payload)
    if fmt == "qdq" and choice is not None and choice.skipped is None:  # the chosen recipe too
        refuse_qdq_export(recipe, api.plan(model, recipe))
    result, calib = _quantize_with_cache(model, recipe, payload, progress, cancel,
                                         latency_check=payload.get("latency_check", True))
    cancel.check()  # a cancel before the write begins stops it (the file is left as it was); once it began, it ends
    done = one_step(progress, f"Writing: {Path(payload['path']).name}")
    # QONNX as the CLI writes it (and replays a project's export section): static input shapes
    qonnx = {"model": model, "input_shapes": payload.get("input_shapes") or None, "static_shapes": True}
    out = api.export(result, payload["path"], format=fmt, **(qonnx if fmt == "qonnx" else {}))
    done()
    units = result.plan.units.values()
    issues = list(result.issues) + _cast_issues(model, payload, result.issues)
    return {"path": str(out), "calibration": calib.to_json() if calib is not None else None,
            "issues": [_issue_text(i) for i in issues], "problems": _typed(issues),
            # the recipe as written (the latency check's exclusions added), which a saved project replays
            "recipe": result.recipe.to_json(), "choice": choice_json(choice) if choice is not None else None,
            "units": [sum(not u.excluded for u in units), len(units)], "reused": False,
            "rerun": rerun if payload.get("calibrated") else None}


def calibrated_changes(payload: dict) -> str | None:
    """Whether an export job can write the model its ``calibrated`` entry keeps (the calibration's model,
    :func:`workbench.core.api.keep_written`) as it is: None when it can; else why not, in words ("the recipe
    was edited since the calibration", "no model kept"). The same rule for QDQ and QONNX (a QONNX file is written
    from that model's recipe and ranges: :func:`_write_calibrated_qonnx`). The model file is hashed to tell
    (milliseconds)."""
    kept = payload.get("calibrated")
    if kept is None:
        return "no model kept"
    if payload.get("choose") or not payload.get("latency_check", True):
        return "the export runs the recipe choice first" if payload.get("choose") else "the export skips the latency check"
    return api.written_changes(kept, api.current_inputs(payload["model_path"], payload["recipe"],
                                                        payload.get("data"), payload.get("samples")))


def _write_calibrated(payload: dict, progress) -> dict:
    """:func:`job_export`'s result for a model the calibration kept (:func:`calibrated_changes` is None): its
    bytes written as they are (phase "Writing" alone: no planning, calibration or latency measurement), with
    its issues and latency result."""
    kept = payload["calibrated"]
    done = one_step(progress, f"Writing: {Path(payload['path']).name}")
    out = api.write_kept(kept, payload["path"])
    done()
    return {"path": str(out), **_calibrated_result(kept, payload)}


def _calibrated_result(kept: dict, payload: dict) -> dict:
    """An export's result for the model the calibration kept (``kept``), but its ``path``."""
    issues = list(kept.get("issues") or [])
    return {"calibration": payload.get("calibration"), "issues": [_issue_text(i) for i in issues],
            "problems": _typed(issues), "recipe": kept["recipe"], "choice": None, "units": list(kept["units"]),
            "reused": True, "rerun": None, "latency": kept.get("latency")}


def _write_calibrated_qonnx(model, payload: dict, progress, cancel: CancelToken) -> dict | None:
    """:func:`job_export`'s result for a QONNX export of the model the calibration kept (:func:`calibrated_changes`
    is None): its quantize result rebuilt from its recipe as written and the cached ranges
    (:func:`workbench.core.api.rebuild_kept`: no calibration pass, no latency check) and written as
    ``workbench-cli quantize --format qonnx`` writes it, with the calibration's issues and
    latency result; None when the ranges do not give the kept model again (the caller quantizes afresh). Phases:
    Quantizing, Writing."""
    kept = payload["calibrated"]
    done = one_step(progress, "Quantizing: the calibrated model again, from its ranges")
    result = api.rebuild_kept(model, kept, _calibration(payload), payload.get("data"), payload.get("samples"),
                              cancel=cancel)
    done()
    if result is None:
        return None
    cancel.check()  # a cancel before the write begins stops it (the file is left as it was)
    done = one_step(progress, f"Writing: {Path(payload['path']).name}")
    out = api.export(result, payload["path"], format="qonnx", model=model, static_shapes=True,
                     input_shapes=payload.get("input_shapes") or None)
    done()
    return {"path": str(out), **_calibrated_result(kept, payload)}


def job_sensitivity(payload: dict, progress, cancel: CancelToken) -> dict:
    """Sensitivity sweep of every node unit (:func:`workbench.core.analysis.sensitivity.sensitivity_sweep`).

    Payload: as :func:`job_calibrate`, plus ``sweep_samples``, ``top`` (units measured end to
    end; None: all) and ``executor`` (None or "threads", the default: the sweep's threads, one per core;
    "inline": one thread; "ray" / "ray:ADDRESS"). Threads run in this (child) process: a daemon process may
    not start a process pool, so "processes" takes the threads too; Ray starts its own.
    Result: ``sweep`` (SweepResult JSON), ``suggestion`` (node names to keep in float),
    ``calibration`` (JSON, reused by later runs), ``recipe`` (the JSON swept), ``quantized`` (how many node
    units the swept model quantizes: 0 when every one stayed float, so its SQNR is no quantization figure).
    """
    model = _open(payload, progress)
    recipe = _recipe(payload)
    result, calib = _quantize_with_cache(model, recipe, payload, progress, cancel)
    sweep = sensitivity_sweep(model, result, payload["data"], samples=payload.get("sweep_samples"),
                              top=payload.get("top"), executor=_sweep_executor(payload.get("executor")),
                              progress=in_phase(progress, "Sensitivity"), cancel=cancel)
    return {"sweep": sweep.to_json(), "suggestion": sweep.suggestion(),
            "calibration": calib.to_json() if calib is not None else None, "recipe": payload["recipe"],
            "quantized": sum(1 for u in result.plan.units.values() if not u.excluded)}


def job_report(payload: dict, progress, cancel: CancelToken) -> dict:
    """Write the HTML report (:func:`workbench.core.report.write.write_report`) to ``path``.

    Payload: as :func:`job_export`, plus ``eval`` (data spec; default ``data``), ``eval_samples``,
    ``metric`` and ``allow_code`` (as :func:`job_evaluate`; None: the report's default metric), ``sweep``
    (SweepResult JSON of the same recipe, or None) and ``curve`` (an autotune curve document, or None).
    Quantizes with the cached calibration (calibrating only what is missing); the file is written
    atomically, so a failed job, or one cancelled before its write begins, leaves nothing (once the write
    began it ends). Result: ``path``, ``calibration``. An output ``path`` that is one of the inputs is refused
    before any work, as by :func:`job_export`.
    """
    _refuse_inputs(payload)
    metric = _metric(payload)  # an unknown metric or a file without allow_code fails before calibrating
    model = _open(payload, progress)
    recipe = _recipe(payload)
    result, calib = _quantize_with_cache(model, recipe, payload, progress, cancel)
    out = api.write_report(payload["path"], model, result, payload.get("eval") or payload["data"],
                           eval_samples=payload.get("eval_samples"), metric=metric, curve=payload.get("curve"),
                           sweep=api.load_sweep(payload["sweep"], "the sweep") if payload.get("sweep") else None,
                           progress=in_phase(progress, "Report"),
                           cancel=cancel)
    return {"path": str(out), "calibration": calib.to_json() if calib is not None else None}


def job_evaluate(payload: dict, progress, cancel: CancelToken) -> dict:
    """Quantize (cached ranges reused) and run float and quantized on eval data
    (:func:`workbench.core.analysis.evaluate.evaluate`).

    Payload: as :func:`job_calibrate`, plus ``eval_data`` (an .npz path), ``eval_samples`` (None:
    all), ``metric`` (None, a built-in name of :data:`workbench.core.analysis.metrics.METRICS`, or a
    ``.py`` file defining ``metric(outputs, batch)``), ``allow_code`` (True is needed to load a file).
    Result: ``report`` (the :class:`~workbench.core.analysis.evaluate.EvalReport`), ``metric``,
    ``eval_data``, ``calibration`` (JSON, reused by later runs), ``recipe`` (the JSON evaluated).

    Raises DataError for an unknown metric, a metric file without ``allow_code`` (before any
    calibration) and bad eval data.
    """
    metric = _metric(payload)
    model = _open(payload, progress)
    recipe = _recipe(payload)
    result, calib = _quantize_with_cache(model, recipe, payload, progress, cancel)
    report = api.evaluate(model, result.proto, payload["eval_data"], samples=payload.get("eval_samples"),
                          metric=metric, progress=in_phase(progress, "Evaluating"), cancel=cancel)
    return {"report": report, "metric": payload.get("metric"), "eval_data": payload["eval_data"],
            "calibration": calib.to_json() if calib is not None else None, "recipe": payload["recipe"]}


def job_autotune(payload: dict, progress, cancel: CancelToken) -> dict:
    """Promote the most sensitive units until the metric target holds (:func:`workbench.core.tuning.autotune.autotune`).

    Payload: ``model_path``, ``recipe``, ``data``, ``samples`` (calibration), ``eval_data``,
    ``eval_samples``, ``metric`` (built-in name or ``.py`` file), ``allow_code``, ``max_drop`` or
    ``min_score`` (the target), ``promote_to`` ("float", "int16", "uint16", or a ladder "int16,float").
    Each measured point is sent at once through :func:`partial_sender` as ``{"point": CurvePoint
    JSON, "recipe": recipe JSON, "metric_float": float}``. Result: ``curve`` (those dicts, by
    units promoted), ``recipe`` (the tuned recipe JSON), ``metric_float``, ``metric_before``,
    ``metric_after``, ``promoted`` (node names), ``met`` (target reached), ``metric``, ``latency_lifted`` (the
    payload's: units the app's latency check kept float that the recipe given quantizes again; [] without).
    """
    metric = payload.get("metric") or "top1"
    _metric(payload)  # refuse an unknown metric or a file without allow_code before calibrating
    model = _open(payload, progress)
    send = partial_sender(progress)
    points: list[dict] = []

    def on_point(point, recipe, metric_float) -> None:
        entry = {"point": point.to_json(), "recipe": recipe.to_json(), "metric_float": metric_float}
        points.append(entry)
        send(entry)

    res = api.autotune(model, _recipe(payload), data=payload["data"], eval_data=payload["eval_data"],
                       metric=metric, max_drop=payload.get("max_drop"), min_score=payload.get("min_score"),
                       samples=payload.get("samples"), eval_samples=payload.get("eval_samples"),
                       promote_to=payload.get("promote_to", "float"), allow_code=bool(payload.get("allow_code")),
                       progress=in_phase(progress, "Autotune"), cancel=cancel, on_point=on_point)
    points.sort(key=lambda e: e["point"]["promoted"])
    return {"curve": points, "recipe": res.recipe.to_json(), "metric_float": res.metric_float,
            "metric_before": res.metric_before, "metric_after": res.metric_after,
            "promoted": list(res.promoted), "met": res.met, "metric": metric,
            "latency_lifted": list(payload.get("latency_lifted") or [])}


def job_choose(payload: dict, progress, cancel: CancelToken) -> dict:
    """The recipe choice among the preset, MSE ranges and compute-only quantization
    (:func:`workbench.core.api.choose_recipe`) on the calibration data.

    Payload: ``model_path``, ``recipe``, ``data``, ``samples``. Result: ``recipe`` (the chosen recipe
    JSON; the given one when the preset stays and no unit was promoted, or the choice was skipped),
    ``chosen``, ``label`` (the variant and its promoted unit count), ``scores`` (variant -> held-out output
    SQNR, dB), ``held_out``, ``promoted`` (nodes kept float or given 16-bit activations), ``skipped`` (None or why), ``summary`` and
    ``calibration`` (with the preset kept, its ranges over every row as cache JSON, which the document
    keeps, so the calibration or export that follows runs no calibration pass; else None).
    """
    model = _open(payload, progress)
    rep = api.choose_recipe(model, _recipe(payload), payload["data"], samples=payload.get("samples"),
                            progress=in_phase(progress, "Choosing"), cancel=cancel)
    return {**choice_json(rep), "calibration": rep.calibration.to_json() if rep.calibration is not None else None}


def _sweep_executor(spec: str | None):
    """The executor the app chose: None (no choice, "threads" or "processes") lets the sweep take its
    default, threads of this process (one per core; a daemon process may not start a process pool);
    "inline" runs on one thread; "ray" / "ray:ADDRESS" on Ray."""
    if not spec or spec == "threads" or spec.startswith("processes"):
        return None
    if spec == "inline":
        return InlineExecutor()
    return api.make_executor(spec)


def job_histogram(payload: dict, progress, cancel: CancelToken) -> dict:
    """Histograms of one unit over the first ``samples`` calibration samples: its output tensor, its activation
    inputs (the same runs: :func:`workbench.core.api.activation_histograms`) and its weight.

    Payload: ``model_path``, ``data``, ``tensor`` (the output), ``samples``, optional ``inputs`` (activation
    tensor names), ``weight`` (initializer name), ``weight_qparams`` (QParams JSON the weight was written with)
    and ``channel`` (the channel of a per-channel weight to draw over it).
    Result: ``counts`` (int list, ``bins`` long), ``edges`` (``bins + 1`` floats), ``tensor``,
    ``rmin`` / ``rmax`` (observed float range), ``values`` (number of elements seen), ``rows`` (samples run),
    ``data_rows`` (samples the data holds; None when unknown: a Python reader without a count that had more),
    ``inputs`` (one histogram dict per input, in order, or with ``missing``: why it has none), ``weight``
    (:func:`workbench.core.api.weight_histogram`, None without a weight).
    """
    model = api.open_model(payload["model_path"])
    tensor = payload["tensor"]
    inputs = [t for t in payload.get("inputs") or [] if t]
    bins = int(payload.get("bins", 128))
    got = api.activation_histograms(model, [tensor, *inputs], payload["data"], samples=int(payload.get("samples") or 16),
                                    bins=bins, cancel=cancel,
                                    progress=lambda done, total, _t: progress(done, total, f"Histogram of {tensor}"))
    out = got["hists"][tensor]
    if "missing" in out:
        raise ModelError(f"{payload['model_path']}: tensor {tensor!r} is {out['missing']}.",
                         hint="Select a node of the main graph.")
    weight = None
    if payload.get("weight"):
        qp = api.QParams.from_json(payload["weight_qparams"]) if payload.get("weight_qparams") else None
        weight = api.weight_histogram(model, payload["weight"], qp, channel=payload.get("channel"), bins=bins)
    return {**out, "rows": got["rows"], "data_rows": got["data_rows"], "inputs": [got["hists"][t] for t in inputs],
            "weight": weight}


def job_sleep(payload: dict, progress, cancel: CancelToken) -> dict:
    """Test helper job: ``steps`` steps of ``delay`` seconds with progress; fails on request."""
    steps = int(payload.get("steps", 10))
    for i in range(steps):
        cancel.check()
        time.sleep(float(payload.get("delay", 0.05)))
        progress(i + 1, steps, "sleeping")
    if payload.get("fail"):
        raise DataError("x.npz: input 'input' has shape [2] but the model needs [1, 8].",
                        hint="Pick data made for this model.")
    if payload.get("crash"):
        raise RuntimeError("simulated bug")
    return {"steps": steps}


def _issue_text(issue: PlanIssue | str) -> str:
    """One line per issue, as the project's results store them ("severity node: message")."""
    if isinstance(issue, PlanIssue):
        return f"{issue.severity} {issue.node}: {issue.message}".strip()
    return str(issue)


def _typed(issues) -> list[PlanIssue]:
    """The issues as PlanIssue objects (they pickle to the app as they are, severity and code typed)."""
    return [i for i in issues if isinstance(i, PlanIssue)]


#: job name -> job function (the names :class:`workbench.qt.workers.ProcessJob` is given)
JOBS = {"calibrate": job_calibrate, "export": job_export, "sensitivity": job_sensitivity,
        "histogram": job_histogram, "sleep": job_sleep, "report": job_report, "evaluate": job_evaluate,
        "autotune": job_autotune, "choose": job_choose}
