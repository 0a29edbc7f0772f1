"""The pass interface of the quantize pipeline: a :class:`Job` that passes read and change, and
the :class:`PassResult` each returns (in the spirit of onnx_ir's ``PassBase`` -> ``PassResult``).

A pass is an object with a ``name``, ``applies(job) -> bool`` and ``run(job) -> PassResult``.
:func:`run_passes` runs a list of them in order; the issues each raises are kept in order in
``job.issues`` and ``job.history`` records ``(pass name, modified)`` for every pass that ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from workbench.core.calibration.calibrate import CalibrationResult
from workbench.core.formats.qparams import QParams
from workbench.core.issues import PlanIssue
from workbench.core.model.load import PreparedModel
from workbench.core.planning.plan import GraphFacts, QuantPlan
from workbench.core.progress import CancelToken, ProgressFn
from workbench.core.recipe.recipe import Recipe
from workbench.core.runtime.latency import LatencyComparison
from workbench.core.transforms.bias_correction import InputMeans
from workbench.core.writers.qdq import QdqResult


@dataclass
class Job:
    """The state of one quantize run.

    ``model`` and ``recipe`` are what later passes plan and write with: model passes may replace
    the model (``smoothed`` keeps the rewritten copy) and add exclusions to the recipe;
    ``user_recipe`` is the recipe as given (plus the exclusions measured by the latency
    placement, which a saved project must replay). ``guard_recipe`` is ``recipe`` plus the exclusions
    of the guards that ran before calibration. ``input_model`` is the model as given (latency is
    measured against it); ``latency`` is what the latency check measured.
    """

    model: PreparedModel
    recipe: Recipe
    user_recipe: Recipe
    data: Any = None
    samples: int | None = None
    progress: ProgressFn | None = None
    cancel: CancelToken | None = None
    previous: CalibrationResult | None = None
    guard: bool = True
    bias_correction: bool = False
    latency_check: bool = False
    #: run onnx.checker on the written model (False: only scored in onnxruntime, which validates it)
    check: bool = True
    input_model: PreparedModel | None = None
    plan: QuantPlan | None = None
    guard_recipe: Recipe | None = None
    calibration: CalibrationResult | None = None
    qparams: dict[str, QParams] = field(default_factory=dict)
    written: QdqResult | None = None
    #: the model ``written`` was written from: ``model``, or a copy whose Conv biases absorbed a bias correction
    written_from: PreparedModel | None = None
    smoothed: PreparedModel | None = None
    latency: LatencyComparison | None = None
    issues: list[PlanIssue] = field(default_factory=list)
    history: list[tuple[str, bool]] = field(default_factory=list)
    #: graph analyses shared by the job's plans (:func:`workbench.core.pipeline.plan_passes.job_facts`)
    graph_facts: GraphFacts | None = None
    #: units the latency placement kept float, and ``user_recipe`` as it was before
    placed_float: list[str] = field(default_factory=list)
    placement_recipe: Recipe | None = None
    #: units the latency placement measured slower but quantized to keep its int8 share (a re-run of the job with
    #: its exclusions, the latency fallback's trial, takes them as decided), and its note on them
    placement_capped: list[str] = field(default_factory=list)
    placement_notes: list[PlanIssue] = field(default_factory=list)
    #: bias correction's Conv input means on ``data`` / ``samples``, shared with the job's re-runs (the
    #: latency fallback's trials, the placement guard's run) and with the recipe choice's scores
    bias_means: InputMeans = field(default_factory=InputMeans)
    #: the latency check measures a written model with no unit quantized too (the latency fallback's trials: the
    #: every-island-float one's figure is its note on the model written); otherwise such a model, the float model
    #: again, is not timed
    time_float: bool = False


    def adopt(self, other: Job) -> None:
        """Take over what ``other`` (the same job run again with another recipe) planned, calibrated,
        wrote and measured (:data:`ADOPTED`)."""
        for name in ADOPTED:
            setattr(self, name, getattr(other, name))


#: Fields of a :class:`Job` that a re-run of it (the latency fallback's trials, the placement guard's
#: placement-free run) replaces when it is kept.
ADOPTED = ("model", "recipe", "user_recipe", "plan", "guard_recipe", "calibration", "qparams", "written",
           "written_from", "smoothed", "latency", "graph_facts")


@dataclass
class PassResult:
    """What a pass did: whether it changed the job's model, plan or output, and the issues it raised."""

    modified: bool
    issues: list[PlanIssue] = field(default_factory=list)


class Pass(Protocol):
    """One step of the pipeline."""

    name: str

    def applies(self, job: Job) -> bool: ...

    def run(self, job: Job) -> PassResult: ...


def run_passes(job: Job, passes: Sequence[Pass]) -> Job:
    """Run ``passes`` in order on ``job`` (each only where it ``applies``); returns ``job``."""
    for p in passes:
        if not p.applies(job):
            continue
        result = p.run(job)
        job.issues.extend(result.issues)
        job.history.append((p.name, result.modified))
    return job
