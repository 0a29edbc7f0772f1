"""The facade: every verb the CLI and the app offer, and the public types they need.

The CLI (:mod:`workbench.cli`) and the app (:mod:`workbench.qt`) import only this module, the
error types (:mod:`workbench.core.errors`), progress / cancel (:mod:`workbench.core.progress`) and
issues (:mod:`workbench.core.issues`); import-linter checks it. Verbs and types defined elsewhere
in the core load on first use (PEP 562 ``__getattr__``), so ``workbench-cli --help`` does not pay
for onnxruntime or the observers.

Typical use::

    from workbench.core import api
    model = api.open_model("model.onnx")
    recipe = api.make_recipe("cpu-u8s8")
    result = api.quantize(model, recipe, data="calib.npz", samples=128)
    api.export(result, "model.int8.onnx")
    report = api.evaluate(model, result.proto, "eval.npz")

Verbs: open_model, inspect_model, make_recipe, load_recipe, resolve, plan, calibrate, quantize,
export, evaluate, analyze, sensitivity_sweep, autotune, choose_recipe, search_recipe, convert_file, model_cost, replay_project,
new_project / save_project / load_project, layout_graph / layout_routed (positions + long-edge routes),
read_quant_params, write_report, summarize_quantization, edge_quantization,
node_facts / NodeFactsIndex (one node's attributes, tensors, dtypes and shapes, as the inspector shows them),
diff_models / compare_models / pane_layout (float vs quantized, side by side).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.core.errors import RecipeError
from workbench.core.progress import CancelToken, ProgressFn

if TYPE_CHECKING:  # the lazily loaded names, for type checkers and readers
    from workbench.core.model.load import PreparedModel
    from workbench.core.recipe.recipe import Recipe, ResolvedNode

#: public name -> module that defines it (loaded on first use)
_LAZY: dict[str, str] = {
    # model
    "PreparedModel": "workbench.core.model.load",
    "load_model": "workbench.core.model.load",
    "sha256_file": "workbench.core.model.load",
    "sha256": "workbench.core.io.digest",
    "cache_dir": "workbench.core.cache_dirs",
    "raw_bytes_kept": "workbench.core.io.tensor_bytes",
    "rename_notes": "workbench.core.model.load",
    # recipe
    "Recipe": "workbench.core.recipe.recipe",
    "ResolvedNode": "workbench.core.recipe.recipe",
    "resolve_node": "workbench.core.recipe.recipe",
    "QuantSpec": "workbench.core.recipe.spec",
    "PartialSpec": "workbench.core.recipe.spec",
    "NodeSettings": "workbench.core.recipe.spec",
    "NodeConfig": "workbench.core.recipe.spec",
    "Rule": "workbench.core.recipe.spec",
    "Granularity": "workbench.core.recipe.spec",
    "OBSERVERS": "workbench.core.recipe.spec",
    "ROLES": "workbench.core.recipe.spec",
    "unapplied_choice": "workbench.core.recipe.checks",
    "PRESETS": "workbench.core.recipe.presets",
    "get_preset": "workbench.core.recipe.presets",
    "cpu_needs_reduce_range": "workbench.core.recipe.hardware",
    "NodeRoles": "workbench.core.planning.roles",
    "node_roles": "workbench.core.planning.roles",
    "InputRead": "workbench.core.planning.reads",
    "input_reads": "workbench.core.planning.reads",
    "RECIPE_DTYPES": "workbench.core.formats.qtypes",
    "QParams": "workbench.core.formats.qparams",
    # pipeline
    "QuantizeResult": "workbench.core.pipeline.quantize",
    "plan": "workbench.core.pipeline.quantize",
    "GraphFacts": "workbench.core.planning.plan",
    "calibrate": "workbench.core.pipeline.quantize",
    "quantize": "workbench.core.pipeline.quantize",
    "export": "workbench.core.pipeline.export",
    "refuse_qdq_only": "workbench.core.pipeline.export",
    # the model a calibration wrote, kept for an export of the same inputs
    "keep_written": "workbench.core.pipeline.calibrated",
    "written_inputs": "workbench.core.pipeline.calibrated",
    "current_inputs": "workbench.core.pipeline.calibrated",
    "written_changes": "workbench.core.pipeline.calibrated",
    "write_kept": "workbench.core.pipeline.calibrated",
    "rebuild_kept": "workbench.core.pipeline.calibrated",
    "QdqOnlyField": "workbench.core.pipeline.qdq_only",
    "data_cast_issues": "workbench.core.pipeline.calibrate_pass",
    "qdq_only_fields": "workbench.core.pipeline.qdq_only",
    "qdq_only_fields_text": "workbench.core.pipeline.qdq_only",
    "analyze": "workbench.core.pipeline.analyze",
    "replay_project": "workbench.core.pipeline.replay",
    "CalibrationResult": "workbench.core.calibration.calibrate",
    "open_data_source": "workbench.core.data.loader",
    "data_kind": "workbench.core.data.loader",
    "refuse_model_as_data": "workbench.core.data.loader",
    "data_beside": "workbench.core.data.beside",
    "PROJECT_SUFFIX": "workbench.core.pipeline.project",
    "new_project": "workbench.core.pipeline.project",
    "save_project": "workbench.core.pipeline.project",
    "stage_project": "workbench.core.pipeline.project",
    "load_project": "workbench.core.pipeline.project",
    "data_runs_code": "workbench.core.pipeline.project",
    "is_project_model": "workbench.core.pipeline.project",
    "LatencyKept": "workbench.core.pipeline.project",
    "latency_kept_record": "workbench.core.pipeline.latency_record",
    "check_report_inputs": "workbench.core.report.node_check",
    "check_report_names": "workbench.core.report.node_check",
    "sweep_job_stamp": "workbench.core.report.sweep_match",
    "external_identity": "workbench.core.model.external_identity",
    "sweep_placement_note": "workbench.core.report.sweep_match",
    "lift_weights": "workbench.core.model.weights",
    "infer_shapes": "workbench.core.model.shapes",
    # analysis
    "UnitError": "workbench.core.analysis.unit_error",
    "build_node_data": "workbench.core.analysis.node_data",
    "write_node_data": "workbench.core.analysis.node_data",
    "node_data_paths": "workbench.core.analysis.node_data",
    "explorer_ids": "workbench.core.analysis.explorer_ids",
    "EvalReport": "workbench.core.analysis.evaluate",
    "fmt_metric": "workbench.core.analysis.evaluate",
    "check_metric_data": "workbench.core.analysis.evaluate",
    "load_metric": "workbench.core.analysis.metrics",
    "METRICS": "workbench.core.analysis.metrics",
    "CostReport": "workbench.core.analysis.cost",
    "NodeCost": "workbench.core.analysis.cost",
    "FLOAT_BITS": "workbench.core.analysis.cost",
    "model_cost": "workbench.core.analysis.cost",
    "bits_from_configs": "workbench.core.analysis.cost",
    "plan_bits": "workbench.core.analysis.cost",
    "plan_kernel_bits": "workbench.core.analysis.cost",
    "with_bits": "workbench.core.analysis.cost",
    "plan_cost": "workbench.core.analysis.cost",
    "file_cost": "workbench.core.analysis.cost",
    "written_float": "workbench.core.analysis.cost",
    "WRITTEN_KEY": "workbench.core.analysis.cost",
    "quantized_cost": "workbench.core.analysis.quantized_cost",
    "file_bits": "workbench.core.inspection.kernel_bits",
    "unknown_dims": "workbench.core.analysis.cost",
    "data_sample": "workbench.core.analysis.cost",
    "data_input_shapes": "workbench.core.analysis.cost",
    "local_sensitivity": "workbench.core.analysis.sensitivity",
    "sensitivity_sweep": "workbench.core.analysis.sensitivity",
    "SweepResult": "workbench.core.analysis.sensitivity",
    "FIGURES": "workbench.core.analysis.sensitivity",
    "InlineExecutor": "workbench.core.analysis.executors",
    "ProcessExecutor": "workbench.core.analysis.executors",
    "default_executor": "workbench.core.analysis.executors",
    "make_executor": "workbench.core.analysis.executors",
    "check_executor_spec": "workbench.core.analysis.executors",
    "calibrate_sharded": "workbench.core.pipeline.sharded",
    "RayExecutor": "workbench.core.analysis.executors",
    "autotune": "workbench.core.tuning.autotune",
    "remeasuring_latency": "workbench.core.runtime.latency",
    "reused_slowdown": "workbench.core.pipeline.latency_check",
    "search_recipe": "workbench.core.tuning.recipe_search",
    "SearchReport": "workbench.core.tuning.recipe_search",
    "SearchChoice": "workbench.core.tuning.recipe_search",
    "SEARCH_NOT_STATIC": "workbench.core.tuning.recipe_search",
    "choose_recipe": "workbench.core.tuning.recipe_choice",
    "ChoiceReport": "workbench.core.tuning.recipe_choice",
    "CHOICE_NOT_STATIC": "workbench.core.tuning.recipe_choice",
    "why_not_choose": "workbench.core.tuning.recipe_choice",
    # inspection and conversion
    "planned_units": "workbench.core.inspection.units",
    "format_report": "workbench.core.inspection.report_text",
    "quick_report": "workbench.core.inspection.quick",
    "QuantTensor": "workbench.core.inspection.quant_reader",
    "read_quant_params": "workbench.core.inspection.quant_reader",
    "params_by_node": "workbench.core.inspection.quant_reader",
    "format_param": "workbench.core.inspection.quant_reader",
    "find_quantized": "workbench.core.graph.quantized_ops",
    "QuantSummary": "workbench.core.inspection.quant_summary",
    "summarize_quantization": "workbench.core.inspection.quant_summary",
    "run_dtypes": "workbench.core.inspection.quant_summary",
    "describe_quantized": "workbench.core.inspection.already_quantized",
    "EdgeQuant": "workbench.core.inspection.quant_summary",
    "edge_quantization": "workbench.core.inspection.quant_summary",
    "params_around_nodes": "workbench.core.inspection.quant_summary",
    "tensor_dtypes": "workbench.core.inspection.tensor_dtypes",
    "NodeFacts": "workbench.core.inspection.node_facts",
    "TensorFact": "workbench.core.inspection.node_facts",
    "AttrFact": "workbench.core.inspection.node_facts",
    "NodeFactsIndex": "workbench.core.inspection.node_facts",
    "node_facts": "workbench.core.inspection.node_facts",
    "ModelDiff": "workbench.core.inspection.model_diff",
    "diff_models": "workbench.core.inspection.model_diff",
    "format_diff": "workbench.core.inspection.model_diff",
    "compare_models": "workbench.core.inspection.diff_error",
    "measure_diff": "workbench.core.inspection.diff_error",
    "float_reference": "workbench.core.inspection.diff_error",
    "PaneLayout": "workbench.core.inspection.diff_layout",
    "pane_layout": "workbench.core.inspection.diff_layout",
    "qdq_marks": "workbench.core.inspection.diff_layout",
    "convert_file": "workbench.core.qonnx.convert",
    "read_convert_input": "workbench.core.qonnx.convert",
    "conversion_report": "workbench.core.qonnx.convert",
    "read_qonnx": "workbench.core.qonnx.reader",
    "parse_input_shape": "workbench.core.qonnx.shapes",
    "retarget_project": "workbench.core.pipeline.retarget",
    "retarget_recipe": "workbench.core.pipeline.retarget",
    "retarget_to_model": "workbench.core.pipeline.retarget",
    "MatchRow": "workbench.core.pipeline.retarget",
    "format_match_table": "workbench.core.pipeline.retarget",
    "resolve_input_shapes": "workbench.core.qonnx.shapes",
    # the HTML report
    "write_report": "workbench.core.report.write",
    "collect_report": "workbench.core.report.collect",
    "load_curve": "workbench.core.report.collect",
    "default_metric": "workbench.core.report.collect",
    "load_sweep": "workbench.core.report.collect",
    "read_sweep": "workbench.core.report.collect",
    "ReportData": "workbench.core.report.collect",
    "render_html": "workbench.core.report.html",
    "REPORT_SECTIONS": "workbench.core.report.html",
    # graph pictures
    "GraphStructure": "workbench.core.graph.layout",
    "graph_structure": "workbench.core.graph.layout",
    "layout_graph": "workbench.core.graph.layout",
    "layout_routed": "workbench.core.graph.layout",
    "GraphLayout": "workbench.core.graph.layout",
    "Hierarchy": "workbench.core.graph.hierarchy",
    "build_hierarchy": "workbench.core.graph.hierarchy",
    "aggregate": "workbench.core.graph.hierarchy",
    "auto_depth": "workbench.core.graph.hierarchy",
    "expanded_to_depth": "workbench.core.graph.hierarchy",
    "GroupLayoutPlan": "workbench.core.graph.group_layout",
    "Placement": "workbench.core.graph.group_layout",
    "plan_group_layout": "workbench.core.graph.group_layout",
    "place": "workbench.core.graph.group_layout",
    "TitleMetrics": "workbench.core.graph.box_widths",
    # running a model (the histogram job of workbench.core.jobs)
    "add_outputs": "workbench.core.runtime.session",
    "make_session": "workbench.core.runtime.session",
    "describe_runtime": "workbench.core.runtime.session",
    "analyze_end_to_end": "workbench.core.pipeline.analyze",
    "noise_split": "workbench.core.analysis.noise_split",
    "has_qdq_pairs": "workbench.core.analysis.noise_split",
    "weight_errors": "workbench.core.analysis.weight_error",
    "WeightError": "workbench.core.analysis.weight_error",
    "NoiseSplit": "workbench.core.analysis.noise_split",
    # files
    "atomic_write_bytes": "workbench.core.io.atomic",
    "StagedWrite": "workbench.core.io.atomic",
    "dumps_strict": "workbench.core.io.jsonsafe",
    "clip_range": "workbench.core.report.histograms",
    "grid_levels": "workbench.core.report.histograms",
    # one unit's output, input and weight histograms (the histogram job) and its weight's written grid
    "activation_histograms": "workbench.core.report.unit_histograms",
    "weight_histogram": "workbench.core.report.unit_histograms",
    "written_weight_qparams": "workbench.core.analysis.weight_grid",
    # the SQNR colour scale the app and the report share
    "SQNR_STOPS": "workbench.core.report.sqnr_bands",
    "SQNR_NO_VALUE": "workbench.core.report.sqnr_bands",
    "sqnr_hex": "workbench.core.report.sqnr_bands",
    "check_not_input": "workbench.core.io.atomic",
    "same_file": "workbench.core.io.atomic",
    "special_file_kind": "workbench.core.io.atomic",
    "protect_input": "workbench.core.io.atomic",
    "mark_target": "workbench.core.io.atomic",
    "clean_killed_write": "workbench.core.io.atomic",
}

__all__ = sorted(
    [
        *_LAZY,
        "open_model",
        "inspect_model",
        "make_recipe",
        "load_recipe",
        "node_op_type",
        "resolve",
        "evaluate",
        "quantized_file_cost",
    ]
)


def __getattr__(name: str) -> Any:
    """Load a lazily exported name on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


def open_model(
    path: str | Path,
    *,
    hash_now: bool = True,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
) -> PreparedModel:
    """Load and prepare a model (see :func:`workbench.core.model.load.load_model`; ``hash_now=False``:
    its file is hashed when ``sha256`` is first read, "" if it changed by then; ``progress`` told each of
    ``progress.OPEN_STEPS``, ``cancel`` checked between them: raises Cancelled)."""
    return __getattr__("load_model")(path, hash_now=hash_now, progress=progress, cancel=cancel)


def inspect_model(model: PreparedModel, *, units: bool = False) -> dict:
    """What is in ``model`` (see :func:`workbench.core.inspection.report.inspect_model`); with
    ``units``, also the node units the default preset would quantize
    (:func:`workbench.core.inspection.units.planned_units`), which loads the recipe and planner."""
    report = importlib.import_module("workbench.core.inspection.report").inspect_model(model)
    if units:
        report["units"] = __getattr__("planned_units")(model)
    return report


def make_recipe(preset: str = "cpu-u8s8", **fields: Any) -> Recipe:
    """A recipe starting from ``preset``, with ``reduce_range`` fixed for this CPU.

    Raises
    ------
    RecipeError
        Unknown preset or invalid fields.
    """
    __getattr__("get_preset")(preset)
    fields.setdefault("reduce_range", __getattr__("cpu_needs_reduce_range")())
    try:
        return __getattr__("Recipe")(preset=preset, **fields)
    except Exception as exc:  # pydantic ValidationError
        raise RecipeError(f"Invalid recipe fields: {exc}", hint="Check the recipe options.") from None


def load_recipe(path: str | Path) -> Recipe:
    """Read a recipe JSON file (RecipeError naming the file on bad content: unreadable, not UTF-8, a
    project file, invalid JSON or fields, fields that do not fit together, activation settings the plan would not
    apply as written)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte order mark (Windows editors) is not JSON
    except OSError as exc:
        raise RecipeError(f"{path}: cannot read recipe ({exc.strerror}).", hint="Check the path.") from None
    except UnicodeDecodeError as exc:
        raise RecipeError(
            f"{path}: not a recipe (not UTF-8 JSON text: {exc.reason} at byte {exc.start}).",
            hint="Give a recipe .json file, e.g. examples/recipes/ppocrv4_rec.json.",
        ) from None
    if path.suffix == ".wbproj" or '"schema_version"' in text[:4096]:
        raise RecipeError(
            f"{path} is a project, not a recipe.",
            hint=f"Replay it with `workbench-cli quantize {path}` (add --model NEW.onnx to apply it to "
            "another model).",
        )
    return __getattr__("Recipe").from_json(text, source=str(path), unapplied=True)


def node_op_type(model: PreparedModel, node: str) -> str:
    for n in model.graph.node:
        if n.name == node:
            return n.op_type
    raise RecipeError(
        f"No node named {node!r} in {model.path or 'the model'}.",
        hint="Use a name shown by `workbench-cli inspect`.",
    )


def resolve(model: PreparedModel, recipe: Recipe, node: str) -> ResolvedNode:
    """Effective settings of ``node`` and where each came from."""
    return __getattr__("resolve_node")(recipe, node, node_op_type(model, node))


def quantized_file_cost(
    model: PreparedModel,
    data: Any = None,
    *,
    batch: int = 1,
    input_shapes: dict[str, list[int]] | None = None,
):
    """The cost of an already-quantized ``model`` as the file is (a CostReport,
    :func:`workbench.core.analysis.quantized_cost.quantized_cost`) at the bits of its integer tensors and the
    kernels onnxruntime runs (:func:`workbench.core.inspection.kernel_bits.file_bits`), and the one line
    that says how it is quantized ("QDQ: 3 Conv uint8/int8, 1 Gemm uint8/int8"). Raises what
    ``quantized_cost`` raises."""
    bits, kernel, text = __getattr__("file_bits")(model.proto)
    return __getattr__("quantized_cost")(
        model, bits, kernel, data, batch=batch, input_shapes=input_shapes
    ), text


def evaluate(
    float_model: Any,
    quant_model: Any,
    data: Any,
    *,
    samples: int | None = None,
    metric: Any = None,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
    metric_output: str | None = None,
    float_as_given: bool = False,
):
    """Run float and quantized models over ``data``; per-output SQNR, cosine, max abs error, and a
    task metric on both when ``metric`` names one, read from output ``metric_output`` (default the first);
    ``float_as_given``: an opened float model runs as its file holds it, not its prepared (folded) graph
    (see :func:`workbench.core.analysis.evaluate.evaluate`)."""
    run = importlib.import_module("workbench.core.analysis.evaluate").evaluate
    return run(
        float_model,
        quant_model,
        data,
        samples=samples,
        metric=metric,
        progress=progress,
        cancel=cancel,
        metric_output=metric_output,
        float_as_given=float_as_given,
    )
