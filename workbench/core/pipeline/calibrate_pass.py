"""The calibration pass: stream the data through the instrumented model into the observers."""

from __future__ import annotations

from typing import Any

from workbench.core.calibration.calibrate import CalibrationResult, respec, unserved
from workbench.core.calibration.calibrate import calibrate as run_calibration
from workbench.core.data.base import DataSource
from workbench.core.data.loader import open_data_source
from workbench.core.data.validate import cast_notes
from workbench.core.errors import WorkbenchError
from workbench.core.issues import IssueCode, PlanIssue, Severity
from workbench.core.model.load import PreparedModel
from workbench.core.pipeline.passes import Job, PassResult
from workbench.core.planning.plan import QuantPlan
from workbench.core.progress import CancelToken, ProgressFn
from workbench.core.recipe.spec import PlanMode


def calibrate(model: PreparedModel, the_plan: QuantPlan, data: Any, *, samples: int | None = None,
              progress: ProgressFn | None = None, cancel: CancelToken | None = None,
              previous: CalibrationResult | None = None) -> CalibrationResult:
    """Run calibration of ``the_plan``'s activation tensors over ``data`` (a path, a JSON spec
    dict or a DataSource); observers of ``previous`` whose statistics still serve are reused
    (:func:`~workbench.core.calibration.calibrate.calibrate`)."""
    source = open_data_source(data, model)
    return run_calibration(model, the_plan, source, samples=samples, progress=progress, cancel=cancel,
                           previous=previous)


def require_data(job: Job) -> None:
    """Refuse a job this pass will need data for and has none (no data, no previous calibration): a static
    plan with activations. The latency placement asks first, so that it spends no probe on such a job.

    Raises
    ------
    WorkbenchError
        "Recipe preset 'P' needs calibration data." with the --data / --preset dynamic-u8 hint.
    """
    if job.plan.mode == PlanMode.STATIC and job.plan.activations and job.data is None and job.previous is None:
        raise WorkbenchError(f"Recipe preset {job.recipe.preset!r} needs calibration data.",
                             hint="Pass --data FILE.npz (or a folder of images), or use --preset dynamic-u8.")


class Calibrate:
    """Calibrate the plan's activations (static plans), or take them from a previous result
    when no data is given (re-specced for the current plan; CalibrationError when it lacks some)."""

    name = "calibrate"

    def applies(self, job: Job) -> bool:
        return job.plan.mode == PlanMode.STATIC and bool(job.plan.activations)

    def run(self, job: Job) -> PassResult:
        require_data(job)
        source = None
        if job.data is None:  # the cache, with the current recipe's specs (it may come from another recipe)
            job.calibration = respec(job.plan, job.previous)
        else:
            source = _source(job)
            job.calibration = calibrate(job.model, job.plan, source, samples=job.samples, progress=job.progress,
                                        cancel=job.cancel, previous=job.previous)
        job.qparams = job.calibration.qparams()
        return PassResult(True, cast_issues(source))


def _runs_code(data: Any) -> bool:
    """Whether the data spec (a path or a spec dict) is a Python reader: opening it runs its code."""
    spec = data if isinstance(data, dict) else {"path": data}
    return spec.get("kind") == "python" or str(spec.get("path", "")).lower().endswith(".py")


def _source(job: Job) -> Any:
    """The job's data opened (a DataSource, whose notes say what was cast), or as given when it is a Python
    reader the calibration will not run (``previous`` serves every tensor): opening it would run its code."""
    if isinstance(job.data, DataSource):
        return job.data
    if _runs_code(job.data) and job.previous is not None and not unserved(job.plan, job.previous):
        return job.data
    return open_data_source(job.data, job.model)


def data_cast_issues(data: Any, model: PreparedModel) -> list[PlanIssue]:
    """:func:`cast_issues` of calibration ``data`` (a path, spec dict or DataSource) for ``model``, for a
    job that calibrated through :func:`calibrate` and quantized without data (the app's calibrate job).
    Opening a .npz / .npy file reads its headers only; a Python reader is not opened (its code would run
    again): none for it.

    Raises
    ------
    DataError
        As opening the data raises it (a missing file, arrays that do not fit the model).
    """
    if data is None or (not isinstance(data, DataSource) and _runs_code(data)):
        return []
    return cast_issues(open_data_source(data, model))


def cast_issues(source: Any) -> list[PlanIssue]:
    """One info issue (:attr:`IssueCode.DATA_CAST`) per array of ``source`` (a DataSource; anything else
    gives none) cast to its model input's dtype, e.g. "calib.npz: array for input 'x' is float64, cast to
    float32.": the ranges were computed from the cast values."""
    notes = cast_notes(source.notes) if isinstance(source, DataSource) else []
    return [PlanIssue("", Severity.INFO, note, IssueCode.DATA_CAST) for note in dict.fromkeys(notes)]
