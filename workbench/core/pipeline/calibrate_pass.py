"""The calibration pass: stream the data through the instrumented model into the observers."""

from __future__ import annotations

from typing import Any

from workbench.core.calibration.calibrate import CalibrationResult, respec
from workbench.core.calibration.calibrate import calibrate as run_calibration
from workbench.core.data.loader import open_data_source
from workbench.core.errors import WorkbenchError
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


class Calibrate:
    """Calibrate the plan's activations (static plans), or take them from a previous result
    when no data is given (re-specced for the current plan; CalibrationError when it lacks some)."""

    name = "calibrate"

    def applies(self, job: Job) -> bool:
        return job.plan.mode == PlanMode.STATIC and bool(job.plan.activations)

    def run(self, job: Job) -> PassResult:
        if job.data is None and job.previous is None:
            raise WorkbenchError(f"Recipe preset {job.recipe.preset!r} needs calibration data.",
                                 hint="Pass --data FILE.npz (or a folder of images), or use --preset dynamic-u8.")
        if job.data is None:  # the cache, with the current recipe's specs (it may come from another recipe)
            job.calibration = respec(job.plan, job.previous)
        else:
            job.calibration = calibrate(job.model, job.plan, job.data, samples=job.samples, progress=job.progress,
                                        cancel=job.cancel, previous=job.previous)
        job.qparams = job.calibration.qparams()
        return PassResult(True)
