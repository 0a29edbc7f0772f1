"""Writer passes: the writer of the plan's mode, then the bias corrections that re-write it."""

from __future__ import annotations

from workbench.core.data.loader import sample_batches
from workbench.core.model.load import prepare_proto
from workbench.core.pipeline.passes import Job, PassResult
from workbench.core.recipe.spec import PlanMode
from workbench.core.transforms.bias_correction import bias_shifts, corrected_proto
from workbench.core.transforms.constant_input_bias import constant_input_shifts
from workbench.core.writers.registry import write_model


class Write:
    """Write the plan with the writer registered for its mode (:mod:`workbench.core.writers.registry`)."""

    name = "write"

    def applies(self, job: Job) -> bool:
        return True

    def run(self, job: Job) -> PassResult:
        job.written = write_model(job.model, job.plan, job.qparams, check=job.check)
        job.written_from = job.model
        return PassResult(True)


def _rewrite(job: Job, shifts: dict) -> PassResult:
    """Write the plan again from a copy of the model whose Conv biases absorb ``shifts``."""
    if not shifts:
        return PassResult(False)
    model = job.model
    fixed = prepare_proto(corrected_proto(model.proto, shifts), path=model.path, sha256=model.sha256)
    job.written = write_model(fixed, job.plan, job.qparams, check=job.check)
    job.written_from = fixed
    return PassResult(True)


class BiasCorrection:
    """General bias correction (recipe ``bias_correction``, :mod:`workbench.core.transforms.bias_correction`):
    each Conv bias absorbs the mean output shift of its weight's and its input's rounding on the calibration data."""

    name = "bias-correction"

    def applies(self, job: Job) -> bool:
        return job.bias_correction and job.plan.mode == PlanMode.STATIC and job.data is not None

    def run(self, job: Job) -> PassResult:
        batches = sample_batches(job.model, job.data, job.samples)
        return _rewrite(job, bias_shifts(job.model, job.plan, job.written.proto, batches, means=job.bias_means))


class ConstantInputBias:
    """Convs whose input is a constant (a zero-range calibrated tensor) absorb their exact
    weight-rounding shift (:mod:`workbench.core.transforms.constant_input_bias`); not after
    general bias correction, which covers them."""

    name = "constant-input-bias"

    def applies(self, job: Job) -> bool:
        return job.calibration is not None and not BiasCorrection().applies(job)

    def run(self, job: Job) -> PassResult:
        return _rewrite(job, constant_input_shifts(job.model, job.plan, job.written.proto, job.calibration.observers))
