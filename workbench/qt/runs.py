"""Runs the document's background work: calibrate, analyse, sensitivity sweep, export, report,
evaluate, autotune, histograms.

One main job at a time (calibrate / analyse / sensitivity / export / report / evaluate / autotune); a histogram job may run beside it and is
replaced when the selection changes. Results are adopted by the document only when a job
succeeds, so cancelling or a failure leaves the previous calibration and errors intact.
"""

from __future__ import annotations

import copy
import json
import logging
import os
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoCommand

from workbench.core import api
from workbench.core.errors import ExportError, WorkbenchError
from workbench.core.jobs import refuse_output_onto_inputs, refuse_qdq_export
from workbench.core.wording import count
from workbench.qt import settings
from workbench.qt.cancel_text import WRITERS
from workbench.qt.choice_skip import AppliedChoice, after_choice_text, choice_skip_text, holds_choice
from workbench.qt.choice_text import applied_note, choice_line
from workbench.qt.commands import push_edit
from workbench.qt.eta import OverallProgress, job_phases
from workbench.qt.nothing_quantized import islands_note, latency_islands
from workbench.qt.quantize_anyway import latency_kept_units
from workbench.qt.workers import Job, ProcessJob

log = logging.getLogger(__name__)

#: Samples used for the per-unit analysis after calibration (None: all).
ANALYSIS_SAMPLES = 32
#: Rows a histogram is drawn from (the first ones of the calibration data; its note says of how many): one
#: tensor's values of every row would take the model's run over all the data each time a node is selected
HISTOGRAM_SAMPLES = 8
#: Samples of the sensitivity sweep unless set (the Sensitivity panel's Rows box, settings.sweep_rows), and
#: units measured end to end (the rest: own error only).
SWEEP_SAMPLES = settings.SWEEP_ROWS
SWEEP_TOP = 32


#: the export formats: QDQ (QuantizeLinear / DequantizeLinear) and QONNX (Quant / FloatQuant nodes)
EXPORT_FORMATS = ("qdq", "qonnx")


def project_format(section: dict | None) -> str:
    """The export format a project's ``export`` section names ("qdq" when it names none)."""
    fmt = (section or {}).get("format") or "qdq"
    return fmt if fmt in EXPORT_FORMATS else "qdq"


def export_section(fmt: str, saved: dict | None, where: str = "The project") -> dict | None:
    """The project's ``export`` entry after an export as ``fmt``, as ``workbench-cli quantize --save-project``
    records it: None for QDQ (the replay's default), else ``{"format": "qonnx", "input_shapes": {input:
    [dims]}}`` keeping the input shapes of ``saved`` (the open project's section) when it is QONNX too.

    Raises
    ------
    ExportError
        ``saved``'s input shapes are not {input name: [whole numbers >= 1]}; the message names ``where``
        (the project file) and the field.
    """
    if fmt == "qdq":
        return None
    shapes = (saved or {}).get("input_shapes") if project_format(saved) == fmt else None
    if not isinstance(shapes or {}, dict):
        raise ExportError(f"{where}: field export.input_shapes: {shapes!r} is not a mapping of input name to "
                          "dimensions.", hint='Write it as {"NAME": [1, 3, 224, 224]}, or delete it.')
    for name, dims in (shapes or {}).items():
        if not (isinstance(dims, list) and dims and all(type(d) is int and d >= 1 for d in dims)):
            raise ExportError(f"{where}: field export.input_shapes.{name}: {dims!r} is not a list of whole numbers "
                              ">= 1.", hint='Write it as {"NAME": [1, 3, 224, 224]}, or delete it.')
    return {"format": fmt, "input_shapes": {k: list(v) for k, v in (shapes or {}).items()}}


def same_cache(a: dict | None, b: dict | None) -> bool:
    """Whether two calibration caches (``CalibrationResult.to_json()``) hold the same ranges: all but the
    time they took (a job that reused every range returns the cache with ``seconds`` 0)."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        return a == b
    return {k: v for k, v in a.items() if k != "seconds"} == {k: v for k, v in b.items() if k != "seconds"}


def check_output_path(path: str | Path) -> None:
    """Refuse, before any work, an output ``path`` that cannot be written: its folder is missing, is a file,
    or is not writable, or ``path`` is a folder (the job would compute for minutes, then fail to write).

    Raises
    ------
    ExportError
        Naming ``path`` and what is wrong with it.
    """
    path = Path(path).expanduser()
    folder = path.parent
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        raise ExportError(f"{path}: {folder} {what}.", hint="Choose an existing folder for the output.")
    if path.is_dir():
        raise ExportError(f"{path} is a folder.", hint="Choose a file name inside it.")
    if not os.access(folder, os.W_OK):
        raise ExportError(f"{path}: the folder {folder} is not writable.", hint="Choose a folder you can write to.")


class ExportSectionCommand(QUndoCommand):
    """Set the document's ``export`` section (how a saved project's replay writes the model) from ``before``
    to ``after``: the app exported in another format than the project said, so a save records it."""

    def __init__(self, document, before: dict | None, after: dict | None):
        fmt = project_format(after).upper()
        super().__init__(f"Export as {fmt} (the project's replay writes {fmt})")
        self._doc = document
        self._before, self._after = copy.deepcopy(before), copy.deepcopy(after)

    def redo(self) -> None:
        self._doc.export = copy.deepcopy(self._after)

    def undo(self) -> None:
        self._doc.export = copy.deepcopy(self._before)


class RunController(QObject):
    """Starts jobs for a document and reports them; the window connects these signals."""

    started = Signal(str)  # title
    progress = Signal(int, int, str)
    succeeded = Signal(str, object)  # kind, result dict
    failed = Signal(str, object)  # kind, WorkbenchError
    cancelled = Signal(str)
    cancelling = Signal(str)  # title: cancel was asked; ``cancelled`` (or the result) follows
    partial = Signal(str, object)  # kind, an intermediate result (one autotune point)
    finished = Signal(str)  # kind, after one of the three above
    histogramReady = Signal(object)
    histogramFailed = Signal(str, str)  # tensor, one-line reason

    def __init__(self, document, parent: QObject | None = None):
        super().__init__(parent)
        self.doc = document
        self.job: Job | None = None
        self.kind = ""
        self.hist_job: Job | None = None
        self._cancelling: Job | None = None  # the job asked to stop (its later progress is dropped)
        #: the main job's progress across its phases (:attr:`OverallProgress.fraction`, 0..1), updated before
        #: each ``progress`` signal: one bar for the whole job, not one per phase
        self.overall = OverallProgress([])
        #: samples of the per-unit analysis after calibration (the first N rows of the data)
        self.analysis_samples = ANALYSIS_SAMPLES
        #: recipes (JSON) the recipe choice has settled for this model: the ones a choice ran on and the
        #: ones it chose, and a project's recipe opened with its calibration; a calibration takes them as
        #: they are (:meth:`will_choose`). A new model starts afresh.
        self._settled: set[str] = set()
        #: the recipe choice applied last on this model (F5's or Ctrl+F5's): a recipe edited after it holds the
        #: choice's own rules, which the skip line does not count as the user's (:mod:`workbench.qt.choice_skip`)
        self.applied_choice: AppliedChoice | None = None
        #: :meth:`analysis_inputs` of the figures the document shows, as the last calibration or analysis
        #: measured them (None: none since this model opened); an analysis of the same inputs is not run again
        self._analysed: tuple | None = None
        self._analysing: int | None = None  # the analysis samples of the running calibrate job
        document.modelChanged.connect(self._settled.clear)
        document.modelChanged.connect(self._forget_choice)
        document.modelChanged.connect(self._forget_analysis)

    @property
    def busy(self) -> bool:
        return self.job is not None

    def _need_model(self) -> None:
        if self.doc.model is None:
            raise WorkbenchError("No model is open.", hint="Open a model first (File > Open).")
        if self.busy:
            raise WorkbenchError(f"{self.job.title} is still running.", hint="Wait for it or cancel it (Esc).")

    def _need_data(self) -> None:
        if not self.doc.data:
            raise WorkbenchError("No calibration data chosen.",
                                 hint="Pick an .npz/.npy file, a folder or an image folder in the Calibration panel.")

    # ------------------------------------------------------------------ main jobs
    def calibrate(self, *, reuse: bool = False) -> Job:
        """Calibrate (all tensors, or only changed ones with ``reuse``), quantize and analyse. Without
        ``reuse``, when :meth:`will_choose`, the job first runs the recipe choice as ``workbench-cli
        quantize`` does by default (:func:`workbench.core.jobs.choose_first`) and calibrates the chosen
        recipe on the choice's ranges; the chosen recipe becomes the document's as one undoable edit
        when the job succeeds (the result's ``choice_text`` says what was chosen)."""
        self._need_model()
        self._need_data()
        choose = not reuse and self.will_choose()
        payload = self.doc.payload(reuse=reuse, analysis_samples=self.analysis_samples, choose=choose)
        title = "Analysis" if reuse else "Recipe choice and calibration" if choose else "Calibration"
        skipped = {"choice_text": self.choice_skip_note()} if not reuse else None
        return self._start("calibrate", ProcessJob("calibrate", payload, title=title, parent=self), skipped,
                           choose=choose)

    def choice_skip_note(self) -> str:
        """Why a calibration with "Choose the recipe first" ticked calibrates the recipe as it is, in one line
        with what to do ("" when the box is off, there is no data, a choice settled the recipe, or the
        choice runs): the choice starts from a preset with node overrides at most
        (:func:`workbench.core.api.why_not_choose`)."""
        recipe = self.doc.recipe
        if (not getattr(self.doc, "choose_recipe", True) or not self.doc.data or self.doc.quant_summary is not None
                or recipe.to_json() in self._settled):
            return ""
        why = api.why_not_choose(recipe)
        return "" if why is None else choice_skip_text(recipe, why, self.applied_choice)

    def will_choose(self) -> bool:
        """Whether a calibration runs the recipe choice first: the Calibration panel's "Choose the recipe
        first" is on (``Document.choose_recipe``), there is data, the recipe is a static preset,
        alone or with node overrides (:func:`workbench.core.api.why_not_choose`) and no choice settled it already (a recipe chosen, the
        one a choice ran on, or after an undo of the choice, is calibrated as it is)."""
        recipe = self.doc.recipe
        return (bool(getattr(self.doc, "choose_recipe", True)) and bool(self.doc.data)
                and self.doc.quant_summary is None and api.why_not_choose(recipe) is None
                and recipe.to_json() not in self._settled)

    def settle(self, *recipes) -> None:
        """Later calibrations take ``recipes`` (Recipe or JSON) as they are (no recipe choice)."""
        self._settled.update(r if isinstance(r, str) else r.to_json() for r in recipes if r is not None)

    def _adopt_choice(self, result: dict) -> dict:
        """The choice a calibration ran first (``result["choice"]``): settle it, and make its recipe the
        document's as one undoable edit, unless the recipe was edited while the job ran (that edit is kept;
        the figures then show as made with another recipe). Returns ``result`` with ``choice_text``: the
        choice's line in the GUI's terms (:func:`choice_line`; a skipped one: :meth:`ChoiceReport.summary`) and
        what became of it ("" without a choice)."""
        choice = result.get("choice")
        if not choice:  # a choice skipped before the job (choice_skip_note) keeps its line
            return {**result, "choice_text": result.get("choice_text") or ""}
        started = result.get("started_recipe")
        text = choice["summary"] if choice.get("skipped") else choice_line(choice)[:-1]
        if choice.get("skipped"):
            return {**result, "choice_text": f"{text[:1].upper()}{text[1:]}."}
        self.settle(started, choice["recipe"])
        chosen = api.Recipe.model_validate_json(choice["recipe"])
        label = choice.get("label") or choice["chosen"]
        if chosen.to_json() == started:
            note = " The preset stays as it is."
        elif started is not None and started != self.doc.recipe.to_json():
            note = (f" Not applied: the recipe was edited while the job ran, and that edit is kept (the results are "
                    f"of {label}).")
        elif push_edit(self.doc, chosen, f"Choose recipe: {label}"):
            self.applied_choice = AppliedChoice(label, chosen)
            note = applied_note()
            result = {**result, "choice_applied": True}  # _adopt_latency's edit may follow it
        else:
            note = ""
        return {**result, "choice_text": f"{text[:1].upper()}{text[1:]}.{note}"}

    def _adopt_latency(self, result: dict) -> dict:
        """The units a calibration's latency check kept float (``result["latency_kept"]``, as ``workbench-cli
        quantize`` keeps them): the recipe takes them as excluded in one undoable edit, so the figures shown, an
        export and a saved project are all of the model analysed; not when the recipe was edited while the job
        ran (that edit is kept; the figures then show as made with another recipe). Returns ``result`` with
        ``latency_text``: what became of them ("" when none was kept)."""
        kept = list(result.get("latency_kept") or [])
        if not kept:
            return {**result, "latency_text": ""}
        choice = result.get("choice") or {}
        ran = choice["recipe"] if choice and not choice.get("skipped") else result.get("started_recipe")
        units = count(len(kept), "unit")  # one count of units everywhere, and the islands they form
        islands = islands_note(len(latency_islands(result.get("problems") or [])))
        if ran is None or api.Recipe.model_validate_json(ran).model_dump() != self.doc.recipe.model_dump():
            return {**result, "latency_text": f" The latency check kept {units} float ({islands}slower quantized on "
                                              "this machine); not added to the recipe: it was edited while the job "
                                              "ran."}
        push_edit(self.doc, api.Recipe.model_validate_json(result["recipe"]),
                  f"Keep {units} float (latency check{', ' + islands.removesuffix(', ') if islands else ''})")
        self.doc.note_latency_kept(kept, result.get("problems") or [])  # why, for a saved project's latency_kept
        if result.get("choice_applied"):  # two edits now: the first Ctrl+Z undoes this one
            result = {**result, "choice_undo_steps": 2,
                      "choice_text": result["choice_text"].replace(applied_note(), applied_note(2))}
        return {**result, "latency_text": f" The latency check kept {units} float ({islands}slower quantized on "
                                          "this machine), as `workbench-cli quantize` does; the recipe now says so "
                                          "(Ctrl+Z undoes)."}

    def analyze(self) -> Job | None:
        """Re-quantize with the cached ranges (calibrating only new tensors) and re-analyse; None (no job)
        when the figures shown already are of the same inputs (:meth:`analysis_is_current`)."""
        if self.analysis_is_current():
            return None
        return self.calibrate(reuse=True)

    def analysis_inputs(self) -> tuple:
        """What an analysis measures: the model file (path and SHA-256), the recipe JSON, the data rows
        (data, samples), the analysis samples and the calibration cache's ranges (JSON, without the time
        they took)."""
        cache = self.doc.calibration
        ranges = {k: v for k, v in cache.items() if k != "seconds"} if isinstance(cache, dict) else cache
        model = self.doc.model
        return (str(self.doc.model_path), getattr(model, "sha256", None), self.doc.recipe.to_json(), self.doc.rows,
                self.analysis_samples, json.dumps(ranges, sort_keys=True, default=str))

    def analysis_is_current(self) -> bool:
        """Whether the figures shown were measured by a calibration or analysis of this document with the
        same :meth:`analysis_inputs` as now: an analysis would measure the same model bytes on the same rows
        and give the same figures."""
        return (self._analysed is not None and bool(self.doc.errors) and self.doc.results_current
                and self._analysed == self.analysis_inputs())

    def input_files(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The files the open work reads, by real path -> what each is: the model, the open project,
        the calibration data, plus ``extra`` (path -> what: the eval data, a metric file)."""
        named: list[tuple[object, str]] = [(self.doc.model_path, "the open model"),
                                           (self.doc.project_path, "the open project"),
                                           ((self.doc.data or {}).get("path"), "the calibration data"),
                                           *(extra or {}).items()]
        out: dict[str, str] = {}
        for path, what in named:
            if path:
                out.setdefault(os.path.realpath(Path(path).expanduser()), what)
        return out

    def refuse_input(self, path: str | Path, extra: dict[str, str] | None = None) -> None:
        """Raise ExportError when ``path`` is one of :meth:`input_files` (an output never replaces an input)."""
        refuse_output_onto_inputs(path, self.input_files(extra))

    def export(self, path: str | Path, fmt: str = "qdq", *, inputs: dict[str, str] | None = None) -> Job:
        """Write the quantized model to ``path`` as ``fmt`` ("qdq" or "qonnx"); refused when ``path`` is an
        input file (:meth:`input_files`, ``inputs`` adds the window's others: the eval data, a metric file)
        or cannot be written (:func:`check_output_path`), and as QDQ when the recipe uses QONNX-only dtypes
        (:func:`workbench.core.jobs.refuse_qdq_export`, naming the recipe fields): all before the job starts.

        A QONNX file is written as ``workbench-cli quantize --format qonnx`` writes it (static input shapes:
        the open project's ``export.input_shapes``, else batch 1 for a symbolic batch). The result carries
        ``export_section``: the project's ``export`` entry for this export, as the CLI records it
        (:func:`export_section`). When :meth:`will_choose` (no calibration settled the recipe yet), the
        job runs the recipe choice first as the CLI's quantize does, and the chosen recipe becomes the
        document's as one undoable edit (``choice_text`` in the result)."""
        self._need_model()
        if fmt not in EXPORT_FORMATS:
            raise WorkbenchError(f"Unknown export format {fmt!r}.", hint="Export as QDQ or as QONNX.")
        self.refuse_input(path, inputs)
        check_output_path(path)
        if fmt == "qdq" and self.doc.plan is not None:  # QONNX-only dtypes: before the job, not after quantizing
            refuse_qdq_export(self.doc.recipe, self.doc.plan)
        if self.doc.calibration is None and not self.doc.data and self._static():
            self._need_data()
        section = export_section(fmt, self.doc.export, self._project_name())
        note = self._qonnx_shapes_note(section["input_shapes"]) if section else None
        shapes = {"input_shapes": section["input_shapes"]} if section else {}
        choose = self.will_choose()  # the CLI's quantize chooses too: a preset no choice settled yet
        payload = self.doc.payload(path=str(path), format=fmt, reuse=True, inputs=self.input_files(inputs),
                                   choose=choose, calibrated=self.doc.written, **shapes)
        title = f"{'Recipe choice and export' if choose else 'Export'} to {Path(path).name}"
        again = self.calibrated_changes(choose)
        if again is not None:  # the job checks again (the model file too) and says so in its result
            title += f" (quantizing again: {again})"
        return self._start("export", ProcessJob("export", payload, title=title, writes=path, parent=self),
                           extra={"export_section": section, "shapes_note": note}, choose=choose)

    def calibrated_changes(self, choose: bool = False) -> str | None:
        """Why an export cannot write the model the last calibration kept (``Document.written``) as it is, in
        words ("the recipe was edited since the calibration"); None when it can, or when there is none (an
        analysis with the cached ranges, F6, keeps none: the export then quantizes as the CLI does). One rule
        for QDQ and QONNX: a QONNX file is written from that model's recipe and ranges, without calibrating
        again (:func:`workbench.core.jobs.job_export`). The model file is compared as it was opened; the export
        job hashes it again."""
        kept = self.doc.written
        if kept is None or self.doc.model is None:
            return None
        if choose:
            return "the recipe choice runs first"
        return api.written_changes(kept, api.written_inputs(getattr(self.doc.model, "sha256", ""),
                                                            self.doc.recipe.to_json(), self.doc.data, self.doc.samples))

    def _project_name(self) -> str:
        return self.doc.project_path.name if self.doc.project_path is not None else "The project"

    def _qonnx_shapes_note(self, given: dict[str, list[int]]) -> str | None:
        """Check the project's ``export.input_shapes`` against the model's inputs before any work; the note
        saying why a QONNX file stays symbolic (inputs with symbolic dimensions besides the batch), or None.

        Raises
        ------
        ExportError
            An input shape names no input of the model, has another rank or changes a fixed dimension; the
            message names the project and the field.
        """
        try:
            choice = api.resolve_input_shapes(self.doc.model.proto, given, source=self.doc.model_path.name)
        except ExportError as exc:
            raise ExportError(f"{self._project_name()}: field export.input_shapes: {exc.message.removeprefix('--input-shape ')}",
                              hint=f"{exc.hint} Edit the project's \"export\" section, or export as QDQ.") from None
        if choice.note is None:
            return None
        return (f"{choice.note} In a project: \"export\": {{\"format\": \"qonnx\", \"input_shapes\": "
                "{\"NAME\": [dims]}}.")

    def report(self, path: str | Path, evaluation: dict | None = None, curve: dict | None = None, *,
               inputs: dict[str, str] | None = None) -> Job:
        """Write the HTML report (recipe, issues, SQNR, histograms, sensitivity, metric, graph) to ``path``
        with the cached ranges: measured on ``evaluation``'s eval data, samples and task metric (the
        Evaluate panel's, as :meth:`evaluate` takes them) or on the calibration data; with the last
        sensitivity sweep when it was made with the current recipe and rows, and the autotune ``curve`` (the
        Autotune panel's) when given. Refused when ``path`` is an input file or cannot be written (as
        :meth:`export`)."""
        self._need_model()
        extra = dict(inputs or {})
        if evaluation is not None:
            extra.setdefault(evaluation["eval_data"], "the eval data")
            if str(evaluation.get("metric") or "").endswith(".py"):
                extra.setdefault(evaluation["metric"], "the metric file")
        self.refuse_input(path, extra)
        check_output_path(path)
        self._need_data()
        sweep = self.doc.sensitivity_json()
        # made with this recipe on these rows (one of other rows showed as current, its figures of other ranges)
        current = sweep is not None and sweep.get("recipe") == self.doc.recipe.to_json() and sweep["on_current_data"]
        measure = {"eval_samples": self.analysis_samples}
        if evaluation is not None:
            measure = {"eval": evaluation["eval_data"], "eval_samples": evaluation["eval_samples"],
                       "metric": evaluation["metric"], "allow_code": evaluation["allow_code"]}
        payload = self.doc.payload(path=str(path), reuse=True, sweep=sweep["sweep"] if current else None,
                                   curve=curve, inputs=self.input_files(extra), **measure)
        return self._start("report", ProcessJob("report", payload, title=f"Report to {Path(path).name}",
                                                writes=path, parent=self))

    def sensitivity(self) -> Job:
        """Sensitivity sweep with the cached ranges (calibrating only what is missing)."""
        self._need_model()
        self._need_data()
        payload = self.doc.payload(reuse=True, sweep_samples=settings.sweep_rows(), top=SWEEP_TOP,
                                   executor=settings.executor())
        return self._start("sensitivity", ProcessJob("sensitivity", payload, title="Sensitivity sweep",
                                                     parent=self))

    def choose(self) -> Job:
        """The recipe choice (preset, MSE ranges or compute-only, by held-out output SQNR) on the
        calibration data; the window applies its recipe as one undoable edit."""
        self._need_model()
        self._need_data()
        return self._start("choose", ProcessJob("choose", self.doc.payload(), title="Recipe choice", parent=self))

    def evaluate(self, evaluation: dict) -> Job:
        """Quantize with the cached ranges and run float and quantized on the eval data.

        ``evaluation``: ``eval_data`` (.npz path), ``eval_samples``, ``metric``, ``allow_code``
        (see :func:`workbench.core.jobs.job_evaluate`)."""
        self._need_model()
        if self.doc.calibration is None and self._static():
            self._need_data()
        payload = self.doc.payload(reuse=True, **evaluation)
        return self._start("evaluate", ProcessJob("evaluate", payload, title="Evaluation", parent=self))

    def autotune(self, evaluation: dict, target: dict) -> Job:
        """Autotune: ``evaluation`` as :meth:`evaluate`, ``target`` holds ``max_drop`` or ``min_score``
        and ``promote_to`` (see :func:`workbench.core.jobs.job_autotune`); points arrive on :attr:`partial`.
        The units the latency check's edits keep float (:func:`~workbench.qt.quantize_anyway.latency_kept_units`)
        are quantized in the recipe it starts from (``latency_lifted`` in the payload names them): they are a
        measurement of speed, not the user's exclusions, and with every unit kept float the all-quantized point
        was the float model (digits_transformer: cosine 1.0000 "all quantized")."""
        self._need_model()
        self._need_data()
        lifted = sorted(latency_kept_units(self.doc))
        payload = {**self.doc.payload(**evaluation, **target), "latency_lifted": lifted}
        payload["recipe"] = self.doc.recipe.without_excluded(lifted).to_json()
        return self._start("autotune", ProcessJob("autotune", payload, title="Autotune", parent=self))

    def cancel(self) -> None:
        """Ask the main job to stop; emits ``cancelling`` once, and drops the job's later progress so
        the "Cancelling ..." status stays until ``cancelled`` arrives."""
        job = self.job
        if job is None or job is self._cancelling:
            return
        self._cancelling = job
        job.cancel()
        self.cancelling.emit(job.title)

    def _forward_progress(self, job: Job, done: int, total: int, message: str) -> None:
        if job is not self._cancelling:
            self.overall.update(done, total, message)
            self.progress.emit(done, total, message)

    def _static(self) -> bool:
        plan = self.doc.plan
        return plan is None or (plan.mode == "static" and bool(plan.activations))

    def _start(self, kind: str, job: Job, extra: dict | None = None, *, choose: bool = False) -> Job:
        """Run ``job`` as the main job of ``kind``; ``extra`` is added to its result when it succeeds, and
        ``cancel_too_late`` (True: a file job, :data:`~workbench.qt.cancel_text.WRITERS`, cancelled after its
        write began, whose file is written); ``choose``: it runs the recipe choice first (a phase of
        :attr:`overall`)."""
        self.job, self.kind = job, kind
        self._analysing = self.analysis_samples if kind == "calibrate" else self._analysing
        self.overall = OverallProgress(job_phases(kind, choose=choose))
        job.progress.connect(lambda d, t, m: self._forward_progress(job, d, t, m))
        job.partial.connect(lambda data: self.partial.emit(kind, data))
        data = self.doc.rows  # what the job's payload holds
        recipe = self.doc.recipe.to_json()  # the recipe it runs with (the user may edit while it runs)
        # a file job that returns after a cancel has written its file: it succeeds, saying the cancel came too late
        job.keeps_late_result = kind in WRITERS
        # an export's result also says the rows it ran on (the exported tab's outdated mark); kept out of the
        # others, which a project saves as JSON (a tuple would come back a list, unequal to what was saved)
        rows = {"started_rows": data} if kind == "export" else {}
        job.succeeded.connect(lambda res: self._on_success(kind, {**res, **(extra or {}), "started_recipe": recipe,
                                                                  **rows, "cancel_too_late": job.cancel_requested},
                                                           data))
        job.failed.connect(lambda err: self.failed.emit(kind, err))
        job.cancelled.connect(lambda: self.cancelled.emit(kind))
        job.finished.connect(lambda: self._on_finished(kind))
        self.started.emit(job.title)
        job.start()
        return job

    def _on_success(self, kind: str, result: dict, data: tuple) -> None:
        """Adopt a job's result; ``data``: the (data, samples) it ran on. Its calibration cache is taken
        only while the document still has those rows (they may change while a job runs). ``result``
        carries ``started_recipe``: the recipe JSON the job ran with (compare it with the document's
        to see an edit made while the job ran) and, for an export, ``started_rows``: ``data``."""
        same_rows = data == self.doc.rows
        if not same_rows:
            result = {**result, "calibration": None}
        new_cache = result.get("calibration") is not None and not same_cache(result["calibration"], self.doc.calibration)
        if kind == "export" and result.get("choice"):
            # the file's recipe is the chosen one: the window adds the latency check's units to it
            result = self._adopt_choice(result)
            if self.doc.recipe.to_json() == result["choice"]["recipe"]:
                result["started_recipe"] = result["choice"]["recipe"]
        if kind == "calibrate":
            applied = self.applied_choice
            result = self._adopt_choice(result)  # before the results: they are of the chosen recipe
            result = self._adopt_latency(result)  # ... with the units its latency check kept float
            self.doc.set_results(result, data=data)
            self._note_analysed(result)
            if self.applied_choice is not applied:
                self._settle_choice()
        elif kind == "sensitivity":
            self.doc.set_sensitivity(result, data=data)
        if kind == "choose":
            result = self._note_choice(result)
        if kind in ("export", "report", "evaluate", "choose") and result.get("calibration") is not None:
            self.doc.calibration = result["calibration"]
        if new_cache or kind in ("calibrate", "sensitivity"):  # saved in the project: unsaved until a save
            self.doc.note_new_results()
        self.succeeded.emit(kind, result)

    def _note_choice(self, result: dict) -> dict:
        """A Ctrl+F5 choice that succeeded: a later F5 calibrates what it chose (settled), and it is the choice
        applied last when the window applies it (the recipe was not edited while it ran). Skipped on a recipe
        that holds the choice applied last: ``skipped`` says so (:func:`after_choice_text`), not that the
        recipe "sets rules, overrides or op types" as if they were all the user's."""
        started = result.get("started_recipe")
        if not result.get("skipped"):
            self.settle(started, result.get("recipe"))
            if started == self.doc.recipe.to_json():  # the window applies it (app_window._apply_choice)
                self.applied_choice = AppliedChoice(result.get("label") or result["chosen"],
                                                    api.Recipe.model_validate_json(result["recipe"]))
            return result
        applied = self.applied_choice
        if applied is not None and started is not None:
            recipe = api.Recipe.model_validate_json(started)
            if holds_choice(recipe, applied.recipe):
                return {**result, "skipped": after_choice_text(applied, recipe)}
        return result

    def _settle_choice(self) -> None:
        """A calibration applied its recipe choice: the recipe as it left it (the choice's rules and the units its
        latency check kept float, all the app's own edits) is what later edits are counted against, and a later
        F5 calibrates it as it is."""
        self.applied_choice = AppliedChoice(self.applied_choice.label, self.doc.recipe.model_copy(deep=True))
        self.settle(self.doc.recipe)

    def _forget_choice(self) -> None:
        self.applied_choice = None

    def _forget_analysis(self) -> None:
        self._analysed = None

    def _note_analysed(self, result: dict) -> None:
        """Remember the inputs of the figures a calibrate job just gave the document (:meth:`analysis_inputs`),
        when they are the document's: the recipe it ran is the document's, on its rows, with its
        analysis samples and its calibration cache."""
        self._analysed = None
        if (result.get("recipe") == self.doc.recipe.to_json() and self.doc.results_current
                and self._analysing == self.analysis_samples
                and same_cache(result.get("calibration"), self.doc.calibration)):
            self._analysed = self.analysis_inputs()

    def _on_finished(self, kind: str) -> None:
        job, self.job, self.kind = self.job, None, ""
        self._cancelling = None
        if job is not None:
            job.deleteLater()
        self.finished.emit(kind)

    # ------------------------------------------------------------------ histogram
    def histogram(self, tensor: str, *, inputs: list[str] | None = None, weight: str | None = None,
                  weight_qparams: dict | None = None, channel: int | None = None) -> Job | None:
        """Histogram of ``tensor`` on a few calibration samples (replaces a running one); with the unit's activation
        ``inputs`` (the same runs) and its ``weight`` (``weight_qparams``: the grid it is written with, QParams JSON;
        ``channel``: the channel of a per-channel weight drawn over it), :func:`workbench.core.jobs.job_histogram`."""
        if self.doc.model is None or not self.doc.data:
            return None
        if self.hist_job is not None:
            self.hist_job.cancel()
        payload = self.doc.payload(tensor=tensor, samples=min(HISTOGRAM_SAMPLES, self.doc.samples or HISTOGRAM_SAMPLES),
                                   inputs=list(inputs or []), weight=weight, weight_qparams=weight_qparams,
                                   channel=channel)
        job = ProcessJob("histogram", payload, title=f"Histogram of {tensor}", grace=0.5, parent=self)
        self.hist_job = job
        job.succeeded.connect(self.histogramReady)
        job.failed.connect(lambda err: self._hist_failed(job, tensor, err))
        job.finished.connect(lambda: self._hist_finished(job))
        job.start()
        return job

    def _hist_failed(self, job: Job, tensor: str, err) -> None:
        log.warning("histogram of %s failed: %s", tensor, err)
        if self.hist_job is job:  # not one replaced by a newer request
            self.histogramFailed.emit(tensor, (str(getattr(err, "message", err)).splitlines() or ["unknown error"])[0])

    def _hist_finished(self, job: Job) -> None:
        if self.hist_job is job:
            self.hist_job = None
        job.deleteLater()

    # ------------------------------------------------------------------ shutdown
    def shutdown(self, timeout_ms: int = 15_000) -> None:
        """Cancel every job and wait for its thread (called when the window closes). A file job's result that
        comes after this cancel is dropped: no window is left to show it or to start the work it would start."""
        for job in (self.job, self.hist_job):
            if job is not None and job.running:
                job.keeps_late_result = False
                job.cancel()
                job.wait(timeout_ms)
