"""Model passes: checks and rewrites of the float model before planning."""

from __future__ import annotations

from workbench.core.data.loader import sample_batches
from workbench.core.errors import WorkbenchError
from workbench.core.inspection.already_quantized import ensure_float_model
from workbench.core.model.load import prepare_proto
from workbench.core.pipeline.passes import Job, PassResult
from workbench.core.recipe.presets import get_preset
from workbench.core.recipe.spec import PlanMode
from workbench.core.transforms import smoothquant as sq


class RefuseQuantized:
    """Stop on an already-quantized model (AlreadyQuantizedError names how it is quantized)."""

    name = "refuse-quantized"

    def applies(self, job: Job) -> bool:
        return True

    def run(self, job: Job) -> PassResult:
        ensure_float_model(job.model)
        return PassResult(False)


class SmoothQuant:
    """SmoothQuant scale migration (:mod:`workbench.core.transforms.smoothquant`) on a copy of the
    model; the inserted ``Mul(X, 1/s)`` nodes are excluded, since quantizing their input would undo
    the migration."""

    name = "smoothquant"

    def applies(self, job: Job) -> bool:
        return job.recipe.smoothquant is not None and get_preset(job.recipe.preset).mode == PlanMode.STATIC

    def run(self, job: Job) -> PassResult:
        spec, model = job.recipe.smoothquant, job.model
        if job.data is None:
            raise WorkbenchError("The recipe's smoothquant step needs calibration data (per-channel input ranges).",
                                 hint="Pass --data FILE.npz, or remove 'smoothquant' from the recipe.")
        nodes = sq.smoothable(model.proto, spec.op_types, spec.exclude)
        if nodes:
            absmax = sq.activation_absmax(model.proto, nodes, sample_batches(model, job.data, job.samples),
                                          cancel=job.cancel)
            proto = sq.smooth_proto(model.proto, absmax, spec.alpha)
            model = prepare_proto(proto, path=model.path, sha256=model.sha256)
        job.model = job.smoothed = model
        job.recipe = job.recipe.model_copy(update={"exclude": [*job.recipe.exclude, "*" + sq.SUFFIX]})
        return PassResult(bool(nodes))
