"""Latency placement: keep float the Conv units with one input channel per group, the AveragePool units
and the MatMuls of two activations whose quantized form measured slower.

Runs before calibration when the job asks for the latency check (``quantize(...,
latency_check=True)``; the CLI's default). For every quantized Conv unit of the main graph that reads one
input channel per group (depthwise: ``group`` equal to its input channels; or a single-channel input, such
as a grayscale image or an audio stem) it measures QLinearConv against a float Conv between the same Q/DQ
pairs, at the unit's input shape on the latency feed (the first calibration sample),
with :func:`workbench.core.runtime.unit_latency.conv_unit_latency` (about 0.3 s per distinct shape,
cached on disk, so a second quantize of the same model measures nothing). A unit whose ratio
int8 / float is above :data:`KEEP_FLOAT_ABOVE` is kept float and reported
(``IssueCode.LATENCY_KEPT_FLOAT``, with the ratio and the shape, and the load average when the probe ran
on a loaded machine: a probe is one small op, the decision keeps that unit float and no other, so it is
taken under load too and said so). The exclusion is added to the
result's recipe (``QuantizeResult.recipe``), so a project saved from it replays the same model on
any machine without measuring again. A unit the recipe names itself (an override, or a rule by its
name: :func:`workbench.core.planning.island_guard.named_by_recipe`) is neither probed nor kept float:
the user's explicit setting wins, as in the latency fallback.

A Conv kept float keeps its output float too (the planner's rule: onnxruntime would otherwise
re-quantize it between Q/DQ pairs), so the Conv after it reads a float input; the probe does not
price that, which is why the whole model is measured again by the latency check afterwards
(ppocr_mobile_v2_cls: 1.6x -> about 1.25x float with its 11 depthwise Convs float), and the latency
fallback (:mod:`workbench.core.pipeline.latency_fallback`) leaves whole islands float when the
model is still slower (ppocr_mobile_v2_cls: every island, 0.95-0.98x).

Why these units: each output of a Conv with one input channel per group sums only its kernel's taps
(9 for 3x3), too few for the integer GEMM to win back the layout change and requantization onnxruntime
adds around QLinearConv; dense Convs, MatMul and Gemm with a weight won in every probe on this machine
(pointwise 32->64 at 24x96: 0.56), except at microsecond sizes, where no unit is worth a probe (QGemm at
1x64 x 64x64: 1.6-2.2x float; see benchmarks/results/fusion_latency.md, digits_mlp). digits_cnn's first Conv (1 -> 16 channels, 3x3, input 1x1x8x8)
measured 1.20-1.25x as QLinearConv, its next two (16 and 32 input channels) 0.80-0.84x.
onnxruntime's QLinearAveragePool measured slower than a float AveragePool between the same DQ and Q at
every size tried (1.15x at digits_cnn's 1x64x4x4, about 5x at 1x64x32x32;
:func:`workbench.core.runtime.unit_latency.pool_unit_latency`); with those two units float digits_cnn
(batch 1) measured 0.86-0.91x float, 1.05-1.08x as planned (thread CPU time, load average 4-10).
A MatMul of two activations (attention's Q Kᵀ and P V) has no weight: quantized, each input pays a
QuantizeLinear on every run, and the product is small (12 heads x 32 x 32 x 32 in minilm_l6_v2), so it is probed too
(:func:`workbench.core.runtime.unit_latency.matmul_unit_latency`, the unit's real input shapes).

How many: int8 coverage is what the user asked for, so the placement gives it up only for its largest gains.
Of the units measured slower as int8 it keeps float those with the largest measured saving first (the probe's
int8 time minus its float time, in microseconds), but never so many that fewer than :data:`MIN_INT8_SHARE` of
the Conv / ConvTranspose / MatMul / Gemm units the plan quantizes without the placement stay quantized
(ppocrv4_rec: 44 of 51). The units left out for that are quantized as planned and named in one note
(``IssueCode.LATENCY_KEPT_FLOAT``, on no node: how many, and their probes' total saving). AveragePool units
do not count and are always kept float when slower. Why 0.85 (ppocrv4_rec, 51 Conv/MatMul units; the
sum of per-node minimum times of onnxruntime's profiler over 200 interleaved runs and the fastest thread
CPU time, 1 thread, exact match on its 100 eval rows; benchmarks/results/fusion_latency.md, 2026-12-05):

=========================================================  =====  =================  ==============  =====
float units (the rest int8)                                int8   profiler sum, ms   thread CPU, ms  exact
=========================================================  =====  =================  ==============  =====
7 depthwise Convs (Conv.1, 13-31), 4 attention MatMuls     40/51  16.00              15.76           0.97
the 7 depthwise Convs                                      44/51  15.88              15.42           0.97
the 6 depthwise 5x5 Convs (Conv.13-31)                     45/51  15.86              15.76           0.97
the 4 attention MatMuls                                    47/51  16.49              16.10           0.98
none                                                       51/51  16.56              15.87           0.97
=========================================================  =====  =================  ==============  =====

The depthwise 5x5 Convs save 60-230 us each kept float; the attention MatMuls and Conv.1 about 20 us each,
0.1 % of a 16 ms run, which no whole-model measurement resolves: at 44-45 of 51 the model is as fast as with
all 11 float, so the last units a placement keeps float buy nothing measurable and cost coverage.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import onnx

from workbench.core.issues import IssueCode, PlanIssue, Severity
from workbench.core.pipeline.calibrate_pass import require_data
from workbench.core.pipeline.latency_check import latency_feed
from workbench.core.pipeline.passes import Job, PassResult
from workbench.core.pipeline.plan_passes import guard_islands, job_facts, resolve_plan
from workbench.core.planning.island_guard import named_by_recipe
from workbench.core.progress import no_progress
from workbench.core.recipe.spec import PlanMode
from workbench.core.runtime.session import add_outputs, make_session
from workbench.core.runtime.unit_latency import conv_unit_latency, matmul_unit_latency, pool_unit_latency
from workbench.core.wording import count

log = logging.getLogger(__name__)

#: int8 / float latency of a unit above which it is kept float (a margin over 1.0 for noise).
KEEP_FLOAT_ABOVE = 1.05

#: Least share of the Conv / ConvTranspose / MatMul / Gemm units the plan quantizes that stay int8 after the
#: placement (see the module docstring).
MIN_INT8_SHARE = 0.85

#: The op types whose units :data:`MIN_INT8_SHARE` counts.
COMPUTE_OPS = ("Conv", "ConvTranspose", "MatMul", "Gemm")


def thin_conv_units(job: Job) -> dict[str, tuple[onnx.NodeProto, list[int]]]:
    """Quantized main-graph Conv units of ``job.plan`` that read one input channel per group (weight shape
    ``[M, 1, k...]``: depthwise, or a single-channel input): node name -> (node, weight shape)."""
    graph = job.model.proto.graph
    nodes = {n.name: n for n in graph.node}
    inits = {i.name: list(i.dims) for i in graph.initializer}
    found = {}
    for name, unit in job.plan.units.items():
        node = nodes.get(name)
        if unit.excluded or unit.graph or unit.op_type != "Conv" or node is None or unit.weight is None:
            continue
        shape = inits.get(node.input[1])
        group = next((a.i for a in node.attribute if a.name == "group"), 1)
        if shape and len(shape) >= 3 and shape[1] == 1 and shape[0] % group == 0:
            found[name] = (node, shape)
    return found


def average_pool_units(job: Job) -> dict[str, onnx.NodeProto]:
    """Quantized main-graph AveragePool units of ``job.plan``: node name -> node."""
    nodes = {n.name: n for n in job.model.proto.graph.node}
    return {name: nodes[name] for name, unit in job.plan.units.items()
            if not unit.excluded and not unit.graph and unit.op_type == "AveragePool" and name in nodes}


def activation_matmul_units(job: Job) -> dict[str, onnx.NodeProto]:
    """Quantized main-graph MatMul units of ``job.plan`` whose two inputs are activations: node name -> node."""
    nodes = {n.name: n for n in job.model.proto.graph.node}
    found = {}
    for name, unit in job.plan.units.items():
        node = nodes.get(name)
        if unit.excluded or unit.graph or unit.op_type != "MatMul" or node is None or unit.weight is not None:
            continue
        if {q.index for q in unit.quant_inputs if q.role == "activation"} == {0, 1}:
            found[name] = node
    return found


def _input_shapes(job: Job, names: list[str]) -> dict[str, list[int]]:
    feed = latency_feed(job.model, job.data)
    inner = [n for n in names if n not in feed]
    sess = make_session(add_outputs(job.model.proto, inner), threads=1)
    outs = sess.run(inner, feed) if inner else []
    shapes = {n: list(v.shape) for n, v in zip(inner, outs, strict=True)}
    shapes.update((n, list(feed[n].shape)) for n in names if n in feed)
    return shapes


@dataclass(frozen=True)
class _Slow:
    """A unit whose quantized form measured slower: the note if it is kept float, its ratio (quantized / float)
    and its saving kept float (seconds of one run: the probe's quantized time minus its float time)."""

    note: str
    ratio: float
    saving_s: float


def _probe(job: Job, name: str, node: onnx.NodeProto, shapes: dict, opset: int,
           w_shape: list[int] | None) -> _Slow | None:
    """The unit's measured slowdown when its quantized form measured slower than :data:`KEEP_FLOAT_ABOVE`
    times its float form, else None (also when the probe could not run). ``w_shape``: a Conv's weight shape;
    None for an AveragePool or a MatMul."""
    try:
        if w_shape is not None:
            x = shapes[node.input[0]]
            lat, kernel, where = conv_unit_latency(node, w_shape, x, opset), "QLinearConv", f"input {x}"
        elif node.op_type == "AveragePool":
            x = shapes[node.input[0]]
            lat, kernel, where = pool_unit_latency(node, x, opset), "QLinearAveragePool", f"input {x}"
        else:
            a, b = shapes[node.input[0]], shapes[node.input[1]]
            lat = matmul_unit_latency(a, b, bool(job.plan.units[name].outputs), opset)
            kernel, where = "a quantized MatMul (a Q on each input)", f"inputs {a} x {b}"
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own types; keep the unit as planned
        log.info("latency probe of %s failed: %s", name, exc)
        return None
    if not lat.measured or lat.ratio <= KEEP_FLOAT_ABOVE:  # a zero timing decides nothing
        return None
    load = "" if lat.reliable else f", at {lat.unreliable_because()}: not cached, measured again next run"
    return _Slow(f"kept in float: as {kernel} it measured {lat.ratio:.2f}x its float latency at {where} "
                 f"(onnxruntime CPU, 1 thread{load}); name the node in an override to quantize it anyway", lat.ratio,
                 lat.timed_quant_s - lat.timed_float_s)


def compute_units(job: Job) -> list[str]:
    """Units of ``job.plan`` that :data:`MIN_INT8_SHARE` counts: quantized (not excluded) units of the
    :data:`COMPUTE_OPS` op types, in plan order."""
    return [n for n, u in job.plan.units.items() if not u.excluded and u.op_type in COMPUTE_OPS]


def most_kept_float(quantized: int) -> int:
    """How many of ``quantized`` compute units the placement may keep float: the most that leaves at least
    :data:`MIN_INT8_SHARE` of them quantized (51 -> 7: 44 of 51 stay int8; 20 -> 3: 17 of 20, exactly 0.85)."""
    return quantized - math.ceil(round(quantized * MIN_INT8_SHARE, 9))  # round: a product a hair above n costs no unit


def within_share(slow: dict[str, _Slow], counted: set[str], limit: int) -> tuple[list[str], list[str]]:
    """(units kept float, units quantized anyway) of the ``slow`` ones: the largest saving first, at most
    ``limit`` of the ``counted`` units (the compute units; the others are always kept). Both lists keep the
    order of ``slow``; equal savings keep it too."""
    kept: set[str] = set()
    taken = 0
    for name in sorted(slow, key=lambda n: -slow[n].saving_s):
        if name in counted:
            if taken >= limit:
                continue
            taken += 1
        kept.add(name)
    return [n for n in slow if n in kept], [n for n in slow if n not in kept]


def _capped_issue(capped: list[str], slow: dict[str, _Slow], int8: int, total: int) -> PlanIssue:
    """The note on the units measured slower as int8 but quantized to keep :data:`MIN_INT8_SHARE` int8 (on no
    node: they are quantized)."""
    shown = ", ".join(capped[:4]) + (f" and {len(capped) - 4} more" if len(capped) > 4 else "")
    cost_us = sum(slow[n].saving_s for n in capped) * 1e6
    return PlanIssue("", Severity.INFO, (
        f"latency placement: {count(len(capped), 'more unit')} ({shown}) measured slower as int8 by "
        f"{'its probe' if len(capped) == 1 else 'their probes'} ({cost_us:.0f} us in all, onnxruntime CPU, 1 thread) "
        f"and {'was' if len(capped) == 1 else 'were'} quantized to keep {MIN_INT8_SHARE:.0%} of the "
        f"Conv/ConvTranspose/MatMul/Gemm units int8 ({int8} of {total}); the units with the largest measured "
        "savings are the ones kept float; exclude a node in the recipe to keep it float anyway"),
        code=IssueCode.LATENCY_KEPT_FLOAT)


class LatencyPlacement:
    """Keep float the Conv units with one input channel per group, the AveragePool units and the activation x
    activation MatMuls whose quantized form measured slower (see the module docstring)."""

    name = "latency-placement"

    def applies(self, job: Job) -> bool:
        return job.latency_check and job.guard and job.plan.mode == PlanMode.STATIC

    def run(self, job: Job) -> PassResult:
        require_data(job)  # calibration's refusal before any probe (digits_cnn spent about 2 s probing first)
        units: dict[str, tuple[onnx.NodeProto, list[int] | None]] = dict(thin_conv_units(job))
        units.update((n, (node, None)) for n, node in average_pool_units(job).items())
        units.update((n, (node, None)) for n, node in activation_matmul_units(job).items())
        # a node the user named (an override or a rule by its name) is quantized as asked, never measured away;
        # nor one this job's first placement quantized to keep its int8 share (a latency fallback's trial runs
        # with that placement's exclusions in its recipe: its own share would count fewer units)
        units = {n: v for n, v in units.items()
                 if not named_by_recipe(job.user_recipe, n, v[0].op_type) and n not in job.placement_capped}
        if not units:
            return PassResult(False)
        probing, report = f"Latency placement: probing {len(units)} units", job.progress or no_progress
        report(0, len(units), probing)
        tensors = sorted({t for node, _ in units.values() for t in node.input[:2 if node.op_type == "MatMul" else 1]})
        try:
            shapes = _input_shapes(job, tensors)
        except Exception as exc:  # noqa: BLE001 - no decision without shapes; the latency check still reports
            log.info("latency placement skipped: %s", exc)
            report(len(units), len(units), probing)
            return PassResult(False)
        opset = next((o.version for o in job.model.proto.opset_import if o.domain in ("", "ai.onnx")), 17)
        slow: dict[str, _Slow] = {}
        for i, (name, (node, w_shape)) in enumerate(units.items()):
            if job.cancel is not None:
                job.cancel.check()  # raises Cancelled between probes
            if i:
                report(i, len(units), probing)
            note = _probe(job, name, node, shapes, opset, w_shape)
            if note is not None:
                slow[name] = note
        report(len(units), len(units), probing)
        if not slow:
            return PassResult(False)
        counted = compute_units(job)
        kept, capped = within_share(slow, set(counted), most_kept_float(len(counted)))
        notes = []
        if capped:
            int8 = len(counted) - sum(n in set(counted) for n in kept)
            notes.append(_capped_issue(capped, slow, int8, len(counted)))
            # a later re-run (the latency fallback) keeps the note with the units' notes, and these units quantized
            job.placement_capped, job.placement_notes = capped, list(notes)
        if not kept:
            return PassResult(False, notes)
        recipe = (job.guard_recipe or job.recipe).with_excluded(kept)
        job.placed_float, job.placement_recipe = kept, job.user_recipe
        # a measured decision: the result's recipe records it, so a saved project replays the same model
        job.user_recipe = job.user_recipe.with_excluded(kept)
        # a float Conv can leave element-wise neighbours reaching no integer kernel: the island guard again
        facts = job_facts(job)
        job.plan, job.guard_recipe, islands = guard_islands(job.model, recipe, resolve_plan(job.model, recipe, facts),
                                                            facts)
        issues = [PlanIssue(n, "info", slow[n].note, code=IssueCode.LATENCY_KEPT_FLOAT, units=(n,),
                            ratio=slow[n].ratio) for n in kept]
        return PassResult(True, issues + notes + islands)
