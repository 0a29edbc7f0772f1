"""Placement guard: undo the latency placement when the units it kept float cost output SQNR.

Keeping a unit float usually makes the model closer to float, but not always. A changed plan can
move calibrated ranges by a few percent (it was calibrated in other batch sizes before histograms
took their grid from the first batch alone; it still fetches other tensors beside each one, which
changes onnxruntime's fusions and some values by an ulp), and some models are that sensitive: ppocrv4_rec (its recipe choice, Conv/MatMul only) scores 0.97 exact match with
all 51 units quantized and 0.88 with the same plan whose MSE ranges moved by up to 3 % (calibration
reused from another plan); with the 8 depthwise Convs its probes kept float (1.06-1.47x) it scored
0.80, output SQNR 8.1 dB against 13.4 on calibration samples.

Runs after the model is written when the latency placement kept any unit float. The job is written
again with the recipe as it was before the placement (calibrated as that job would be on its own),
both models and the float model run on the first
:data:`ROWS` calibration samples, and when the placement's output SQNR is more than
:data:`MARGIN_DB` below the other's, the other is kept, reported as ``IssueCode.PLACEMENT_UNDONE``.
Output SQNR: ``10 log10(sum f^2 / sum (f - q)^2)`` over every graph output and row.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from workbench.core.data.loader import open_data_source
from workbench.core.issues import IssueCode, PlanIssue, Severity
from workbench.core.pipeline.passes import Job, Pass, PassResult, run_passes
from workbench.core.progress import in_phase, no_progress, one_step
from workbench.core.runtime.session import make_session
from workbench.core.wording import count

#: Calibration samples both placements are compared on.
ROWS = 8
#: dB of output SQNR the placement may cost before it is undone: two plans calibrated apart (then in
#: different batch sizes) differed by about 1 dB from their ranges alone (minilm_l6_v2 with its 12 attention
#: MatMuls float: 12.9 against 13.9 dB), ppocrv4_rec's harmful placement cost 5.3 dB.
MARGIN_DB = 3.0


#: Bytes of float outputs the guard keeps for its two scores (the float model then runs once per row, not once
#: per score); above it the float model runs again for the second score, so memory stays flat in the output size.
REF_BYTES = 64 * 2**20


def float_outputs(float_model, feeds: list[dict[str, np.ndarray]], *, budget: int = REF_BYTES) -> list | None:
    """The outputs of ``float_model`` (``onnx.ModelProto``) on each of ``feeds``, one list of arrays per feed (in
    the model's output order), as :func:`output_sqnr` takes them; None once they pass ``budget`` bytes."""
    f, refs, held = make_session(float_model), [], 0
    for feed in feeds:
        refs.append(f.run(None, feed))
        held += sum(np.asarray(a).nbytes for a in refs[-1])
        if held > budget:
            return None
    return refs


def output_sqnr(float_model, quant_model, feeds: list[dict[str, np.ndarray]], *, refs: list | None = None) -> float:
    """SQNR in dB of ``quant_model``'s outputs against ``float_model``'s (``onnx.ModelProto``) over
    ``feeds`` (every output, every feed; inf when they are equal). ``refs``: the float model's outputs on
    ``feeds`` (:func:`float_outputs`), when already computed; None runs it here."""
    q = make_session(quant_model)
    f = make_session(float_model) if refs is None else None
    sig = err = 0.0
    for k, feed in enumerate(feeds):
        ref = refs[k] if refs is not None else f.run(None, feed)
        for a, b in zip(ref, q.run(None, feed), strict=True):
            a64 = np.asarray(a, np.float64)
            sig += float(np.sum(a64 * a64))
            err += float(np.sum((a64 - np.asarray(b, np.float64)) ** 2))
    return math.inf if err == 0.0 else 10.0 * math.log10(sig / err) if sig > 0 else -math.inf


class PlacementGuard:
    """Undo the latency placement when it cost output SQNR (see the module docstring)."""

    name = "placement-guard"

    def __init__(self, passes: Callable[[], Sequence[Pass]]):
        self._passes = passes

    def applies(self, job: Job) -> bool:
        return (job.latency_check and bool(job.placed_float) and job.placement_recipe is not None
                and job.written is not None and job.data is not None)

    def run(self, job: Job) -> PassResult:
        base = job.input_model or job.model
        # calibrated as a job without the latency check would be (from ``previous`` where it covers
        # the plan), not from the placed plan's ranges: those can differ a little (module docstring)
        progress = job.progress or no_progress
        written = one_step(progress, "Placement guard: writing the plan without the placement")
        trial = Job(base, job.placement_recipe, job.placement_recipe, data=job.data, samples=job.samples,
                    progress=in_phase(progress, "Placement guard: writing the plan without the placement"),
                    cancel=job.cancel, previous=job.previous, guard=job.guard,
                    bias_correction=job.bias_correction, input_model=job.input_model, bias_means=job.bias_means)
        run_passes(trial, self._passes())  # no latency check: the placement does not run again
        written()
        if trial.written is None:
            return PassResult(False)
        feeds = list(open_data_source(job.data, base).samples(ROWS))
        scoring = "Placement guard: output SQNR with and without the placement"
        progress(0, 2, scoring)
        refs = float_outputs(base.proto, feeds)  # the float model runs once for both scores (within REF_BYTES)
        placed = output_sqnr(base.proto, job.written.proto, feeds, refs=refs)
        progress(1, 2, scoring)
        free = output_sqnr(base.proto, trial.written.proto, feeds, refs=refs)
        progress(2, 2, scoring)
        if not placed < free - MARGIN_DB:
            return PassResult(False)
        undone = list(job.placed_float)
        job.adopt(trial)  # its latency is None too: the check runs after this pass
        job.issues = list(trial.issues)
        job.placed_float = []
        shown = ", ".join(undone[:4]) + (f" and {len(undone) - 4} more" if len(undone) > 4 else "")
        return PassResult(True, [PlanIssue(undone[0], Severity.WARNING, (
            f"latency placement undone: keeping {count(len(undone), 'unit')} float ({shown}) lowered the output "
            f"SQNR from {free:.1f} to {placed:.1f} dB on {count(len(feeds), 'calibration sample')}; the units stay "
            "quantized as the recipe asks (exclude them in the recipe to keep them float anyway)"),
            code=IssueCode.PLACEMENT_UNDONE)])
