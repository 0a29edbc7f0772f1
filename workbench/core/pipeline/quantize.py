"""The quantize pipeline: model passes, plan passes (guards), calibration, writer passes.

:data:`QUANTIZE_PASSES` is the whole pipeline, in order; each pass is one small class with the
interface of :mod:`workbench.core.pipeline.passes`:

1. ``refuse-quantized``     already-quantized models are refused (model pass)
2. ``smoothquant``          SmoothQuant scale migration, when the recipe asks (model pass)
3. ``plan``                 the recipe resolved into a QuantPlan, opset fit included (plan pass)
4. ``refuse-float16-only``  nothing quantizable because the model is float16 (plan pass)
5. ``non-finite-guard``     units on tensors holding +-inf by construction kept float (``guard``)
6. ``island-guard``         element-wise islands kept float (plan pass, ``guard``)
7. ``latency-placement``    with ``latency_check``: Convs with one input channel per group (depthwise, single-channel
                            input), AveragePools and activation MatMuls whose int8 form measured slower kept float
8. ``calibrate``            activations observed on the calibration data (static plans)
9. ``sentinel-guard``       mask / sentinel tensors, tensors the model makes non-finite and disparate
                            Concats kept float (``guard``)
10. ``require-ranges``      every planned activation has a range
11. ``write``               the writer registered for the plan's mode
12. ``bias-correction``     recipe ``bias_correction``: Conv biases absorb the weight-rounding shift
13. ``constant-input-bias`` Convs on a constant input absorb their exact shift
14. ``placement-guard``     with ``latency_check``, when the placement kept units float: undone if that
                            cost more than 3 dB of output SQNR on calibration samples
15. ``latency-check``       with ``latency_check``: quantized vs float latency, a warning when slower
16. ``latency-fallback``    with ``latency_check``, when slower than float: islands whose Q/DQ did not pay
                            left float, the model written and measured again (a model that runs in
                            microseconds: every island float at once)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import onnx

from workbench.core.calibration.calibrate import CalibrationResult
from workbench.core.formats.qparams import QParams
from workbench.core.io.tensor_bytes import raw_bytes_kept
from workbench.core.issues import PlanIssue
from workbench.core.model.load import PreparedModel
from workbench.core.pipeline.calibrate_pass import Calibrate, calibrate
from workbench.core.pipeline.latency_check import LatencyCheck
from workbench.core.pipeline.latency_fallback import LatencyFallback
from workbench.core.pipeline.latency_placement import LatencyPlacement
from workbench.core.pipeline.model_passes import RefuseQuantized, SmoothQuant
from workbench.core.pipeline.passes import Job, Pass, run_passes
from workbench.core.pipeline.placement_guard import PlacementGuard
from workbench.core.pipeline.plan_passes import (
    IslandGuard,
    NonFiniteGuard,
    Plan,
    RefuseFloat16Only,
    RequireRanges,
    SentinelGuard,
    SizeGuard,
    guard_islands,
    resolve_plan,
)
from workbench.core.pipeline.write_passes import BiasCorrection, ConstantInputBias, Write
from workbench.core.planning.plan import GraphFacts, QuantPlan
from workbench.core.progress import CancelToken, ProgressFn
from workbench.core.recipe.recipe import Recipe
from workbench.core.runtime.latency import LatencyComparison
from workbench.core.transforms.bias_correction import InputMeans

__all__ = ["QUANTIZE_PASSES", "QuantizeResult", "calibrate", "plan", "quantize"]

#: The quantize pipeline, in order (see the module docstring). A new pass is a class plus a line here.
QUANTIZE_PASSES: list[Pass] = [
    RefuseQuantized(), SmoothQuant(), Plan(), RefuseFloat16Only(), NonFiniteGuard(), SizeGuard(), IslandGuard(),
    LatencyPlacement(),
    Calibrate(), SentinelGuard(), RequireRanges(), Write(), BiasCorrection(), ConstantInputBias(),
    PlacementGuard(lambda: QUANTIZE_PASSES), LatencyCheck(), LatencyFallback(lambda: QUANTIZE_PASSES[:-1]),
]


@dataclass
class QuantizeResult:
    """Outcome of :func:`quantize`.

    Attributes
    ----------
    proto : onnx.ModelProto
        The quantized model (not yet written; see :func:`export`).
    plan : QuantPlan
        The resolved plan (units, activation tensors, issues).
    calibration : CalibrationResult or None
        Observers after calibration (None for dynamic / weight-only recipes).
    qparams : dict[str, QParams]
        Activation tensor name -> quantization parameters used.
    tensor_map : dict[str, str]
        Float tensor name -> its fake-quantized (dequantized) tensor in ``proto``.
    issues : list of PlanIssue
        Plan, guard and writer issues, in that order (never silent).
    recipe : Recipe
        The recipe used.
    float_model : PreparedModel or None
        The float model ``proto`` was quantized from when it differs from the input model (the
        SmoothQuant-rewritten copy); errors are measured against it.
    passes : list of (str, bool)
        The passes that ran, in order, and whether each changed the job.
    latency : LatencyComparison or None
        Quantized vs float latency (onnxruntime CPU, 1 thread) when ``latency_check`` was asked.
    written_from : PreparedModel or None
        The float model ``proto`` was written from: the input model, its SmoothQuant copy, or a copy whose
        Conv biases absorbed a bias correction (``bias-correction``, ``constant-input-bias``); a QONNX
        export writes the plan again from it, so it holds the same weights and biases as ``proto``.
    input_model : PreparedModel or None
        The model :func:`quantize` was given: when ``proto`` quantizes nothing, a QDQ export writes its file as
        given instead of ``proto`` (:func:`workbench.core.pipeline.export.float_as_given`).
    """

    proto: onnx.ModelProto
    plan: QuantPlan
    calibration: CalibrationResult | None
    qparams: dict[str, QParams]
    tensor_map: dict[str, str]
    issues: list[PlanIssue] = field(default_factory=list)
    recipe: Recipe | None = None
    float_model: PreparedModel | None = None
    passes: list[tuple[str, bool]] = field(default_factory=list)
    latency: LatencyComparison | None = None
    written_from: PreparedModel | None = None
    input_model: PreparedModel | None = None


def plan(model: PreparedModel, recipe: Recipe, *, guard: bool = False, facts: GraphFacts | None = None) -> QuantPlan:
    """Resolve ``recipe`` against ``model`` -> QuantPlan (units, activations, issues).

    Units whose dtypes need an opset the model cannot be converted to are excluded and reported
    (:mod:`workbench.core.planning.opset_fit`), so the plan says what the written model will hold.
    ``guard=True`` also keeps element-wise islands float as :func:`quantize` does by default
    (:mod:`workbench.core.planning.island_guard`; its notes are added to ``issues``), so an app shows
    before calibration the units that will really be quantized. ``facts``: the graph analyses of an
    earlier plan of the same ``model`` (reused when its proto is ``model.proto``).
    """
    facts = facts if facts is not None and facts.proto is model.proto else GraphFacts(model.proto)
    the_plan = resolve_plan(model, recipe, facts)
    if guard:
        the_plan, _, notes = guard_islands(model, recipe, the_plan, facts)
        the_plan.issues = list(the_plan.issues) + notes
    return the_plan


def quantize(model: PreparedModel, recipe: Recipe, *, data: Any = None, samples: int | None = None,
             calibration: CalibrationResult | None = None, progress: ProgressFn | None = None,
             cancel: CancelToken | None = None, guard: bool = True,
             bias_correction: bool = False, latency_check: bool = False, check: bool = True,
             facts: GraphFacts | None = None, bias_means: InputMeans | None = None) -> QuantizeResult:
    """Run :data:`QUANTIZE_PASSES`: plan, calibrate (static recipes) and write the quantized model in memory.

    Parameters
    ----------
    data : path, dict or DataSource, optional
        Calibration data; required for static recipes unless ``calibration`` covers every tensor.
    samples : int, optional
        Use at most this many calibration samples.
    calibration : CalibrationResult, optional
        A previous result; observers whose statistics still serve are reused (the spec unchanged,
        or changed only in dtype, reduce_range or power_of_two).
    guard : bool
        Keep units on sentinel-valued tensors and disparate Concats in float (reported; see
        :mod:`workbench.core.planning.range_guard`), and element-wise units that reach no quantized
        compute unit (:mod:`workbench.core.planning.island_guard`). False quantizes exactly what the recipe says.
    bias_correction : bool
        Also apply general bias correction (the same as the recipe's ``bias_correction``).
    latency_check : bool
        Measure the written model against ``model`` in onnxruntime (CPU, 1 thread, the first
        calibration sample; cached per pair of models, about 2 s otherwise) and report the ratio
        (``IssueCode.LATENCY``) and a warning when it is slower than float
        (``IssueCode.SLOWER_THAN_FLOAT``); see :mod:`workbench.core.pipeline.latency_check`. Depthwise
        Convs whose integer kernel measured slower are kept float before calibration
        (:mod:`~workbench.core.pipeline.latency_placement`), and when the written model measured slower
        than float the islands whose Q/DQ did not pay are left float and the model written again (every
        island, without trials, when the slowdown is of microseconds:
        :mod:`~workbench.core.pipeline.latency_fallback`); both decisions are added to ``recipe``.
    check : bool
        Run onnx.checker on the written model. False is for callers that only load the model into
        onnxruntime to score it (the recipe choice), which validates the graph on load.
    facts : GraphFacts, optional
        The graph analyses of an earlier plan of ``model`` (:func:`plan` or another quantize of it),
        so several quantizes of one model analyse its graph once.
    bias_means : InputMeans, optional
        Bias correction's Conv input means from earlier quantizes of ``model`` on the same ``data`` and
        ``samples`` (:class:`~workbench.core.transforms.bias_correction.InputMeans`), so the float model
        runs only for tensors and grids they lack; filled in by this call.

    Raises
    ------
    AlreadyQuantizedError, DataError, RecipeError, CalibrationError, Cancelled
    """
    job = Job(model, recipe, recipe, data=data, samples=samples, progress=progress, cancel=cancel,
              previous=calibration, guard=guard, bias_correction=bias_correction or recipe.bias_correction,
              latency_check=latency_check, check=check, input_model=model, graph_facts=facts,
              bias_means=bias_means if bias_means is not None else InputMeans())
    with raw_bytes_kept(model.proto):  # each large weight read out of the float model once
        run_passes(job, QUANTIZE_PASSES)
    written = job.written
    return QuantizeResult(written.proto, job.plan, job.calibration, job.qparams, dict(written.tensor_map),
                          list(job.plan.issues) + job.issues + list(written.issues), job.user_recipe, job.smoothed,
                          list(job.history), job.latency, job.written_from, model)
