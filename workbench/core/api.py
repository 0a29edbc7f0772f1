"""The Python API: the same verbs as the CLI and the app's menus.

Typical use::

    from workbench.core import api
    model = api.open_model("model.onnx")
    recipe = api.make_recipe("cpu-u8s8")
    result = api.quantize(model, recipe, data="calib.npz", samples=128)
    api.export(result, "model.int8.onnx")
    report = api.evaluate(model, result.proto, "eval.npz")
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx

from workbench.core.errors import ModelError, RecipeError, WorkbenchError
from workbench.core.formats.numerics import QParams
from workbench.core.model.load import PreparedModel, load_model
from workbench.core.progress import CancelToken, ProgressFn
from workbench.core.recipe.presets import cpu_needs_reduce_range, get_preset
from workbench.core.recipe.recipe import Recipe, ResolvedNode, resolve_node

log = logging.getLogger(__name__)


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


def open_model(path: str | Path) -> PreparedModel:
    """Load and prepare a model (see :func:`workbench.core.model.load.load_model`)."""
    return load_model(path)


def make_recipe(preset: str = "cpu-u8s8", **fields: Any) -> Recipe:
    """A recipe starting from ``preset``, with ``reduce_range`` fixed for this CPU.

    Raises
    ------
    RecipeError
        Unknown preset or invalid fields.
    """
    get_preset(preset)
    fields.setdefault("reduce_range", cpu_needs_reduce_range())
    try:
        return Recipe(preset=preset, **fields)
    except Exception as exc:  # pydantic ValidationError
        raise RecipeError(f"Invalid recipe fields: {exc}", hint="Check the recipe options.") from None


def load_recipe(path: str | Path) -> Recipe:
    """Read a recipe JSON file (RecipeError naming the file on bad content)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RecipeError(f"{path}: cannot read recipe ({exc.strerror}).", hint="Check the path.") from None
    return Recipe.from_json(text, source=str(path))


def node_op_type(model: PreparedModel, node: str) -> str:
    for n in model.graph.node:
        if n.name == node:
            return n.op_type
    raise RecipeError(f"No node named {node!r} in {model.path or 'the model'}.",
                      hint="Use a name shown by `workbench-cli inspect`.")


def resolve(model: PreparedModel, recipe: Recipe, node: str) -> ResolvedNode:
    """Effective settings of ``node`` and where each came from."""
    return resolve_node(recipe, node, node_op_type(model, node))


def plan(model: PreparedModel, recipe: Recipe, *, guard: bool = False):
    """Resolve ``recipe`` against ``model`` -> QuantPlan (units, activations, issues).

    Units whose dtypes need an opset the model cannot be converted to are excluded and reported
    (:mod:`workbench.core.planning.opset_fit`), so the plan says what the written model will hold.
    ``guard=True`` also keeps element-wise islands float as :func:`quantize` does by default
    (:mod:`workbench.core.planning.island_guard`; its notes are added to ``issues``), so an app shows
    before calibration the units that will really be quantized.
    """
    from workbench.core.planning.opset_fit import fit_opset
    from workbench.core.planning.plan import build_plan

    the_plan = fit_opset(model, recipe, build_plan(model, recipe), build_plan)
    if guard:
        the_plan, _, notes = _guard_islands(model, recipe, the_plan)
        the_plan.issues = list(the_plan.issues) + notes
    return the_plan


def open_data_source(data: Any, model: PreparedModel):
    """A DataSource from a path, a JSON spec dict, or an existing DataSource."""
    from workbench.core.data.loader import DataSource, open_data

    if isinstance(data, DataSource):
        return data
    return open_data(data, model)


def calibrate(model: PreparedModel, the_plan, data: Any, *, samples: int | None = None,
              progress: ProgressFn | None = None, cancel: CancelToken | None = None, previous=None):
    """Run calibration of ``the_plan``'s activation tensors over ``data``."""
    from workbench.core.calibration.calibrate import calibrate as _calibrate

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
    from workbench.core.model.load import ensure_float_model
    from workbench.core.writers.qdq import write_model

    ensure_float_model(model)
    smoothed, user_recipe = None, recipe
    if recipe.smoothquant is not None and get_preset(recipe.preset).mode == "static":
        from workbench.core.transforms.smoothquant import SUFFIX as SMOOTH_SUFFIX

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
    from workbench.core.model.load import prepare_proto
    from workbench.core.transforms import smoothquant as sq

    spec = recipe.smoothquant
    if data is None:
        raise WorkbenchError("The recipe's smoothquant step needs calibration data (per-channel input ranges).",
                             hint="Pass --data FILE.npz, or remove 'smoothquant' from the recipe.")
    nodes = sq.smoothable(model.proto, spec.op_types, spec.exclude)
    if not nodes:
        return model
    absmax = sq.activation_absmax(model.proto, nodes, _batches(model, data, samples), cancel=cancel)
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
    from workbench.core.model.load import prepare_proto
    from workbench.core.transforms.bias_correction import bias_shifts, corrected_proto
    from workbench.core.writers.qdq import write_model

    shifts = bias_shifts(model, the_plan, res.proto, _batches(model, data, samples))
    if not shifts:
        return res
    fixed = prepare_proto(corrected_proto(model.proto, shifts), path=model.path, sha256=model.sha256)
    return write_model(fixed, the_plan, qparams)


def _constant_input_corrected(model, the_plan, qparams, res, calib):
    """Re-write with Conv biases absorbing the weight-rounding shift on constant inputs (constant_bias)."""
    from workbench.core.model.load import prepare_proto
    from workbench.core.transforms.bias_correction import corrected_proto
    from workbench.core.transforms.constant_input_bias import constant_input_shifts
    from workbench.core.writers.qdq import write_model

    shifts = constant_input_shifts(model, the_plan, res.proto, calib.observers)
    if not shifts:
        return res
    fixed = prepare_proto(corrected_proto(model.proto, shifts), path=model.path, sha256=model.sha256)
    return write_model(fixed, the_plan, qparams)


def _guard_islands(model, recipe, the_plan):
    """Re-plan with element-wise units that reach no quantized Conv/MatMul/Gemm kept float (see island_guard)."""
    from workbench.core.planning.island_guard import float_islands
    from workbench.core.planning.plan import PlanIssue

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
    from workbench.core.planning.plan import PlanIssue
    from workbench.core.planning.range_guard import disparate_concats, sentinel_units

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


def export(result: QuantizeResult, path: str | Path, *, format: str = "qdq", model: PreparedModel | None = None) -> Path:
    """Write ``result`` atomically to ``path`` (temp file + rename). Returns the path.

    ``format`` "qdq" writes ``result.proto``; "qonnx" writes QONNX (Quant / BipolarQuant /
    FloatQuant nodes, :mod:`workbench.core.qonnx.writer`), from ``model`` (the float model, keeps
    its weights; needed for bipolar weights) when given, else converted from ``result.proto``.

    Raises
    ------
    ExportError
        Target not writable, disk full, an unknown format, or a plan QDQ cannot hold
        (QONNX-only activation dtypes or bipolar weights exported as "qdq").
    """
    from workbench.core.errors import ExportError
    from workbench.core.io.save import save_model
    from workbench.core.qonnx.writer import export_qonnx, qdq_only_blockers

    if format not in ("qdq", "qonnx"):
        raise ExportError(f"Unknown export format {format!r}.", hint="Use --format qdq or --format qonnx.")
    proto = result.proto
    if format == "qonnx":
        proto = export_qonnx(result, model)
    elif qdq_only_blockers(result.plan):
        raise ExportError(f"Nodes {', '.join(qdq_only_blockers(result.plan)[:5])} use QONNX-only dtypes "
                          "that QDQ cannot hold.", hint="Export with --format qonnx.")
    path = Path(path)
    save_model(proto, path)
    return path


#: Samples per onnxruntime run when measuring errors (where the model's batch axis is dynamic).
ANALYSIS_BATCH = 16


def _batches(model: PreparedModel, data: Any, samples: int | None, batch_size: int = ANALYSIS_BATCH):
    source = open_data_source(data, model)
    n = source.num_samples()
    n = min(n, samples) if (n is not None and samples) else (samples or n)
    yield from source.batches(batch_size, limit=n)


def analyze(model: PreparedModel, result: QuantizeResult, data: Any, *, samples: int | None = None,
            progress: ProgressFn | None = None, cancel: CancelToken | None = None) -> list:
    """Per-node-unit error of ``result`` against ``model`` on ``data``, worst first.

    Returns
    -------
    list of :class:`workbench.core.analysis.unit_error.UnitError`
    """
    from workbench.core.analysis.unit_error import analyze_units

    source = open_data_source(data, model)
    total = source.num_samples() or 0
    if samples:
        total = min(total, samples) if total else samples
    if getattr(source, "can_batch", False):
        total = -(-total // ANALYSIS_BATCH)
    model = result.float_model or model
    return analyze_units(model.proto, result.proto, result.plan, result.tensor_map,
                         _batches(model, source, samples), progress=progress, cancel=cancel, total=total)


def evaluate(float_model: Any, quant_model: Any, data: Any, *, samples: int | None = None,
             metric: Any = None, progress: ProgressFn | None = None, cancel: CancelToken | None = None):
    """Run float and quantized models over ``data``; per-output SQNR, cosine, max abs error, and a
    task metric on both when ``metric`` names one (see :func:`workbench.core.analysis.evaluate.evaluate`)."""
    from workbench.core.analysis.evaluate import evaluate as _evaluate

    return _evaluate(float_model, quant_model, data, samples=samples, metric=metric, progress=progress,
                     cancel=cancel)


def replay_project(project_path: str | Path, *, progress: ProgressFn | None = None,
                   cancel: CancelToken | None = None, use_cache: bool = True) -> tuple[PreparedModel, QuantizeResult]:
    """Re-run a saved project headless: same model, recipe, data and calibration cache.

    Raises
    ------
    ProjectError
        The project or its model is missing or changed.
    """
    from workbench.core.pipeline.project import check_project_model, load_project

    project = load_project(project_path)
    model = open_model(check_project_model(project, project_path))
    calib = None
    if use_cache and project.calibration:
        from workbench.core.calibration.calibrate import CalibrationResult

        calib = CalibrationResult.from_json(project.calibration)
    data = project.data_spec(project_path)
    if calib is not None and data is not None and project.recipe.smoothquant is None:
        # every tensor cached: no need to touch the data
        the_plan = plan(model, project.recipe)
        if all(t in calib.qparams() for t in the_plan.activations):
            data = None
    result = quantize(model, project.recipe, data=data, samples=project.samples, calibration=calib,
                      progress=progress, cancel=cancel)
    return model, result
