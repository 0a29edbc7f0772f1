"""Writer passes: the writer of the plan's mode, then the bias corrections that re-write it."""

from __future__ import annotations

from dataclasses import replace

from workbench.core.data.loader import sample_batches
from workbench.core.model.load import PreparedModel
from workbench.core.pipeline.passes import Job, PassResult
from workbench.core.pipeline.plan_passes import job_facts
from workbench.core.recipe.spec import PlanMode
from workbench.core.transforms.bias_correction import bias_shifts, corrected_proto
from workbench.core.transforms.constant_input_bias import constant_input_shifts
from workbench.core.writers.bias_patch import patch_biases
from workbench.core.writers.registry import write_model


class Write:
    """Write the plan with the writer registered for its mode (:mod:`workbench.core.writers.registry`)."""

    name = "write"

    def applies(self, job: Job) -> bool:
        return True

    def run(self, job: Job) -> PassResult:
        # quantized weights kept between the writes of one model (the job's re-runs, the recipe choice's scores)
        job.written = write_model(job.model, job.plan, job.qparams, check=job.check,
                                  weights=job_facts(job).quantized_weights)
        job.written_from = job.model
        return PassResult(True)


def _rewrite(job: Job, shifts: dict) -> PassResult:
    """Write the plan again from a copy of the model whose Conv biases absorb ``shifts``: the corrected int32
    biases put into the model written (:func:`~workbench.core.writers.bias_patch.patch_biases`, the same bytes),
    or, where that does not apply, a second write."""
    if not shifts:
        return PassResult(False)
    fixed = corrected_model(job.model, shifts)
    job.written = patch_biases(job.written, fixed, shifts) or write_model(fixed, job.plan, job.qparams, check=job.check)
    job.written_from = fixed
    return PassResult(True)


def corrected_model(model: PreparedModel, shifts: dict) -> PreparedModel:
    """``model`` with ``bias -= shift`` for each bias initializer in ``shifts`` (:func:`corrected_proto`), as
    :func:`~workbench.core.model.load.prepare_proto` prepared it before, without preparing the copy again:
    ``model.proto`` is prepared already (names unique, Constants lifted, BatchNormalization folded, shapes
    inferred), so that found nothing to change and only cost the graph passes and a shape inference per
    write (8 in nudenet_320n's recipe choice). Its value_info counts as declared, as that copy's did, so
    the writer keeps it (the same bytes written)."""
    proto = corrected_proto(model.proto, shifts)
    return replace(model, proto=proto, renames=[], notes=[], quantized_nodes=[], quantized=[], ambiguous_names={},
                   external_data_files=[], lifted_constants=0, original_opset=model.opset,
                   declared_value_info=frozenset(vi.name for vi in proto.graph.value_info))


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
