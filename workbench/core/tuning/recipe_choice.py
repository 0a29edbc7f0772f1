"""Recipe choice: the whole-model settings whose quantized outputs stay closest to float on held-out rows.

A static preset (no rules, op types or SmoothQuant of the user's; node overrides and exclusions are kept) is
tried in the :data:`CANDIDATES` variants, and the one with the highest output SQNR on calibration
rows the calibration did not see is kept, written into the recipe so a saved project replays it
without choosing again:

- ``preset``: the preset as it is (MinMax activation ranges, every op type of the preset).
- ``mse``: every activation range by the MSE observer: the clip range minimising the expected
  quantization error over the tensor's histogram (Banner et al. 2019, "Post training 4-bit
  quantization of convolutional networks for rapid-deployment", section 3). The full min / max is
  one of the ranges it tries, so by its own error estimate on the calibration histogram it never
  does worse than MinMax on a tensor; a MinMax variant of the other op set is therefore not tried.
- ``compute+mse``: MSE ranges, and only Conv / ConvTranspose / MatMul / Gemm quantized: element-wise
  ops stay float. Their own rounding is what costs accuracy when chains of them sit between compute
  ops (HardSwish and the learnable affine blocks of ppocrv4_rec: 0.78 exact match with them
  quantized, 0.97 without); onnxruntime still runs every compute op on integer kernels.

0. Nothing is calibrated or scored when the preset's plan quantizes no unit (its guards leave every unit
   float: silero_vad.onnx, whose choice ran a calibration pass and scored the float model, 0.3 s = 47x
   the pass; ``skipped`` is :data:`CHOICE_NOTHING`), and ``mse`` is not scored when its plan is
   ``compute+mse``'s (every quantized unit a compute op: the same model, which a tie gives to
   ``compute+mse``; ``scores`` then has no ``mse``: digits_mlp, silero_vad_16k_op15).
1. The last ``k`` calibration rows (a quarter, 2..16) are held out. Rows with NaN / Inf in a float input are
   left out of everything below first (:class:`~workbench.core.data.finite.WithoutRows`), so the choice is
   that of the data without them: a held-out one was only left out of the score, so the rows held out and
   calibrated on were not those of the data without it, and a calibration row kept its finite values and,
   as sample 0, set histogram lattices. ppocr_mobile_v2_cls with one NaN pixel in row 0 chose compute+mse
   with 7 units kept float (MSE ranges of 58 of 182 tensors up to 7 % from those without row 0); without
   row 0, and now with the NaN, compute+mse with 14 (clean data: mse). The ranges handed on (step 5) leave
   those rows out too; their calibration warning is given as the pass would give it. One read of the rows
   finds them and takes the rows held out (:func:`_first_read`).
2. One calibration pass over all rows with MSE observers (histograms), over the tensors of every
   variant, keeps the observers as they stood before the held-out rows
   (:func:`~workbench.core.calibration.calibrate.calibrate_split`). Those give both ranges of each
   tensor on the other rows: the MSE clip range, and the exact min / max each histogram also tracks
   (what the MinMax observer gives on the same rows). Each variant is written from them without
   calibrating again.
3. Each variant runs the held-out rows; the score is the mean over the float
   outputs of ``10 log10(sum f^2 / sum (f - q)^2)`` over those rows (dB). A model whose outputs are all
   integers (a classifier ending in ArgMax) is scored on the float tensors those outputs are computed
   from instead: the float inputs of the nodes that make them (the ArgMax input), found walking back
   through integer-only nodes (:func:`score_points`), read in the quantized model at the same node's
   input, so after any Q/DQ in front of it. With none of those either, no choice is made.
   The float model's tensors on the held-out rows are kept from step 2's pass, which runs those rows
   anyway (:class:`~workbench.core.calibration.kept_outputs.KeptOutputs`); the float model runs them again
   in a session of its own only when that session does not output them or a batch cannot be cut by row.
   That run cost 0.13-0.16 s on nudenet_320n (0.15x its pass) and 0.38-0.42 s on ppocrv4_rec (0.17x), 5
   runs each at load 2-3 on the AMD EPYC (avx2 avx512f avx512_vnni) with 2 cores; the pass took no
   measurable time more. The kept tensors are the instrumented, batched session's: on ppocrv4_rec and
   minilm_l6_v2 a few ulps from a plain run of each row alone, which moved the scores by 1e-6 dB
   (nudenet_320n: the same bits) and wrote the same models.
   Bias correction's own float run (its Conv input means, :class:`~workbench.core.transforms.
   bias_correction.InputMeans`) is over the calibrated rows, not the held-out ones, and stays: the grids
   it rounds on are known only after the pass, so folding it in would keep every Conv input of those
   rows (nudenet_320n 17.5 MiB a row, 315 MiB; ppocrv4_rec 20.7 MiB a row, 994 MiB) and take the pass's
   values, which on ppocrv4_rec differ from its own run's in 16 of the 80 arrays of the 10 Conv inputs it
   fetches on 8 rows (so other means); 35 of nudenet_320n's 58 Conv inputs it does not fetch at all
   (derived or merged).
4. Among the variants within :data:`MARGIN_DB` of the best score, the first of :data:`PREFERENCE`
   is chosen: ``preset`` (models where it is as good keep it exactly), then ``compute+mse`` (fewer
   roundings), then ``mse``. Scores within half a dB are not a difference the held-out rows can
   tell: on ppocrv4_rec ``mse`` and ``compute+mse`` scored 11.5 and 11.7 dB, and which one was
   higher flipped with range changes of a few parts in a thousand, while their exact line match
   is 0.74-0.77 against 0.97.
5. ``ChoiceReport.calibration`` holds the ranges of the same pass over every row, so the quantize
   that follows calibrates nothing again: MinMax ranges when the preset stays (exactly a MinMax
   calibration's), else the MSE observers. A histogram's bin lattice is set by the first batch
   alone, which is sample 0 (calibration's batch-size probe), so batch sizes do not move them. An
   element-wise function's output (GELU, SiLU) that the compute-only plan fetches but whose input
   ``mse`` quantizes is fetched by the pass too, not derived from that input's histogram
   (:func:`_fetched_as_alone`; derived, minilm_l6_v2's GELU outputs were 1.3-7.4 % from the
   compute-only recipe's own ranges). What remains: onnxruntime fuses the instrumented model
   differently when other tensors are fetched beside one, which moves values by an ulp; that moves a
   histogram whose grid the first batch's exact extremes set, and three of minilm_l6_v2's GELU
   output ranges stay 1.6-9 % apart (ppocrv4_rec and digits_transformer: within float32 rounding).
   A saved project keeps the ranges and replays byte for byte; ``--recipe`` with the saved recipe
   calibrates it afresh.
Every variant has ``bias_correction`` on (:data:`BIAS_CORRECTION`; each Conv bias absorbs the mean shift
of its weight's and input's rounding), in its score, in step 6's and in the recipe written. nudenet_320n
eval photos: output SQNR 35.9 -> 38.2 dB, largest class-score change 0.050 -> 0.044, 19 units uint16
instead of 9; ppocrv4_rec 13.8 -> 15.2 dB.

6. With an 8-bit integer preset, the chosen variant's units may be promoted where a few of them hold
   most of the output noise (:mod:`workbench.core.tuning.mixed_precision`: a group test, each group
   scored as in step 3 with the same ranges). What a promoted unit becomes depends on the preset
   (:func:`promotion_level`): with ``cpu-u8s8``, made for onnxruntime's CPU provider, it stays float
   (an ``exclude`` override): onnxruntime runs 16-bit activations on DequantizeLinear + float kernels,
   so there 16 bits cost Q/DQ pairs for no integer kernel, and float is both faster and closer to
   float. nudenet_320n (x86_64 AVX512-VNNI, onnxruntime 1.32, 1 thread, one loaded run each): its
   first 19 units at uint16 measured 0.67x float latency, the same units float 0.44x, all units 8-bit
   0.37x; the largest class-score change on the eval photos 0.0435 / 0.0452 / 0.085. With other
   8-bit presets (``s8s8``, aimed at accelerators with 16-bit kernels) the units get 16-bit
   activations (``activation.dtype`` uint16 / int16, on a 16-bit grid over the statistics the 8-bit
   one used). Either way the promoted nodes become overrides of the recipe, so a saved project or
   recipe replays them without searching.

The user's node overrides stay in every variant scored and in the recipe chosen (a node override wins
over the variant's ``name="*"`` rule, as in any recipe; ``compute+mse``'s op-type list leaves a node of
another op type float unless its override enables the role), and step 6 promotes none of their nodes: the
user's setting is kept as written (:func:`_promote`).
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import onnx
from onnx import helper

from workbench.core.calibration.calibrate import (
    CalibrationResult,
    calibrate_split,
    computed_tensors,
)
from workbench.core.calibration.kept_outputs import KeptOutputs
from workbench.core.calibration.observers import HistogramObserver, Observer
from workbench.core.data.finite import WithoutRows, nonfinite_input
from workbench.core.data.kept import KeptRows
from workbench.core.data.loader import open_data_source
from workbench.core.errors import Cancelled, WorkbenchError
from workbench.core.formats.qtypes import get_qtype
from workbench.core.graph.index import elem_types, iter_graphs
from workbench.core.inspection.already_quantized import ensure_float_model
from workbench.core.io.tensor_bytes import raw_bytes_kept
from workbench.core.model.load import PreparedModel
from workbench.core.model.opset import default_opset
from workbench.core.pipeline.quantize import QuantizeResult, quantize
from workbench.core.pipeline.quantize import plan as make_plan
from workbench.core.planning.plan import GraphFacts, QuantPlan
from workbench.core.progress import CancelToken, ProgressFn
from workbench.core.recipe.recipe import Recipe, check_overrides, resolve_node
from workbench.core.recipe.spec import Granularity, NodeSettings, PartialSpec, PlanMode, Rule
from workbench.core.runtime.session import add_outputs, make_session
from workbench.core.transforms.bias_correction import InputMeans, expected_grids
from workbench.core.tuning.local_error import COMPUTE_OPS
from workbench.core.tuning.mixed_precision import MIN_GAIN_DB, WIDER, Promotion, find_promotion, searches
from workbench.core.wording import count

log = logging.getLogger(__name__)

#: Variant name -> (observer of every activation, op types quantized; None = the preset's).
CANDIDATES: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "preset": ("minmax", None),
    "mse": ("mse", None),
    "compute+mse": ("mse", COMPUTE_OPS),
}
#: Every variant folds the mean shift of its Conv weights' and inputs' rounding into the Conv biases
#: (:mod:`workbench.core.transforms.bias_correction`), scored so and written into the chosen recipe.
BIAS_CORRECTION = True
#: Variants whose output SQNR is within this of the best count as tied (dB) ...
MARGIN_DB = 0.5
#: ... and the first of them in this order is chosen (step 4).
PREFERENCE = ("preset", "compute+mse", "mse")
#: Held-out rows: a quarter of the calibration rows, at least 2 and at most 16.
MIN_HELD_OUT, MAX_HELD_OUT = 2, 16
#: Fewer calibration rows than this: no choice (nothing left to hold out).
MIN_ROWS = 6
#: Output SQNR of a bit-exact output (dB), instead of +inf, so means stay finite.
EXACT_DB = 200.0
#: ``ChoiceReport.skipped`` of a dynamic or weight-only recipe.
CHOICE_NOT_STATIC = "not a static recipe"
#: ``ChoiceReport.skipped`` of a recipe with rules or an op-type list (node overrides alone are kept in the choice).
CHOICE_RULES = "the recipe sets rules or op types (it is used as written)"
#: ``ChoiceReport.skipped`` of a recipe with bias correction on, as every recipe the choice writes has: a chosen
#: recipe (a saved project's, which ``workbench-cli quantize PROJECT`` replays as written) is not chosen again.
CHOICE_CHOSEN = "the recipe sets bias_correction, as a chosen recipe does (it is used as written)"
#: ``ChoiceReport.skipped`` of a model the preset quantizes no unit of (every unit left float by its guards): every
#: variant would write the float model, so nothing is calibrated or scored.
CHOICE_NOTHING = "the preset quantizes no unit of this model, so there is nothing to choose"
#: ``ChoiceReport.skipped`` of a recipe whose own exclusions (``exclude`` globs, ``--exclude``, node overrides) keep
#: every unit float: the preset would quantize them, so :data:`CHOICE_NOTHING` would blame the wrong thing.
CHOICE_EXCLUDED = "the recipe excludes every unit of this model (--exclude or node overrides), so there is nothing to choose"
#: ``ChoiceReport.skipped`` of a model with integer outputs only, computed from no float tensor (step 3).
CHOICE_NO_FLOAT = "no float output to compare (every output is an integer computed from no float tensor); the preset is kept"
#: Element types the score compares (step 3).
_FLOAT_TYPES = {
    onnx.TensorProto.FLOAT,
    onnx.TensorProto.FLOAT16,
    onnx.TensorProto.BFLOAT16,
    onnx.TensorProto.DOUBLE,
}
#: Presets whose promoted units stay float instead of getting 16-bit activations (step 6): made for
#: onnxruntime's CPU provider, which runs 16-bit activations on float kernels.
FLOAT_PROMOTION_PRESETS = frozenset({"cpu-u8s8"})
#: :func:`promotion_level` of those presets.
FLOAT = "float"
#: Step 6's progress messages begin with one of these (both with :data:`PHASE_UNITS`).
PHASE_16_BIT, PHASE_FLOAT = "Choosing units for 16-bit activations", "Choosing units to keep float"
PHASE_UNITS = "Choosing units"
#: ``ChoiceReport.skipped`` of data that does not say how many rows it holds (the last ones are held out).
CHOICE_UNCOUNTED = (
    "the data does not say how many rows it holds (a Python reader without NUM_SAMPLES); "
    "give the sample count (--samples N) to choose"
)


@dataclass
class ChoiceReport:
    """What :func:`choose_recipe` did.

    ``recipe``: the chosen variant written into the input recipe, with the 16-bit units of step 6 as
    overrides (the input itself when ``preset`` stays and no unit is promoted); ``chosen``: the
    variant's name; ``scores``: variant -> mean output SQNR on the held-out rows (dB; a variant that
    cannot be written for this model is left out);
    ``seconds``: wall time of the whole choice; ``calibration_seconds``: of its calibration pass;
    ``held_out``: rows measured on; ``left_out``: ``(input, sample index, NaN / Inf count)`` of the rows left out
    of the whole choice for NaN / Inf inputs (step 1); ``skipped``: why no choice was made, else None;
    ``calibration``: the chosen variant's ranges over every row (the held-out ones included; MinMax
    for the preset, the MSE observers otherwise; pass it as ``calibration=`` to
    :func:`~workbench.core.pipeline.quantize.quantize`, which then calibrates nothing again except a
    tensor that step 6's boundaries quantize on its own grid); None when skipped (step 5);
    ``promotion``: step 6's search (None when skipped or the preset is not 8-bit integer);
    ``wide_dtype``: what step 6 tried for promoted units (:func:`promotion_level`: a 16-bit activation
    dtype, or :data:`FLOAT`; "" when none); ``opset``: the model's ai.onnx
    opset (16-bit Q/DQ needs the opset its qtype names; the writer raises it); ``scored_on``: the float
    tensors scored instead of the outputs when every output is an integer (step 3; empty: the outputs).
    """

    recipe: Recipe
    chosen: str = "preset"
    scores: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    calibration_seconds: float = 0.0
    held_out: int = 0
    skipped: str | None = None
    calibration: CalibrationResult | None = field(default=None, repr=False)
    promotion: Promotion | None = None
    wide_dtype: str = ""
    opset: int = 0
    scored_on: list[str] = field(default_factory=list)
    left_out: list[tuple[str, int, int]] = field(default_factory=list)

    @property
    def label(self) -> str:
        """The chosen variant, and its promoted units when step 6 promoted any (``preset + 9 units kept
        float``, ``preset + 16-bit activations on 9 units``)."""
        units = self.promotion.units if self.promotion is not None else []
        return f"{self.chosen} + {promoted_words(len(units), self.wide_dtype)}" if units else self.chosen

    def summary(self) -> str:
        """One line for the CLI: the scores, the choice, its 16-bit units and its cost."""
        if self.skipped:
            return f"recipe choice skipped: {self.skipped}"
        scores = ", ".join(f"{k} {v:.1f}" for k, v in self.scores.items())
        shown = ", ".join(self.scored_on[:3]) + (
            f" and {len(self.scored_on) - 3} more" if len(self.scored_on) > 3 else ""
        )
        what = f"SQNR of {shown} (the outputs are integers)" if self.scored_on else "output SQNR"
        return (
            f"recipe choice: {self.chosen} ({what} on {count(self.held_out, 'held-out row')}, dB: {scores})"
            f"{self._left_out_text()}{self._promotion_text()}; took {self.seconds:.1f} s{self._cost_ratio()}"
        )

    def _left_out_text(self) -> str:
        """``; 1 calibration row with NaN/Inf inputs left out of the choice and its ranges (sample 0)``, or ""."""
        if not self.left_out:
            return ""
        rows = len({s for _, s, _ in self.left_out})
        return (
            f"; {count(rows, 'calibration row')} with NaN/Inf inputs left out of the choice and its ranges "
            f"({left_out_samples(self.left_out)})"
        )

    def _cost_ratio(self) -> str:
        """`` (N.Nx its calibration pass)``: the choice's cost against the one calibration pass it includes
        (issue target: <= 3x); empty when that pass was not timed."""
        if self.calibration_seconds <= 0:
            return ""
        return f" ({self.seconds / self.calibration_seconds:.1f}x its calibration pass)"

    def _promotion_text(self) -> str:
        p = self.promotion
        if p is None or not p.tried:
            return ""
        what = "units kept float" if self.wide_dtype == FLOAT else "16-bit activations"
        if not p.units and not math.isfinite(p.best_tried_db):
            return f"; {what}: none of the runs of units could be written so, all stay 8-bit"
        if not p.units:
            return (
                f"; {what}: no run of units gains {MIN_GAIN_DB:g} dB "
                f"(best {p.best_tried_db:+.1f} dB), all stay 8-bit"
            )
        span = p.units[0] if len(p.units) == 1 else f"{p.units[0]} .. {p.units[-1]}"
        if self.wide_dtype == FLOAT:
            return (
                f"; {count(len(p.units), 'unit')} kept float ({span}): {p.gain_db:+.1f} dB; --no-auto quantizes "
                "every unit at 8 bits"
            )
        need = get_qtype(self.wide_dtype).min_opset
        opset = (
            (f"; 16-bit Q/DQ needs opset {need}, so the model is written at {need} (it was {self.opset})")
            if 0 < self.opset < need
            else ""
        )
        return (
            f"; {self.wide_dtype} activations on {len(p.units)} unit{'s' * (len(p.units) != 1)} ({span}): "
            f"{p.gain_db:+.1f} dB{opset}; --no-auto keeps every unit 8-bit"
        )


def promotion_level(recipe: Recipe) -> str:
    """What step 6 makes of a promoted unit of ``recipe`` (a static preset): :data:`FLOAT` for the presets
    of :data:`FLOAT_PROMOTION_PRESETS`, else the 16-bit activation dtype of its 8-bit one (uint16 / int16);
    "" when its activations are not 8-bit integers (no step 6)."""
    wide = WIDER.get(recipe.preset_obj().config.activation.dtype, "")
    return FLOAT if wide and recipe.preset in FLOAT_PROMOTION_PRESETS else wide


def promoted_words(units: int, level: str) -> str:
    """``9 units kept float`` or ``16-bit activations on 9 units``: the promoted units of step 6 at ``level``
    (:func:`promotion_level`)."""
    return (
        f"{count(units, 'unit')} kept float"
        if level == FLOAT
        else f"16-bit activations on {count(units, 'unit')}"
    )


def variant(recipe: Recipe, name: str, present: set[str] | None = None) -> Recipe:
    """``recipe`` with the settings of variant ``name`` written in (a ``name="*"`` rule for the
    observer, ``op_types`` for the op types) and ``bias_correction`` on (:data:`BIAS_CORRECTION`);
    ``preset`` changes only that. ``present``: the
    op types of the model; the variant's ``op_types`` then lists only those (the others would each
    draw a "not an op type of the model" warning, and change nothing). :func:`choose_recipe` does not
    try a variant none of whose op types the model has, nor score one that quantizes no unit.

    Raises
    ------
    KeyError
        ``name`` is not one of :data:`CANDIDATES`.
    """
    observer, ops = CANDIDATES[name]
    update: dict[str, Any] = {} if recipe.bias_correction else {"bias_correction": BIAS_CORRECTION}
    if observer != "minmax":
        update["rules"] = [*recipe.rules, Rule(name="*", activation=PartialSpec(observer=observer))]
    if ops is not None:
        update["op_types"] = [op for op in ops if present is None or op in present]
    return recipe.model_copy(update=update) if update else recipe


def why_not_choose(recipe: Recipe) -> str | None:
    """Why ``recipe`` is not a static preset the choice may change, with or without node overrides (None when
    it is; the overrides are kept, module docstring)."""
    preset = recipe.preset_obj()
    act = preset.config.activation
    if preset.mode != PlanMode.STATIC or act is None:
        return CHOICE_NOT_STATIC
    if recipe.rules or recipe.op_types is not None:
        return CHOICE_RULES
    # every variant the choice writes has it on: a chosen recipe (a project's) stays
    if recipe.bias_correction:
        return CHOICE_CHOSEN
    if recipe.smoothquant is not None:
        return "the recipe uses SmoothQuant"
    if act.granularity != Granularity.per_tensor or act.qtype.is_float or act.observer != "minmax":
        return "the preset's activations are not per-tensor integer MinMax"
    return None


def _why_nothing(recipe: Recipe, plan: QuantPlan) -> str:
    """Why ``plan`` (every unit excluded) quantizes nothing: :data:`CHOICE_EXCLUDED` when the recipe's own exclusions
    name every unit, else :data:`CHOICE_NOTHING` (the preset's guards left them float)."""
    units = plan.units.values()
    if units and all(resolve_node(recipe, u.node, u.op_type).excluded for u in units):
        return CHOICE_EXCLUDED
    return CHOICE_NOTHING


def choose_recipe(
    model: PreparedModel,
    recipe: Recipe,
    data: Any,
    *,
    samples: int | None = None,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
) -> ChoiceReport:
    """Choose among :data:`CANDIDATES` by output SQNR on held-out calibration rows, then 16-bit units
    (module docstring, steps 1-6).

    Parameters
    ----------
    model : PreparedModel
        The float model (not modified).
    recipe : Recipe
        The recipe; anything but a static preset, with or without node overrides, is returned unchanged
        (``skipped`` says why). Its overrides are kept in every variant and in the recipe chosen.
    data : path, dict or DataSource
        The calibration data (the rows quantize calibrates on).
    samples : int, optional
        Use at most this many rows (as quantize does).

    Raises
    ------
    AlreadyQuantizedError
        The model is already quantized (before any calibration).
    RecipeError
        A node override the preset's plan refuses (before the data is opened), or a plan error.
    DataError, CalibrationError, Cancelled
    """
    # every quantize, session and pass below reads each large float weight out of model.proto once (with upb each
    # read is a copy: minilm_l6_v2's choice copied 801 MiB of raw_data, now 513 MiB; the rest are written models')
    with raw_bytes_kept(model.proto):
        return _choose(model, recipe, data, samples, progress, cancel)


def _choose(
    model: PreparedModel,
    recipe: Recipe,
    data: Any,
    samples: int | None,
    progress: ProgressFn | None,
    cancel: CancelToken | None,
) -> ChoiceReport:
    """:func:`choose_recipe` itself."""
    t0 = time.perf_counter()
    ensure_float_model(model)  # refused before any calibration, as quantize would refuse it after
    reason = why_not_choose(recipe) or (None if data is not None else "no calibration data")
    if reason:
        return ChoiceReport(recipe, skipped=reason)
    ops = {node.name: node.op_type for g in iter_graphs(model.proto.graph) for node in g.node}
    check_overrides(recipe, ops)  # the preset's plan refuses them only after the calibration pass: now
    # every pass below reads the same rows: decoded once (a deflated .npz was decompressed 3-4 times)
    source = KeptRows(open_data_source(data, model))
    count = source.num_samples()
    if count is None and not samples:
        return ChoiceReport(recipe, skipped=CHOICE_UNCOUNTED)
    n = min(count, samples) if count is not None and samples else (samples or count)
    if n < MIN_ROWS:
        return ChoiceReport(recipe, skipped=f"fewer than {MIN_ROWS} calibration rows")
    read, bad, finite = _first_read(source, n)
    if read < n:  # a reader's announced count is a hint: it ended earlier
        asked = "it announced" if count is not None and count == n else "the sample count asks for"
        return ChoiceReport(recipe, skipped=f"the data ended before the {n} rows {asked}")
    if bad:  # step 1: the choice reads the data as a file without those rows
        source, n = WithoutRows(source, sorted({s for _, s, _ in bad})), n - len({s for _, s, _ in bad})
        samples = n if samples else None
        if n < MIN_ROWS:
            return ChoiceReport(
                recipe,
                skipped=f"fewer than {MIN_ROWS} calibration rows with finite inputs "
                f"(NaN/Inf in {left_out_samples(bad)})",
                left_out=bad,
            )
    held = int(min(MAX_HELD_OUT, max(MIN_HELD_OUT, n // 4)))
    rows = finite[len(finite) - held :]  # the last rows of the data without those left out
    points = score_points(model.proto.graph)
    if points == []:
        return ChoiceReport(recipe, skipped=CHOICE_NO_FLOAT)
    facts = GraphFacts(model.proto)  # one graph analysis for every plan and quantize below
    present = set(ops.values())
    names = [k for k in CANDIDATES if CANDIDATES[k][1] is None or present & set(CANDIDATES[k][1])]
    plans = {
        name: make_plan(model, variant(recipe, name, present), guard=True, facts=facts)
        for name in ("compute+mse", "mse")
        if name in names
    }
    if not plans["mse"].quantizes_any():
        return ChoiceReport(recipe, skipped=_why_nothing(recipe, plans["mse"]))
    if "compute+mse" in plans and _same_plan(plans["compute+mse"], plans["mse"]):
        names.remove("mse")  # the same model as compute+mse's, which a tie prefers: scored once
    union = replace(
        plans["mse"], activations={k: v for p in plans.values() for k, v in p.activations.items()}
    )
    fetched = _fetched_as_alone(model, union, plans.get("compute+mse"))
    # every row the quantize would read (a reader may yield more than it announced), held ones last
    # the first rows only (finished by the pass's own derivations) for the variants scored; their warnings are
    # the full pass's, already logged
    kept = KeptOutputs(_reference_names(model.proto, points), n - held, n)  # step 3's float outputs
    mse, full = calibrate_split(
        model,
        union,
        source,
        at=n - held,
        samples=samples,
        progress=progress,
        cancel=cancel,
        fetched=fetched,
        finish_first=True,
        kept=kept,
    )
    reference = kept.in_order() if kept.complete else _run(model.proto, rows, points)
    if bad:  # the pass never saw those rows: their warning as the pass gives it (the CLI's and the report's)
        mse, full = _numbered_as_given(mse, source, bad), _numbered_as_given(full, source, bad)
        for w in CalibrationResult({}, data_nonfinite=full.data_nonfinite).warnings:
            log.warning("Calibration: %s", w)
    ranges = {"mse": mse, "minmax": _as_minmax(mse)}
    for r in ranges.values():
        r.qparams()  # each MSE range search once: every quantize below copies the observers with their result
    scoring = _Scoring(model, source, n - held, facts, reference, rows, cancel, points)
    # the MSE variants' grids are rounded in the run the preset's correction makes
    for name, p in plans.items():
        scoring.means.expect(model.proto, expected_grids(p, ranges[CANDIDATES[name][0]].observers))
        for r in ranges.values():  # and those of aliased Conv inputs that step 6 may give their own grid
            scoring.means.expect(model.proto, expected_grids(p, r.observers, own=True))
    scores, plans_scored = _score_variants(
        scoring, {name: variant(recipe, name, present) for name in names}, ranges, progress
    )
    top = max(scores.values())
    chosen = next(k for k in PREFERENCE if k in scores and scores[k] > top - MARGIN_DB)
    wide = promotion_level(recipe)
    chosen_recipe, promotion = variant(recipe, chosen, present), None
    if wide:  # step 6
        promotion = _promote(
            scoring,
            chosen_recipe,
            ranges[CANDIDATES[chosen][0]],
            plans_scored[chosen],
            wide,
            scores[chosen],
            progress,
        )
        chosen_recipe = widened(chosen_recipe, promotion.units, wide)
    # the ranges of the pass over every row are those of a calibration of the chosen variant (step 5)
    calibration = _as_minmax(full) if CANDIDATES[chosen][0] == "minmax" else full
    return ChoiceReport(
        chosen_recipe,
        chosen,
        scores,
        time.perf_counter() - t0,
        full.seconds,
        len(rows),
        calibration=calibration,
        promotion=promotion,
        wide_dtype=wide,
        opset=default_opset(model.proto),
        scored_on=[t for t, _ in _point_tensors(model.proto, points)] if points else [],
        left_out=bad,
    )


def _score_variants(
    scoring: _Scoring,
    variants: dict[str, Recipe],
    ranges: dict[str, CalibrationResult],
    progress: ProgressFn | None,
) -> tuple[dict[str, float], dict[str, QuantPlan]]:
    """Step 3 for each of ``variants`` (name -> recipe): ``(name -> score, name -> plan written)``, in the
    order given, without the variants that cannot be written or quantize nothing (the preset is never left
    out: its errors are raised). Each variant is written here in turn, and its held-out run goes to one
    helper thread while the next one is written (onnxruntime releases the GIL): the same sessions and
    rows as scoring one after the other, so the same scores."""
    runs: dict[str, Future] = {}
    plans: dict[str, QuantPlan] = {}
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="workbench-choice") as pool:
        for i, (name, recipe) in enumerate(variants.items()):
            if progress is not None:
                progress(i, len(variants), f"Choosing the recipe: {name}")
            try:
                written = scoring.write(recipe, ranges[CANDIDATES[name][0]])
            except Cancelled:
                raise
            except WorkbenchError:
                if name == "preset":
                    raise  # the preset itself cannot be quantized: the quantize after the choice says why
                log.info("recipe choice: variant %s cannot be written, not scored", name, exc_info=True)
                continue
            plans[name], runs[name] = written.plan, pool.submit(scoring.measure, written.proto)
        scores: dict[str, float] = {}
        for name, run in runs.items():
            try:
                scores[name] = run.result()
            except Cancelled:
                raise
            except WorkbenchError:
                if name == "preset":
                    raise
                log.info("recipe choice: variant %s cannot be run, not scored", name, exc_info=True)
                continue
            if name != "preset" and not plans[name].quantizes_any():
                del scores[name]  # quantizes nothing: exact, so it would win every time
    if progress is not None:
        progress(len(variants), len(variants), "Choosing the recipe")
    return scores, {name: plans[name] for name in scores}


def widened(recipe: Recipe, nodes: list[str], wide: str) -> Recipe:
    """``recipe`` with ``wide`` (16-bit) activations on ``nodes``, or ``nodes`` kept float when ``wide`` is
    :data:`FLOAT` (overrides; ``recipe`` itself when none)."""
    if not nodes:
        return recipe
    if wide == FLOAT:
        return recipe.with_excluded(nodes)
    return recipe.with_override_map(
        {**recipe.overrides, **{n: NodeSettings(activation=PartialSpec(dtype=wide)) for n in nodes}}
    )


def _promote(
    scoring: _Scoring,
    recipe: Recipe,
    ranges: CalibrationResult,
    chosen_plan: QuantPlan,
    wide: str,
    base: float,
    progress: ProgressFn | None,
) -> Promotion:
    """Step 6: :func:`~workbench.core.tuning.mixed_precision.find_promotion` over the chosen variant's
    main-graph units, each group scored with its activations at ``wide``: a 16-bit grid over the statistics
    the 8-bit one used, so no group runs a calibration pass, or (:data:`FLOAT`) the group kept float. A tensor that shares another's grid in the
    chosen plan (a Split output) and gets its own at a group's boundary is scored with its source's range
    (a superset of its values); the quantize that follows calibrates it. The units the chosen plan left
    float (its guards' decisions included) are excluded in each group's recipe, so the guards find again
    only what the wider activations change (an element-wise unit that reaches only 16-bit compute units,
    which onnxruntime runs on float kernels, becomes a float island) and the plan is mostly resolved once
    per group instead of twice. A node the user overrode (``recipe.overrides``) is no candidate: the user's
    setting stays as written.

    The groups are scored one after the other. Writing the group a step would score next while one runs its
    held-out rows on a helper thread (as step 3 does) cost more CPU than it saved wall time: a group the
    step then does not score is written for nothing (3 of nudenet_320n's 5 scores end their step before
    its last group): +0.4-0.55 s of CPU on nudenet_320n, +0.9-2.0 s on ppocrv4_rec, the same on
    ppocr_mobile_v2_cls, three interleaved runs each at load 1.8-2.8, where wall times moved within the noise."""
    units = [u for u in _graph_units(scoring.model, chosen_plan) if u not in recipe.overrides]
    ranges = _with_aliases(ranges, chosen_plan)
    recipe = recipe.with_excluded([u.node for u in chosen_plan.units.values() if u.excluded])
    total, done = searches(len(units)), [0]
    phase = PHASE_FLOAT if wide == FLOAT else PHASE_16_BIT

    def gain(group: list[str]) -> float:
        if progress is not None:
            progress(
                done[0], max(total, done[0] + 1), f"{phase}: {count(len(group), 'unit')} from {group[0]}"
            )
        done[0] += 1
        try:
            score, written = scoring.score(widened(recipe, group, wide), ranges)
        except Cancelled:
            raise
        except WorkbenchError:
            log.info("recipe choice: %s on %d units cannot be written", wide, len(group), exc_info=True)
            return -math.inf
        if wide != FLOAT and not _all_wide(written, group, wide):
            # some unit left float or 8-bit (an opset the model cannot reach): not a 16-bit score
            return -math.inf
        return score - base

    found = find_promotion(units, gain)
    if progress is not None and done[0]:
        end = max(total, done[0])  # the bar keeps its total (it jumped from 3/6 to 4/4 on an early stop)
        progress(end, end, f"{phase}: done after {done[0]} of up to {end} scores")
    return found


def _all_wide(plan: QuantPlan, nodes: list[str], wide: str) -> bool:
    """True when every unit of ``nodes`` is quantized in ``plan`` with ``wide`` activations on one of its
    tensors at least (an input produced outside the group may keep its producer's 8-bit grid); False when a
    unit was left float (e.g. the opset ``wide`` needs is out of the model's reach)."""
    by_node = {u.node: u for u in plan.units.values()}
    for n in nodes:
        unit = by_node.get(n)
        if unit is None or unit.excluded:
            return False
        tensors = [t for t in [*unit.inputs, *unit.outputs] if t in plan.activations]
        if tensors and not any(plan.activations[t].dtype == wide for t in tensors):
            return False
    return True


@dataclass
class _Scoring:
    """Writes a recipe with given ranges and scores it on the held-out rows (steps 3 and 6)."""

    model: PreparedModel
    source: Any
    samples: int
    facts: GraphFacts
    reference: list[list[np.ndarray]]
    rows: list[dict[str, np.ndarray]]
    cancel: CancelToken | None
    points: list[tuple[str, int, int]] | None = None
    #: bias correction's Conv input means on the scored rows, shared by every variant and group scored
    means: InputMeans = field(default_factory=InputMeans)

    def score(self, recipe: Recipe, ranges: CalibrationResult) -> tuple[float, QuantPlan]:
        """``(held-out output SQNR in dB, the plan written)`` of ``recipe`` quantized with ``ranges``.

        Raises
        ------
        WorkbenchError
            ``recipe`` cannot be written for the model; Cancelled.
        """
        res = self.write(recipe, ranges)
        return self.measure(res.proto), res.plan

    def write(self, recipe: Recipe, ranges: CalibrationResult) -> QuantizeResult:
        """``recipe`` quantized with ``ranges`` (its bias correction on the scored rows' means), unchecked.

        Raises
        ------
        WorkbenchError
            ``recipe`` cannot be written for the model; Cancelled.
        """
        if self.cancel is not None:
            self.cancel.check()
        return quantize(
            self.model,
            recipe,
            data=self.source,
            samples=self.samples,
            calibration=ranges,
            cancel=self.cancel,
            check=False,
            facts=self.facts,
            bias_means=self.means,
        )

    def measure(self, proto: onnx.ModelProto) -> float:
        """The held-out output SQNR (dB) of a model :meth:`write` made (``proto`` is given the score points
        as outputs).

        Raises
        ------
        ModelError
            onnxruntime refuses the model; Cancelled.
        """
        if self.cancel is not None:
            self.cancel.check()
        return _score(self.reference, _run(proto, self.rows, self.points, in_place=True))


def _graph_units(model: PreparedModel, plan: QuantPlan) -> list[str]:
    """The quantized units of the main graph, in graph (topological) order."""
    order = {node.name: i for i, node in enumerate(model.proto.graph.node)}
    return sorted(
        (u.node for u in plan.units.values() if not u.excluded and u.graph == "" and u.node in order),
        key=order.__getitem__,
    )


def _with_aliases(ranges: CalibrationResult, plan: QuantPlan) -> CalibrationResult:
    """``ranges`` plus, for each tensor ``plan`` aliases to another, a copy of the other's observer."""
    observers = dict(ranges.observers)
    for t, source in plan.aliases.items():
        if t not in observers and source in ranges.observers:
            observers[t] = Observer.from_state({**ranges.observers[source].state(), "tensor": t})
    return replace(ranges, observers=observers)


def _same_plan(a: QuantPlan, b: QuantPlan) -> bool:
    """Whether ``a`` and ``b`` quantize the same units with the same tensors, grids and aliases (so, with the
    same ranges, write the same model): compute+mse and mse on a model whose quantized units are all
    compute ops (digits_mlp, silero_vad_16k_op15)."""

    def quantized(p: QuantPlan) -> dict:
        return {k: u for k, u in p.units.items() if not u.excluded}

    return (
        quantized(a) == quantized(b)
        and a.activations == b.activations
        and a.aliases == b.aliases
        and a.shared == b.shared
        and a.proxies == b.proxies
    )


def _fetched_as_alone(model: PreparedModel, union, compute_only) -> set[str]:
    """Tensors of the compute-only plan that its own calibration fetches but the pass over both
    variants would derive or merge (a GELU output whose input only ``mse`` quantizes): fetched there
    too, so that the ranges handed on for ``compute+mse`` are its own calibration's (step 5)."""
    if compute_only is None:
        return set()
    return (
        computed_tensors(model, union.activations) - computed_tensors(model, compute_only.activations)
    ) & set(compute_only.activations)


def _first_read(source, n: int) -> tuple[int, list[tuple[str, int, int]], list[dict[str, np.ndarray]]]:
    """One read of the first ``n`` rows of ``source``: ``(rows read, [(input, sample index, NaN / Inf count)],
    feeds)``. The list names the float inputs holding NaN or +-Inf (``CalibrationResult.data_nonfinite``'s form);
    ``feeds`` are the last :data:`MAX_HELD_OUT` rows whose float inputs are all finite, the rows held out come
    from them (rows past ``KeptRows``' limit are decoded again on every read). They are copies where the source
    gave views (mapped .npy / .npz rows): the choice reads them until it ends, and a data file saved again in
    place meanwhile would change them, or end the process (SIGBUS) when saved shorter."""
    read, bad, finite = 0, [], deque(maxlen=MAX_HELD_OUT)
    for i, feed in source.numbered_samples(n):
        read += 1
        found = _nonfinite_counts(feed)
        bad.extend((name, i, c) for name, c in found)
        if not found:
            finite.append(feed)
    return read, bad, [{k: _owned(v) for k, v in feed.items()} for feed in finite]


def _owned(a):
    """``a``, or a copy of it when it is a view of memory it does not own."""
    return np.array(a) if isinstance(a, np.ndarray) and not a.flags.owndata else a


def _nonfinite_counts(feed: dict[str, np.ndarray]) -> list[tuple[str, int]]:
    """``(input, NaN / Inf count)`` of the float inputs of ``feed`` holding NaN or +-Inf."""
    if nonfinite_input(feed) is None:
        return []
    counts = []
    for name, v in feed.items():
        a = np.asarray(v)
        if a.dtype.kind == "f" and (c := int(a.size - np.isfinite(a).sum())):
            counts.append((name, c))
    return counts


def left_out_samples(bad: list[tuple[str, int, int]]) -> str:
    """``sample 0`` / ``samples 2, 4``: the rows of ``bad`` (``ChoiceReport.left_out``), at most 8 named."""
    rows = sorted({s for _, s, _ in bad})
    shown = ", ".join(str(s) for s in rows[:8]) + (" ..." if len(rows) > 8 else "")
    return f"{'sample' if len(rows) == 1 else 'samples'} {shown}"


def _numbered_as_given(
    cal: CalibrationResult, view: WithoutRows, bad: list[tuple[str, int, int]]
) -> CalibrationResult:
    """``cal`` (a pass over ``view``) with its samples numbered as in the data given, and ``bad`` (the rows
    ``view`` leaves out) as its data's NaN / Inf: its warnings still name them (nothing else of those rows was
    seen)."""
    nonfinite = [(t, view.original(s), c) for t, s, c in cal.nonfinite]
    return replace(cal, nonfinite=nonfinite, data_nonfinite=sorted(bad, key=lambda r: (r[1], r[0])))


def score_points(graph: onnx.GraphProto) -> list[tuple[str, int, int]] | None:
    """Where the score reads a model none of whose graph outputs is float (step 3).

    Returns None when a graph output is float (the outputs are scored). Otherwise ``(node name, input
    index, TensorProto elem type)`` of each float input of the nodes that compute the integer outputs
    (ArgMax's logits, a Cast's float input), walking back through nodes without a float input (an Add
    of integer indices) and stopping at graph inputs; constants are not read. ``[]``: there is no such
    tensor.
    """
    types = elem_types(graph)
    if any(types.get(o.name) in _FLOAT_TYPES for o in graph.output):
        return None
    producer = {t: n for n in graph.node for t in n.output if t}
    constant = {i.name for i in graph.initializer} | {
        n.output[0] for n in graph.node if n.op_type == "Constant"
    }
    points: dict[tuple[str, int], int] = {}
    todo, seen = [o.name for o in graph.output], set()
    while todo:
        t = todo.pop()
        node = producer.get(t)
        if t in seen or node is None:
            continue
        seen.add(t)
        live = [(i, x) for i, x in enumerate(node.input) if x and x not in constant]
        floats = [(i, x) for i, x in live if types.get(x) in _FLOAT_TYPES]
        for i, x in floats:
            points[(node.name, i)] = types[x]
        if not floats:
            todo.extend(x for _, x in live)
    return [(name, i, elem) for (name, i), elem in points.items()]


def _point_tensors(proto: onnx.ModelProto, points: list[tuple[str, int, int]]) -> list[tuple[str, int]]:
    """``(tensor name, elem type)`` of each score point in ``proto``: the named node's input there (in a
    quantized model, after the Q/DQ in front of it); the point's own tensor name when the node is gone."""
    nodes = {n.name: n for n in proto.graph.node}
    out = []
    for name, i, elem in points:
        node = nodes.get(name)
        out.append((node.input[i] if node is not None and i < len(node.input) else name, elem))
    return out


def _reference_names(proto: onnx.ModelProto, points: list[tuple[str, int, int]] | None) -> list[str]:
    """The tensors :func:`_run` reads of the float model ``proto``: its outputs, or those at ``points``."""
    return [t for t, _ in _point_tensors(proto, points)] if points else [o.name for o in proto.graph.output]


def _run(
    proto,
    rows: list[dict[str, np.ndarray]],
    points: list[tuple[str, int, int]] | None = None,
    *,
    in_place: bool = False,
) -> list[list[np.ndarray]]:
    """Every output of ``proto`` for each row (onnxruntime CPU), or with ``points`` (:func:`score_points`)
    the tensors at those points. ``in_place``: ``proto`` is a scratch model the points are added to as
    graph outputs (else a copy gets them).

    The rows run one at a time (the float model's are kept from the calibration pass where it can: module
    docstring, step 3): the held-out rows as one batch gave other bits on minilm_l6_v2 (float and
    quantized) and digits_transformer (float), and was not faster overall (6 rows, one loaded run each:
    nudenet_320n quantized 0.072 -> 0.044 s but float 0.22 -> 0.25 s, ppocrv4_rec float 0.36 -> 0.53 s,
    quantized 0.32 -> 0.34 s). The session is onnxruntime's default one: other options
    that give the same outputs (ORT_ENABLE_EXTENDED, ``session.disable_prepacking``; on ppocrv4_rec's chosen
    model also ``enable_mem_pattern`` or ``enable_cpu_mem_arena`` off, 3 builds each: 0.08-0.12 s against
    0.07-0.09 s, 16 rows 0.25-0.42 s against 0.23-0.33 s; one intra-op thread ran them in 0.21-0.22 s of CPU,
    the same bits there, but it gives up the second core's wall time) build it in the same CPU
    within the noise (nudenet_320n quantized 0.08-0.11 s, ppocrv4_rec 0.12-0.16 s); about half of a build is
    the graph itself (nudenet_320n's 918-node quantized model: 0.04-0.05 s of CPU with ORT_DISABLE_ALL, whose
    outputs differ), so the choice's cost in sessions is one build per model scored."""
    if points:
        tensors = _point_tensors(proto, points)
        if not in_place:
            proto = add_outputs(proto, [])
        have = {o.name for o in proto.graph.output}
        proto.graph.output.extend(
            helper.make_tensor_value_info(t, elem, None) for t, elem in dict(tensors).items() if t not in have
        )
        names = [t for t, _ in tensors]
    session = make_session(proto, spinning=False)  # many short runs, a score computed between models
    if not points:
        names = [o.name for o in session.get_outputs()]
    return [[np.asarray(v) for v in session.run(names, feed)] for feed in rows]


def _score(reference: list[list[np.ndarray]], got: list[list[np.ndarray]]) -> float:
    """Mean over float outputs of the output SQNR over all rows, dB (:data:`EXACT_DB` when bit-exact).
    Values that are NaN / Inf in either model (non-finite input rows) are left out, as
    :func:`~workbench.core.analysis.evaluate.evaluate` leaves them out; an output with none left scores
    ``-EXACT_DB``."""
    out = []
    for k in range(len(reference[0]) if reference else 0):
        f = [r[k] for r in reference]
        if f[0].dtype.kind != "f":
            continue
        signal = noise = 0.0
        kept = 0
        for x, g in zip(f, got, strict=True):
            q = g[k]
            ok = np.isfinite(x) & np.isfinite(q)
            if not ok.all():
                x, q = x[ok], q[ok]
            kept += x.size
            signal += float(np.square(x, dtype=np.float64).sum())
            noise += float(np.square(x.astype(np.float64) - q.astype(np.float64)).sum())
        if not kept or not (math.isfinite(signal) and math.isfinite(noise)):
            out.append(-EXACT_DB)
        elif noise == 0:
            out.append(EXACT_DB)
        else:
            out.append(min(EXACT_DB, 10 * math.log10(max(signal, 1e-30) / noise)))
    return float(np.mean(out)) if out else 0.0


def _as_minmax(cal: CalibrationResult) -> CalibrationResult:
    """MinMax observers from the exact min / max every per-tensor histogram of ``cal`` tracks (what a
    MinMax calibration of the same rows gives); tensors without one are left to calibrate again."""
    observers = {}
    for t, obs in cal.observers.items():
        if not isinstance(obs, HistogramObserver) or obs.granularity != Granularity.per_tensor:
            continue
        h = obs.hists[0]
        if h.lo is None or not (math.isfinite(h.vmin) and math.isfinite(h.vmax)):
            continue
        spec = obs.spec.model_copy(update={"observer": "minmax", "observer_args": {}})
        observers[t] = Observer.from_state(
            {
                "observer": "minmax",
                "tensor": t,
                "spec": spec.model_dump(mode="json"),
                "axis": obs.axis,
                "count": obs.count,
                "nonfinite": obs.nonfinite,
                "batches": obs.batches,
                "data": {"min": float(h.vmin), "max": float(h.vmax), "shape": []},
            }
        )
    return CalibrationResult(
        observers,
        cal.samples_seen,
        0.0,
        list(cal.nonfinite),
        [t for t in cal.empty if t in observers],
        [],
        cal.batch_size,
        [],
        list(cal.data_nonfinite),
    )
