"""The quantize pipeline: model passes, plan passes (guards), calibration, writer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import onnx

from workbench.core.calibration.calibrate import calibrate as _calibrate
from workbench.core.data.loader import open_data_source, sample_batches
from workbench.core.errors import ModelError, WorkbenchError
from workbench.core.formats.qparams import QParams
from workbench.core.issues import PlanIssue
from workbench.core.model.load import PreparedModel, ensure_float_model, prepare_proto
from workbench.core.planning.island_guard import float_islands
from workbench.core.planning.opset_fit import fit_opset
from workbench.core.planning.plan import build_plan
from workbench.core.planning.range_guard import disparate_concats, sentinel_units
from workbench.core.progress import CancelToken, ProgressFn
from workbench.core.recipe.presets import get_preset
from workbench.core.recipe.recipe import Recipe
from workbench.core.transforms import smoothquant as sq
from workbench.core.transforms.bias_correction import bias_shifts, corrected_proto
from workbench.core.transforms.constant_input_bias import constant_input_shifts
from workbench.core.transforms.smoothquant import SUFFIX as SMOOTH_SUFFIX
from workbench.core.writers.registry import write_model


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
    issues : list
        Plan and writer issues (never silent).
    recipe : Recipe
        The recipe used.
    float_model : PreparedModel or None
        The float model ``proto`` was quantized from when it differs from the input model (the
        SmoothQuant-rewritten copy); errors are measured against it.
    """

    proto: onnx.ModelProto
    plan: Any
    calibration: Any
    qparams: dict[str, QParams]
    tensor_map: dict[str, str]
    issues: list = field(default_factory=list)
    recipe: Recipe | None = None
    float_model: PreparedModel | None = None


def plan(model: PreparedModel, recipe: Recipe, *, guard: bool = False):
    """Resolve ``recipe`` against ``model`` -> QuantPlan (units, activations, issues).

    Units whose dtypes need an opset the model cannot be converted to are excluded and reported
    (:mod:`workbench.core.planning.opset_fit`), so the plan says what the written model will hold.
    ``guard=True`` also keeps element-wise islands float as :func:`quantize` does by default
    (:mod:`workbench.core.planning.island_guard`; its notes are added to ``issues``), so an app shows
    before calibration the units that will really be quantized.
    """
    the_plan = fit_opset(model, recipe, build_plan(model, recipe), build_plan)
    if guard:
        the_plan, _, notes = _guard_islands(model, recipe, the_plan)
        the_plan.issues = list(the_plan.issues) + notes
    return the_plan


def calibrate(model: PreparedModel, the_plan, data: Any, *, samples: int | None = None,
              progress: ProgressFn | None = None, cancel: CancelToken | None = None, previous=None):
    """Run calibration of ``the_plan``'s activation tensors over ``data``."""
    source = open_data_source(data, model)
    return _calibrate(model, the_plan, source, samples=samples, progress=progress, cancel=cancel,
                      previous=previous)


def quantize(model: PreparedModel, recipe: Recipe, *, data: Any = None, samples: int | None = None,
             calibration=None, progress: ProgressFn | None = None,
             cancel: CancelToken | None = None, guard: bool = True,
             bias_correction: bool = False) -> QuantizeResult:
    """Plan, calibrate (static recipes) and write the quantized model in memory.

    Parameters
    ----------
    data : path, dict or DataSource, optional
        Calibration data; required for static recipes unless ``calibration`` covers every tensor.
    samples : int, optional
        Use at most this many calibration samples.
    calibration : CalibrationResult, optional
        A previous result; observers whose spec is unchanged are reused.
    guard : bool
        Keep units on sentinel-valued tensors and disparate Concats in float (reported; see
        :mod:`workbench.core.planning.range_guard`), and element-wise units that reach no quantized
        compute unit (:mod:`workbench.core.planning.island_guard`). False quantizes exactly what the recipe says.

    Raises
    ------
    AlreadyQuantizedError, DataError, RecipeError, CalibrationError, Cancelled
    """
    ensure_float_model(model)
    smoothed, user_recipe = None, recipe
    if recipe.smoothquant is not None and get_preset(recipe.preset).mode == "static":
        model = smoothed = _smoothed(model, recipe, data, samples, cancel)
        # the inserted Mul(X, 1/s) nodes stay float: quantizing their input would undo the migration
        recipe = recipe.model_copy(update={"exclude": [*recipe.exclude, "*" + SMOOTH_SUFFIX]})
    the_plan = plan(model, recipe)
    _refuse_float16_only(model, the_plan)
    guard_recipe, island_issues = recipe, []
    if guard:
        the_plan, guard_recipe, island_issues = _guard_islands(model, recipe, the_plan)
    qparams: dict[str, QParams] = {}
    calib = None
    if the_plan.mode == "static" and the_plan.activations:
        if data is None and calibration is None:
            raise WorkbenchError(f"Recipe preset {recipe.preset!r} needs calibration data.",
                                 hint="Pass --data FILE.npz (or a folder of images), or use --preset dynamic-u8.")
        if data is None:
            calib = calibration
        else:
            calib = calibrate(model, the_plan, data, samples=samples, progress=progress, cancel=cancel,
                              previous=calibration)
        qparams = calib.qparams()
        guard_issues = []
        if guard:
            the_plan, calib, qparams, guard_issues = _guard_sentinels(model, guard_recipe, the_plan, calib,
                                                                      qparams, data, samples, progress, cancel)
        missing = [t for t in the_plan.activations if t not in qparams]
        if missing:
            raise WorkbenchError(f"No calibration ranges for {len(missing)} tensors (e.g. {missing[0]!r}).",
                                 hint="Calibrate again with data for the current recipe.")
    else:
        guard_issues = []
    res = write_model(model, the_plan, qparams)
    if bias_correction and the_plan.mode == "static" and data is not None:
        res = _bias_corrected(model, the_plan, qparams, res, data, samples)
    elif calib is not None:
        res = _constant_input_corrected(model, the_plan, qparams, res, calib)
    issues = list(getattr(the_plan, "issues", [])) + island_issues + guard_issues + list(getattr(res, "issues", []))
    return QuantizeResult(res.proto, the_plan, calib, qparams, dict(getattr(res, "tensor_map", {})),
                          issues, user_recipe, smoothed)


def _smoothed(model: PreparedModel, recipe: Recipe, data: Any, samples: int | None, cancel) -> PreparedModel:
    """A copy of ``model`` with SmoothQuant scale migration (see :mod:`workbench.core.transforms.smoothquant`)."""
    spec = recipe.smoothquant
    if data is None:
        raise WorkbenchError("The recipe's smoothquant step needs calibration data (per-channel input ranges).",
                             hint="Pass --data FILE.npz, or remove 'smoothquant' from the recipe.")
    nodes = sq.smoothable(model.proto, spec.op_types, spec.exclude)
    if not nodes:
        return model
    absmax = sq.activation_absmax(model.proto, nodes, sample_batches(model, data, samples), cancel=cancel)
    proto = sq.smooth_proto(model.proto, absmax, spec.alpha)
    return prepare_proto(proto, path=model.path, sha256=model.sha256)


def _refuse_float16_only(model: PreparedModel, the_plan) -> None:
    """Stop when nothing can be quantized because the model computes in float16 (case 17): a
    "quantized" model identical to the input would only look like success."""
    if any(not u.excluded for u in the_plan.units.values()):
        return
    fp16 = sorted({i.node for i in the_plan.issues if "16-bit float" in i.message})
    if fp16:
        raise ModelError(f"{model.name}: nothing can be quantized because the model computes in 16-bit float "
                         f"(nodes {', '.join(fp16[:5])}{' ...' if len(fp16) > 5 else ''}).",
                         hint="Convert the model to fp32 first (e.g. onnxconverter-common's float16 -> float32 "
                              "conversion, or re-export in fp32), then quantize the fp32 model.")


def _bias_corrected(model, the_plan, qparams, res, data, samples):
    """Re-write ``the_plan`` from a copy of ``model`` whose Conv biases absorb the weight-rounding shift."""
    shifts = bias_shifts(model, the_plan, res.proto, sample_batches(model, data, samples))
    if not shifts:
        return res
    fixed = prepare_proto(corrected_proto(model.proto, shifts), path=model.path, sha256=model.sha256)
    return write_model(fixed, the_plan, qparams)


def _constant_input_corrected(model, the_plan, qparams, res, calib):
    """Re-write with Conv biases absorbing the weight-rounding shift on constant inputs (constant_bias)."""
    shifts = constant_input_shifts(model, the_plan, res.proto, calib.observers)
    if not shifts:
        return res
    fixed = prepare_proto(corrected_proto(model.proto, shifts), path=model.path, sha256=model.sha256)
    return write_model(fixed, the_plan, qparams)


def _guard_islands(model, recipe, the_plan):
    """Re-plan with element-wise units that reach no quantized Conv/MatMul/Gemm kept float (see island_guard)."""
    found = float_islands(the_plan)
    if not found:
        return the_plan, recipe, []
    guarded = recipe.with_excluded(found)
    issues = [PlanIssue(node, "info", "kept in float: it reaches no quantized Conv/MatMul/Gemm"
                        + (f" (nor do {', '.join(repr(o) for o in others[:3])})" if others else "")
                        + ", so onnxruntime gains no integer kernel and quantizing would only add rounding; "
                        "name the node in an override to quantize it anyway")
              for node, others in found.items()]
    return plan(model, guarded), guarded, issues


def _guard_sentinels(model, recipe, the_plan, calib, qparams, data, samples, progress, cancel):
    """Re-plan with units on sentinel-valued tensors (attention masks) kept float; see range_guard."""
    found = sentinel_units(the_plan, qparams)
    concats = {n: v for n, v in disparate_concats(the_plan, qparams).items() if n not in found}
    if not found and not concats:
        return the_plan, calib, qparams, []
    guarded = recipe.with_excluded(list(found) + list(concats))
    new_plan = plan(model, guarded)
    if any(t not in qparams for t in new_plan.activations):
        calib = calibrate(model, new_plan, data, samples=samples, progress=progress, cancel=cancel,
                          previous=calib) if data is not None else calib
        qparams = calib.qparams()
    issues = [PlanIssue(node, "warning", f"kept in float: tensor {t!r} reaches |{v:.3g}| (a mask or "
                        f"sentinel value); an integer grid over that range would erase the real values")
              for node, (t, v) in found.items()]
    issues += [PlanIssue(node, "warning", f"kept in float: its inputs' ranges differ {r:.0f}x (smallest: {t!r}); "
                         "one shared 8-bit grid would erase the small-range input") for node, (t, r) in concats.items()]
    return new_plan, calib, qparams, issues


