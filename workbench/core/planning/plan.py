"""Resolve a recipe against a graph: node units, Q/DQ placement and the tensors to calibrate.

Placement is tensor-centric like onnxruntime's QDQ format, but explicit:

* a node unit is a main op plus a folded Relu/Clip (folded only when the main output has one
  consumer, is not a graph output, and the activation spec is asymmetric, so that onnxruntime's
  ``ReluQuantFusion`` / ``ClipQuantFusion`` removes it);
* every float activation tensor at a unit boundary gets ONE Q->DQ pair shared by its consumers
  (``plan.activations``, to be calibrated);
* weights get an integer initializer and a DequantizeLinear per consumer; biases become int32
  with ``scale = input_scale * weight_scale`` (written by :mod:`workbench.core.writers.qdq`);
* pass-through ops (Reshape, Transpose, MaxPool, ...) whose input is quantized reuse the input's
  qparams for their output (``plan.aliases``; not calibrated), so onnxruntime drops their Q/DQ;
* a Concat input whose only consumer is the Concat uses the Concat output's grid (``plan.shared``,
  also listed in ``plan.aliases``; still calibrated so the range guard sees its own range). The
  consumers see every input on the output's grid anyway (QLinearConcat requantizes to it), so this
  only removes a second rounding, and it gives an input the output's headroom: a detector's class
  logits whose calibration maximum is below 0 (no confident object at that level in the data)
  are otherwise clipped there, capping every score at sigmoid(max);
* the output of an excluded Conv / ConvTranspose / Gemm stays float for its consumers: with a Q/DQ
  pair on both sides, onnxruntime's WeightBiasQuantization re-quantizes the float node's weight
  (per-tensor int8) and runs it as QLinearConv, so the exclusion would not hold;
* the output of a MatMul / Gemm unit that no quantized unit reads (directly or through
  pass-through ops), a graph output among them, stays float (``NodeUnit.float_outputs``):
  onnxruntime fuses the unit into MatMulIntegerToFloat / QGemm with a float output, so the
  output's Q/DQ pair would only add a rounding and a requantize + dequantize at run time. On
  minilm_l6_v2 with only MatMuls quantized: 42 of 48 QLinearMatMul + DequantizeLinear become
  MatMulIntegerToFloat, 84 Q/DQ nodes fewer (156 instead of 240).

Nothing unsupported is silent: each case becomes a :class:`PlanIssue` naming the node.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass, field
from enum import StrEnum

import onnx

from workbench.core.errors import RecipeError
from workbench.core.graph import op_families as U
from workbench.core.graph.index import GraphIndex, attrs_of, elem_types, iter_graphs, subgraphs
from workbench.core.issues import IssueCode, PlanIssue
from workbench.core.planning import mx_rules, nonnegative, shape_guard, stats_guard
from workbench.core.recipe import hardware
from workbench.core.recipe.recipe import Recipe, ResolvedNode, resolve_node
from workbench.core.recipe.spec import Granularity, NodeConfig, PlanMode, QuantSpec
from workbench.core.wording import count, plural


class Role(StrEnum):
    """The part a unit's input plays (see :class:`UnitInput`)."""

    ACTIVATION = "activation"
    WEIGHT = "weight"
    BIAS = "bias"
    CONST = "const"


@dataclass
class UnitInput:
    """One quantized input of a unit.

    ``role``: "activation" (shared Q/DQ, calibrated), "weight" (integer initializer, ``spec.axis``
    resolved), "bias" (int32 from input and weight scales) or "const" (a constant at an
    activation position, quantized with the activation spec from its own values).
    """

    index: int
    tensor: str
    role: Role
    spec: QuantSpec

    def __post_init__(self) -> None:
        self.role = Role(self.role)


@dataclass
class NodeUnit:
    """A node unit: ``node`` (main node name) plus folded activations in ``nodes``.

    ``inputs`` / ``outputs`` are the float activation tensors with a Q/DQ pair at the unit's
    boundary; ``weight`` / ``bias`` the initializer names (None when absent or kept float);
    ``quant_inputs`` the per-input details; ``graph`` is "" for the main graph, otherwise the
    name of the node holding the subgraph; ``float_outputs`` the unit's outputs that stay float
    because no quantized unit reads them (MatMul / Gemm only, see the module docstring): not
    calibrated, no Q/DQ pair, still the unit's result for per-unit error analysis;
    ``writes_float`` is True when onnxruntime would fuse the unit with a float output (so an output
    that only this unit's readers quantize would stay float without them).
    """

    node: str
    op_type: str
    nodes: list[str]
    inputs: list[str]
    outputs: list[str]
    weight: str | None
    bias: str | None
    config: NodeConfig
    excluded: bool
    quant_inputs: list[UnitInput] = field(default_factory=list)
    graph: str = ""
    float_outputs: list[str] = field(default_factory=list)
    writes_float: bool = False

    @property
    def results(self) -> list[str]:
        """Every output tensor of the unit, quantized (``outputs``) or kept float (``float_outputs``)."""
        return list(self.outputs) + list(self.float_outputs)


@dataclass
class QuantPlan:
    """Result of :func:`build_plan`.

    ``activations``: tensor -> spec of every tensor to calibrate; ``aliases``: tensor -> the
    calibrated tensor whose qparams it reuses; ``mode``: static | dynamic | weight_only;
    ``min_opset``: the lowest opset the output needs; ``proxies``: output of a unit inside an If
    branch -> the If output it becomes (calibrated in the main graph, qparams reused in the branch);
    ``shared``: Concat input -> the Concat output whose qparams it uses (calibrated, and in
    ``aliases`` too); ``writers``: calibrated tensor -> the unit that writes it and whose activation
    spec its Q/DQ pair therefore takes (a unit's output, or an If output its branch units write);
    absent for a tensor no quantized unit writes (a graph input, a float node's output): its first
    reader's spec decides.
    """

    units: dict[str, NodeUnit]
    activations: dict[str, QuantSpec]
    aliases: dict[str, str]
    issues: list[PlanIssue]
    mode: PlanMode
    min_opset: int
    recipe: Recipe
    proxies: dict[str, str] = field(default_factory=dict)
    shared: dict[str, str] = field(default_factory=dict)
    writers: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.mode = PlanMode(self.mode)

    def grid_of(self, tensor: str) -> str:
        """The calibrated tensor whose Q/DQ grid ``tensor`` uses: itself, or the end of its chain of
        :attr:`aliases` (a pass-through op's output, a Concat input sharing the output's grid)."""
        return alias_root(self.aliases, tensor)

    def grid_spec(self, tensor: str) -> QuantSpec | None:
        """The activation spec of the Q/DQ grid the static writer gives ``tensor`` (the spec of
        :meth:`grid_of`'s tensor in :attr:`activations`: where a tensor's writer and a reader asked for
        different dtypes, the writer's request, else the first reader's); None when it gets no pair."""
        return self.activations.get(self.grid_of(tensor))

    def qdq_tensors(self) -> list[str]:
        """Every tensor that gets a Q/DQ pair (calibrated first, then aliases)."""
        return list(self.activations) + [t for t in self.aliases if t not in self.activations]

    def counted_units(self) -> dict[str, NodeUnit]:
        """The units "N of M node units quantized" counts (M; N: those not excluded), by node name: every unit
        but a standalone Relu / Clip the plan made a unit only because the tensor it reads is quantized
        (:meth:`carried`). Such a unit rides with the units that quantize
        its input, as the preset folds Relu / Clip into their producer: it is no unit of the same model with those
        units excluded, so counting it made M depend on exclusions (case 20: "3 of 3" as planned, "0 of 2" with
        --exclude '*'; now 2 of 2 and 0 of 2). Its Q/DQ is still written."""
        folded = U.FOLD_OPS - set(self.recipe.quantized_op_types())
        return {n: u for n, u in self.units.items() if u.op_type not in folded}

    def carried(self, node: str) -> bool:
        """True when unit ``node`` is a Relu / Clip the plan made a unit only because the tensor it reads is
        quantized (a standalone activation: the preset folds these ops into their producer and quantizes no
        other Relu / Clip). Float, it is no unit: the plan of the same model with its island float has no entry
        for it; :meth:`counted_units` leaves it out."""
        return node not in self.counted_units()

    def quantizes_any(self) -> bool:
        """True when some node unit of :attr:`units` is not excluded, in any graph (main or an If / Loop body),
        a :meth:`carried` Relu / Clip included (its Q/DQ is written, though :meth:`quantized_count` leaves it out);
        False for a plan that keeps every unit float or has none. What the plan asks to quantize: a written
        model may still hold Q/DQ the plan did not make (a pre-quantized input;
        :func:`workbench.core.pipeline.export.quantizes_nothing` checks the proto too)."""
        return any(not u.excluded for u in self.units.values())

    def quantized_count(self) -> tuple[int, int]:
        """(N, M) of "N of M node units quantized": :meth:`counted_units` not excluded, and all of them."""
        counted = self.counted_units()
        return sum(not u.excluded for u in counted.values()), len(counted)


def alias_root(aliases: dict[str, str], tensor: str) -> str:
    """The end of ``tensor``'s chain in ``aliases`` (tensor -> the tensor whose qparams it reuses);
    ``tensor`` itself when it has no alias."""
    seen = {tensor}
    while tensor in aliases and aliases[tensor] not in seen:
        tensor = aliases[tensor]
        seen.add(tensor)
    return tensor


class GraphFacts:
    """What :func:`build_plan` reads from the main graph whatever the recipe: element types, the
    :class:`GraphIndex`, and (static plans) the reduction-statistic and masking tensors of
    :mod:`stats_guard`. Computed on first use; one object serves every plan of one unchanged
    model (the guards resolve the plan again with more exclusions, 2-3 times per job: masking alone
    reads every float weight, about 0.2 s on minilm_l6_v2)."""

    def __init__(self, proto: onnx.ModelProto) -> None:
        self.proto = proto
        self.types = elem_types(proto.graph)
        self.ix = GraphIndex(proto.graph, self.types)
        self._stats: set[str] | None = None
        self._mask_values: dict[str, float] | None = None
        self._extremes: dict[str, tuple[float, float]] | None = None
        self._size_derived: list[str] | None = None
        #: opset -> "" when the model converts to it, else the conversion's error
        #: (:func:`~workbench.core.planning.opset_fit.reachable_opset`)
        self.opset_conversions: dict[int, str] = {}
        #: (data id, tensors) -> (data, answer) of the float-model size probe
        #: (:func:`~workbench.core.pipeline.size_probe.changing_with_size`): the recipe choice quantizes its
        #: variants with one GraphFacts on one data source, and each variant ran the probe again
        self.size_probes: dict[tuple, tuple] = {}
        #: the static writer's memo of quantized weights of this proto (:class:`~workbench.core.writers.qdq.QdqWriter`
        #: ``weights``): the recipe choice writes its variants and groups from one GraphFacts
        self.quantized_weights: dict = {}

    @property
    def stats(self) -> set[str]:
        if self._stats is None:
            self._stats = stats_guard.statistics_tensors(self.ix)
        return self._stats

    @property
    def extremes(self) -> dict[str, tuple[float, float]]:
        """:func:`~workbench.core.planning.stats_guard.float_extremes` of the graph: every float
        weight read once, for the masking, infinity and non-finite weight checks."""
        if self._extremes is None:
            self._extremes = stats_guard.float_extremes(self.ix)
        return self._extremes

    @property
    def size_derived(self) -> list[str]:
        """:func:`~workbench.core.planning.shape_guard.size_derived_tensors` of the graph, computed once (a
        copy each time): every quantize's size guard walked the graph again, 9 times in nudenet_320n's CLI job."""
        if self._size_derived is None:
            self._size_derived = shape_guard.size_derived_tensors(self.ix)
        return list(self._size_derived)

    @property
    def mask_values(self) -> dict[str, float]:
        """:func:`~workbench.core.planning.stats_guard.masking_values` of the graph, computed once."""
        if self._mask_values is None:
            self._mask_values = stats_guard.masking_values(self.ix, self.extremes)
        return self._mask_values

    @property
    def masks(self) -> set[str]:
        return set(self.mask_values)


def build_plan(model, recipe: Recipe, facts: GraphFacts | None = None) -> QuantPlan:
    """Resolve ``recipe`` against ``model`` (a PreparedModel) into a :class:`QuantPlan`.

    ``facts`` (a :class:`GraphFacts` of ``model.proto``) skips the graph analyses an earlier plan of
    the same model already made; the plan is the same either way.

    Raises
    ------
    RecipeError
        If the recipe names a node name that is ambiguous in the original model
        (``model.ambiguous_names``), or the preset is unknown, or its ``op_types`` lists only op types the
        model lacks so that nothing is quantized (:func:`_check_op_types_select`), or only op types of it that
        never form a unit (data-movement ops such as Flatten, MaxPool: :func:`_check_op_types_form_units`).
    """
    _check_ambiguous(model, recipe)
    preset = recipe.preset_obj()
    if facts is None or facts.proto is not model.proto:
        facts = GraphFacts(model.proto)
    builder = _Builder(facts, recipe, preset.mode)
    builder.run()
    if not builder.units:
        _check_op_types_select(model.proto, recipe)
        _check_op_types_form_units(facts, recipe, preset.mode)
    _report_qonnx_only(builder, recipe)
    builder.issues += mx_rules.plan_issues(builder.units)
    _warn_saturation(builder.units, builder.issues, preset.mode)
    builder.issues += unmatched_entries(model.proto, recipe)
    min_opset = max(preset.min_opset, builder.min_opset())
    return QuantPlan(builder.units, builder.activations, builder.aliases, builder.issues,
                     preset.mode, min_opset, recipe, builder.proxies, builder.shared, builder.writers)


def _asks_other(spec: QuantSpec, reqs: list[tuple[str, QuantSpec, bool]], dumps: dict | None = None) -> bool:
    """True when a request's spec serialises (``model_dump_json``) differently from ``spec``. A request
    holding ``spec`` itself is not serialised: most tensors have one request, the chosen one, and
    serialising every spec twice was half of the plan's time (minilm_l6_v2: 9 of 18 ms per plan).
    ``dumps``: id -> (spec, its JSON) of specs serialised already, kept by the caller while the specs live (a
    plan's units share their specs: ppocrv4_rec serialised 2 specs for each of 293 tensors a plan, 12 distinct)."""
    mine = None
    for _, other, _ in reqs:
        if other is spec:
            continue
        mine = mine if mine is not None else _dump(spec, dumps)
        if _dump(other, dumps) != mine:
            return True
    return False


def _dump(spec: QuantSpec, dumps: dict | None) -> str:
    """``spec.model_dump_json()``, kept in ``dumps`` (a frozen record's JSON does not change)."""
    if dumps is None:
        return spec.model_dump_json()
    kept = dumps.get(id(spec))
    if kept is None or kept[0] is not spec:
        kept = dumps[id(spec)] = (spec, spec.model_dump_json())
    return kept[1]


def _exclude_example(nodes: list[tuple[str, str]]) -> str:
    """An exclude pattern matching some of the model's nodes, for the warning on one that matches none: the folder
    of its first node named with one ("/f/f.0/*" for digits_cnn's "/f/f.0/Conv"), else its first node's name."""
    named = [n for n, _ in nodes if n]
    folder = next((n.rsplit("/", 1)[0] for n in named if n.rfind("/") > 0), None)
    return f"{folder}/*" if folder else named[0] if named else "*"


def _check_op_types_select(proto: onnx.ModelProto, recipe: Recipe) -> None:
    """For a plan with no unit: RecipeError when the recipe's ``op_types`` is not empty and names no op type of
    ``proto`` (subgraphs included), naming the entries and the model's op types (a typo or another model's
    list wrote a model with "0 of 0 node units quantized" and a warning). ``"op_types": []`` asks for nothing
    to be quantized and is not refused; nor are plans that quantize nothing for other reasons (exclusions,
    guards, the latency check: their notes say why)."""
    ops = {n.op_type for g in iter_graphs(proto.graph) for n in g.node}
    if not recipe.op_types or ops & set(recipe.op_types):
        return
    quantizable = [o for o in recipe.preset_obj().op_types if o in ops]
    suggest = (f'set "op_types" to op types it has that preset {recipe.preset} quantizes (e.g. {json.dumps(quantizable)}) '
               'or remove it' if quantizable else 'remove "op_types"')
    raise RecipeError(f"recipe op_types {json.dumps(list(recipe.op_types))} selects no node of the model, so nothing "
                      f"would be quantized: the model has none of them; its op types are {', '.join(sorted(ops))}.",
                      hint=f'{suggest[0].upper()}{suggest[1:]}; write "op_types": [] to write the model unquantized.',
                      field="op_types")


def _moves_data_only(op_type: str) -> bool:
    """Whether nodes of ``op_type`` never form a unit of their own in the main graph: data-movement ops (Flatten,
    Reshape, MaxPool, Resize ...: their tensors take the grid of the units around them), unless they read a
    weight (Gather of an embedding table)."""
    return op_type in U.PASS_THROUGH_OPS and op_type not in U.WEIGHT_OPS


def _check_op_types_form_units(facts: GraphFacts, recipe: Recipe, mode: PlanMode) -> None:
    """For a plan with no unit: RecipeError when the recipe's ``op_types`` entries the model has (main graph) are
    all data-movement ops (:func:`_moves_data_only`), so they select nodes but no unit: ``["Flatten"]`` on
    digits_cnn wrote a model with "0 of 0 node units quantized". The message names the entries, what they are,
    the entries the model lacks, and the op types of the units the recipe without ``op_types`` plans (its
    preset's op types found in the model); the hint what to write. Plans with no unit for other reasons (a
    guard's note, subgraph nodes) are left to their notes.

    Raises
    ------
    RecipeError
        As above (the CLI prints it as one line and exits 2; nothing is written).
    """
    ops = {n.op_type for n in facts.proto.graph.node}
    present = [o for o in recipe.op_types or () if o in ops]
    if not present or not all(_moves_data_only(o) for o in present):
        return
    default = _Builder(facts, recipe.model_copy(update={"op_types": None}), mode)
    default.run()
    unit_ops = sorted({u.op_type for u in default.units.values() if not u.graph})
    missing = [o for o in recipe.op_types if o not in ops]
    lacks = f"; the model has no {', '.join(missing)}" if missing else ""
    theirs = (f"the model's unit op types (preset {recipe.preset}) are {', '.join(unit_ops)}" if unit_ops else
              f"preset {recipe.preset} plans no unit in this model either")
    suggest = (f'Set "op_types" to some of them (e.g. {json.dumps(unit_ops)}) or remove it' if unit_ops else
               'Remove "op_types" or choose another preset')
    moved = ", ".join(present)
    raise RecipeError(f"recipe op_types {json.dumps(list(recipe.op_types))} selects no quantizable unit of the model, "
                      f"so nothing would be quantized: {moved} only {'moves' if len(present) == 1 else 'move'} data "
                      f"(never a unit of {'its' if len(present) == 1 else 'their'} own: the tensors take the grid of "
                      f"the units around them){lacks}; {theirs}.",
                      hint=f'{suggest}; write "op_types": [] to write the model unquantized.')


def unmatched_entries(proto: onnx.ModelProto, recipe: Recipe) -> list[PlanIssue]:
    """A warning for every rule, override and ``op_types`` entry of ``recipe`` that matches no node of
    ``proto`` (subgraphs included): a typo such as ``op_type: "Cnv"`` otherwise changes nothing, silently."""
    nodes = [(n.name, n.op_type) for g in iter_graphs(proto.graph) for n in g.node]
    names, ops = {n for n, _ in nodes}, {o for _, o in nodes}
    out = []
    for k, rule in enumerate(recipe.rules):
        if not any(rule.matches(n, o) for n, o in nodes):
            out.append(PlanIssue("", "warning", f"recipe rules[{k}] ({rule.label}) matches no node of the model; "
                                 "check its spelling (op types and names are case-sensitive)",
                                 code=IssueCode.UNMATCHED_RECIPE_ENTRY, recipe_field="rules", recipe_entry=rule.label))
    for name in recipe.overrides:
        if name not in names:
            out.append(PlanIssue("", "warning", f"recipe override {name!r} names no node of the model; "
                                 "use a name shown by `workbench-cli inspect`", code=IssueCode.UNMATCHED_RECIPE_ENTRY,
                                 recipe_field="overrides", recipe_entry=name))
    for pattern in recipe.exclude:
        if not any(fnmatch.fnmatchcase(n, pattern) for n in names):
            out.append(PlanIssue("", "warning", f"exclude {pattern!r} matches no node name of the model, so it keeps "
                                 "nothing float; use a name shown by `workbench-cli inspect` (case-sensitive; * "
                                 f"matches any run of characters, e.g. {_exclude_example(nodes)!r})",
                                 code=IssueCode.UNMATCHED_RECIPE_ENTRY, recipe_field="exclude", recipe_entry=pattern))
    for op in recipe.op_types or ():
        if op not in ops:
            out.append(PlanIssue("", "warning", f"recipe op_types entry {op!r} is not an op type of the model",
                                 code=IssueCode.UNMATCHED_RECIPE_ENTRY, recipe_field="op_types", recipe_entry=op))
    return out


def _report_qonnx_only(builder: _Builder, recipe: Recipe) -> None:
    """One issue per unit using a QONNX-only dtype (error unless the recipe targets QONNX)."""
    for unit in builder.units.values():
        for role in ("weight", "activation"):
            spec = getattr(unit.config, role)
            if unit.excluded or spec is None or not spec.qtype.qonnx_only:
                continue
            qonnx = recipe.target == "qonnx"
            builder.issues.append(PlanIssue(unit.node, "info" if qonnx else "error", (
                f"{role} dtype {spec.dtype} exists only in QONNX; the QDQ model holds constants in 8-bit "
                "storage (exact) but cannot clamp activations to it: "
                + ("export with format qonnx." if qonnx else "set the recipe target to qonnx.")), code=IssueCode.QONNX_ONLY_DTYPE))


def _check_ambiguous(model, recipe: Recipe) -> None:
    ambiguous: dict[str, list[str]] = model.ambiguous_names
    named = ([("exclude", "exclude", n) for n in recipe.exclude] + [("override", "overrides", n) for n in recipe.overrides]
             + [(f"rule name={r.name}", "rules", r.name) for r in recipe.rules if r.name])
    for where, fld, name in named:  # the recipe's field named too: the line said only "name 'dup' matches ..."
        if name in ambiguous:
            nodes = ambiguous[name]
            # field: the CLI puts the --recipe file's name before the line, as for other recipe errors
            raise RecipeError(f"recipe {where}: name {name!r} matches {len(nodes)} nodes ({', '.join(nodes)}): "
                              "use the unique names.",
                              hint="The model had duplicate node names; the loader renamed them.", field=fld,
                              entry=name)


def _warn_saturation(units: dict[str, NodeUnit], issues: list[PlanIssue], mode: str) -> None:
    """One issue when full-range 8-bit weights will saturate onnxruntime's kernels on this CPU.

    Without VNNI, onnxruntime's u8 x s8 kernels use VPMADDUBSW, whose int16 pair sums saturate
    (255 * 127 * 2 > 32767); 7-bit weights (``reduce_range``) avoid it. Measured here: s8s8 on
    digits_cnn gives 38 dB fake-quantized but 6 dB fused; dynamic per-channel MatMul 47 dB in
    onnx.reference but 10 dB in onnxruntime (per-tensor dynamic weights rarely reach the limit).
    """
    if mode == "weight_only" or not hardware.cpu_needs_reduce_range():
        return

    def full_range(q) -> bool:
        s = q.spec
        # int8 weights only: onnxruntime runs uint8 weights (u8 x u8) with 16-bit products, which do not saturate
        return (q.role == "weight" and s.qtype.bits == 8 and s.qtype.signed and not s.qtype.is_float
                and not s.reduce_range and (mode == "static" or s.granularity == "per_channel"))

    def act_8bit(u) -> bool:
        return u.config.activation is not None and u.config.activation.qtype.bits == 8

    hit = [u.node for u in units.values() if not u.excluded and u.graph == "" and act_8bit(u)
           and any(full_range(q) for q in u.quant_inputs) and (u.inputs or mode == "dynamic")]
    if hit:
        issues.append(PlanIssue(hit[0], "warning", f"{count(len(hit), 'unit')} {plural(len(hit), 'uses', 'use')} full-range 8-bit weights: on this "
                                "CPU (no VNNI) onnxruntime's integer kernels saturate, so the fused model can be "
                                "far less accurate than the fake-quantized one. Set reduce_range on the weights "
                                "(as cpu-u8s8 does here) if the model will run on such CPUs.", code=IssueCode.WEIGHT_SATURATION))


def _activation_spec(spec: QuantSpec | None, node: str, issues: list[PlanIssue]) -> QuantSpec | None:
    if spec is None:
        return None
    if spec.granularity == Granularity.per_block:
        issues.append(PlanIssue(node, "warning", "per_block activations are not supported by QDQ "
                                "runtimes; activations left in float (use per_tensor).", code=IssueCode.ACTIVATION_GRANULARITY))
        return None
    if spec.granularity == Granularity.per_channel:
        issues.append(PlanIssue(node, "warning", "per_channel activations do not fuse into integer "
                                "kernels; using per_tensor.", code=IssueCode.ACTIVATION_GRANULARITY))
        return spec.model_copy(update={"granularity": Granularity.per_tensor, "axis": None})
    return spec


def _axis_hint(source: str, node: str) -> str:
    """What to do about a weight axis out of range, by where the recipe set it (``source``: the
    resolved node's ``sources["weight"]``: "override", "rule op_type=Conv", "preset ...")."""
    if source == "override":
        return (f"Fix the axis in the node override of {node!r} (select it; Inspector, weight axis), or set it "
                "to auto to use the op's channel axis.")
    if source.startswith("rule"):
        return f"Fix the axis in the {source} (Recipe panel), or leave it out to use the op's channel axis."
    return "Fix the axis where the recipe sets it, or leave it out to use the op's channel axis."


def _weight_spec(spec: QuantSpec, op: str, rank: int, attrs: dict, where: str = "weight", *, node: str = "",
                 source: str = "") -> QuantSpec:
    """The weight spec with its axis resolved. Raises RecipeError (naming ``node``) for an axis out of
    range; the hint says where to fix it by ``source`` (see :func:`_axis_hint`)."""
    if spec.granularity != Granularity.per_tensor and spec.axis is not None and not -max(rank, 1) <= spec.axis < max(rank, 1):
        raise RecipeError(f"{where}: {spec.granularity.value} axis {spec.axis} is out of range for a {rank}-D weight "
                          f"(valid: {-max(rank, 1)} to {max(rank, 1) - 1}).",
                          hint=_axis_hint(source, node), node=node)
    if spec.granularity == Granularity.per_channel:
        axis = spec.axis if spec.axis is not None else U.weight_channel_axis(op, rank, attrs)
        return spec.model_copy(update={"axis": axis % max(rank, 1)})
    if spec.granularity == Granularity.per_block:
        axis = spec.axis if spec.axis is not None else U.weight_reduction_axis(op, rank, attrs)
        return spec.model_copy(update={"axis": axis % max(rank, 1)})
    return spec.model_copy(update={"axis": None})


class _Builder:
    def __init__(self, facts: GraphFacts, recipe: Recipe, mode: str):
        self.recipe, self.mode = recipe, mode
        self.types = facts.types
        self.ix = facts.ix
        self.units: dict[str, NodeUnit] = {}
        self.issues: list[PlanIssue] = []
        self.requests: dict[str, list[tuple[str, QuantSpec, bool]]] = {}
        self.activations: dict[str, QuantSpec] = {}
        self.aliases: dict[str, str] = {}
        self.proxies: dict[str, str] = {}
        self.shared: dict[str, str] = {}
        self.writers: dict[str, str] = {}
        self._kept_float: set[str] = set()
        self.folded: set[str] = set()
        self.specs: list[QuantSpec] = []
        self.stats = facts.stats if mode == "static" else set()
        self.masks = facts.masks if mode == "static" else set()
        #: (node, op type) -> its ResolvedNode, and resolve_node's memo of configs: the pass-through and fold checks
        #: resolved nodes again (nudenet_320n: 512 calls a plan for 308 nodes, whose configs are 20 distinct ones)
        self._resolved: dict[tuple[str, str], ResolvedNode] = {}
        self._configs: dict = {}

    # -- driver -------------------------------------------------------------------------------
    def run(self) -> None:
        for node in self.ix.graph.node:
            if node.name not in self.folded:
                self._node(node)
            for sub in subgraphs(node):
                self._subgraph(node, sub, top=True)
        if self.mode == "static":
            self._keep_unread_outputs_float()
            self._follow_pass_through()
            self._share_concat_grids()
            self._resolve_requests()

    def min_opset(self) -> int:
        need = 10
        for s in self.specs:
            need = max(need, s.qtype.min_opset)
            if s.granularity == Granularity.per_channel:
                need = max(need, 13)
            if s.granularity == Granularity.per_block:
                need = max(need, 21)
        return need

    def _resolve(self, name: str, op_type: str) -> ResolvedNode:
        """:func:`~workbench.core.recipe.recipe.resolve_node` of the node on this plan's recipe, once per node."""
        rn = self._resolved.get((name, op_type))
        if rn is None:
            rn = self._resolved[(name, op_type)] = resolve_node(self.recipe, name, op_type, self._configs)
        return rn

    # -- one node -------------------------------------------------------------------------------
    def _node(self, node: onnx.NodeProto) -> None:
        op = node.op_type
        if _moves_data_only(op):
            return
        if op in U.FOLD_OPS and op not in self.recipe.quantized_op_types():
            return
        rn = self._resolve(node.name, op)
        cfg = rn.config
        if cfg.weight is None and cfg.activation is None:
            if rn.excluded and op in self.recipe.quantized_op_types():
                self.units[node.name] = NodeUnit(node.name, op, [node.name], [], [], None, None, cfg, True)
            return
        if rn.excluded:
            self.units[node.name] = NodeUnit(node.name, op, [node.name], [], [], None, None, cfg, True)
            return
        if self.mode == "static" and op not in U.WEIGHT_OPS and self._skip_statistics(node, rn):
            return
        masked = [i for i in node.input if i in self.masks] if self.mode == "static" else []
        if masked:
            self.issues.append(PlanIssue(node.name, "warning", f"input {masked[0]!r} carries a huge constant "
                                         "(an additive mask, |value| >= 1e30): per-tensor quantization will zero every other value of this unit's output. "
                                         f"Exclude {node.name!r} (its output then stays float).", code=IssueCode.MASK_INPUT))
        if self.mode == "static":
            unit = self._static_unit(node, cfg, rn.sources.get("weight", ""))
        else:
            unit = self._weight_unit(node, cfg, "", source=rn.sources.get("weight", ""))
        if unit is not None:
            self.units[node.name] = unit

    def _skip_statistics(self, node: onnx.NodeProto, rn) -> bool:
        """Keep element-wise units on reduction statistics float (see :mod:`stats_guard`)."""
        touched = [t for t in list(node.input) + list(node.output) if t in self.stats]
        if not touched:
            return False
        what = stats_guard.describe(touched[0], self.ix, self.stats)
        # the message is about this node: name the tensor as its input / output (a tensor named after
        # its producer, 'p2o.ReduceMean.3', read as if the message were about that node)
        what = f"its {'input' if touched[0] in node.input else 'output'} {touched[0]!r} is {what}"
        if stats_guard.explicit(self.recipe, rn.sources, node.op_type):
            self.issues.append(PlanIssue(node.name, "warning", f"{what}: its per-tensor range "
                                         "is set by outlier rows, so small rows round to 0 (onnxruntime #16219). "
                                         f"Consider excluding {node.name!r}.", code=IssueCode.REDUCTION_STATISTIC))
            return False
        self.issues.append(PlanIssue(node.name, "info", f"left in float: {what} whose per-tensor "
                                     "range is set by outlier rows; quantize it with an explicit rule if wanted.",
                                     code=IssueCode.REDUCTION_STATISTIC))
        return True

    def _weight_input(self, node, cfg, ix: GraphIndex, source: str = "") -> UnitInput | None:
        fam = U.WEIGHT_OPS.get(node.op_type)
        if fam is None or cfg.weight is None or len(node.input) <= fam.weight_index:
            return None
        w = node.input[fam.weight_index]
        init = ix.initializers.get(w) or self.ix.initializers.get(w)
        if init is not None and init.data_type in (onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16):
            self.issues.append(PlanIssue(node.name, "warning", f"weight {w!r} is 16-bit float; left in float "
                                         "(convert the model to fp32 first).", code=IssueCode.FLOAT16))
            return None
        if init is None or init.data_type != onnx.TensorProto.FLOAT:
            return None
        spec = _weight_spec(cfg.weight, node.op_type, len(init.dims), attrs_of(node), f"node {node.name!r}, weight {w!r}",
                            node=node.name, source=source)
        self.specs.append(spec)
        if node.op_type == "MatMul" and len(init.dims) > 2 and spec.granularity == Granularity.per_channel \
                and self.mode == "static":
            self.issues.append(PlanIssue(node.name, "info", f"{len(init.dims)}-D MatMul weight quantized per "
                                         "channel: onnxruntime fuses QLinearMatMul only for a per-tensor (or 2-D) "
                                         "weight, so this node runs as DQ + float MatMul; use per_tensor for "
                                         "an integer kernel.", code=IssueCode.MATMUL_ND_WEIGHT))
        return UnitInput(fam.weight_index, w, "weight", spec)

    def _weight_unit(self, node, cfg: NodeConfig, graph: str, ix: GraphIndex | None = None,
                     source: str = "") -> NodeUnit | None:
        """Dynamic / weight-only / subgraph unit: the weight only (``source``: where the recipe set it)."""
        wi = self._weight_input(node, cfg, ix or self.ix, source)
        if wi is None:
            if node.op_type in U.WEIGHT_OPS:
                self.issues.append(PlanIssue(node.name, "info", f"{node.op_type} has no constant float "
                                             "weight; left in float.", code=IssueCode.NO_CONSTANT_WEIGHT))
            return None
        return NodeUnit(node.name, node.op_type, [node.name], [], [], wi.tensor, None, cfg, False,
                        [wi], graph)

    def _static_unit(self, node: onnx.NodeProto, cfg: NodeConfig, source: str = "") -> NodeUnit | None:
        act = _activation_spec(cfg.activation, node.name, self.issues)
        q_inputs: list[UnitInput] = []
        wi = self._weight_input(node, cfg, self.ix, source)
        if wi is not None:
            q_inputs.append(wi)
        if act is not None:
            self.specs.append(act)
            q_inputs += self._data_inputs(node, act, wi)
        bias = self._bias_input(node, cfg, q_inputs)
        if bias is not None:
            q_inputs.append(bias)
        nodes, outputs = [node.name], []
        if act is not None:
            nodes, outputs = self._outputs(node, act)
        if not q_inputs and not outputs:
            return None
        if self._weight_left_float(node, cfg, wi, q_inputs):
            return None
        acts = [q.tensor for q in q_inputs if q.role == "activation"]
        for t in acts:
            self.requests.setdefault(t, []).append((node.name, act, False))
        for t in outputs:
            self.requests.setdefault(t, []).append((node.name, act, True))
        return NodeUnit(node.name, node.op_type, nodes, acts, outputs, wi.tensor if wi else None,
                        bias.tensor if bias else None, cfg, False, q_inputs)

    def _weight_left_float(self, node, cfg: NodeConfig, wi: UnitInput | None, q_inputs: list[UnitInput]) -> bool:
        """True (and an info issue) when the recipe asks for ``node``'s weight but nothing quantizes it: not a
        constant float32 weight, nor an activation input with its own Q/DQ (MatMul's B). Q/DQ on the data
        input alone would leave the node computing in float while the unit counted as quantized (case 17's
        weights behind Cast nodes: '2 of 2 node units quantized', inspect: 'uint8/float (run in float)')."""
        fam = U.WEIGHT_OPS.get(node.op_type)
        if fam is None or cfg.weight is None or wi is not None or len(node.input) <= fam.weight_index:
            return False
        if any(q.index == fam.weight_index for q in q_inputs):
            return False
        w = node.input[fam.weight_index]
        init, src = self.ix.initializers.get(w), self.ix.producer.get(w)
        if src is not None and src.op_type == "DequantizeLinear":
            return True  # a file quantized already: its weight is, so nothing to say
        if init is None or init.data_type not in (onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16):
            self.issues.append(PlanIssue(node.name, "info", f"{node.op_type} has no constant float weight ({w!r} is "
                                         "only known at run time); left in float.", code=IssueCode.NO_CONSTANT_WEIGHT))
        return True

    def _data_inputs(self, node, act: QuantSpec, wi: UnitInput | None) -> list[UnitInput]:
        out = []
        for i in U.data_inputs(node.op_type, len(node.input)):
            if i >= len(node.input) or not node.input[i] or (wi is not None and i == wi.index):
                continue
            t = node.input[i]
            if not self.ix.is_float(t):
                if self.types.get(t) in (onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16):
                    self.issues.append(PlanIssue(node.name, "warning", f"input {t!r} is 16-bit float; "
                                                 "left in float (convert the model to fp32 first).", code=IssueCode.FLOAT16))
                continue
            role = "const" if self.ix.is_const(t) else "activation"
            if role == "const" and node.op_type in U.WEIGHT_OPS:
                continue  # a constant weight the recipe keeps in float
            if role == "activation" and self._excluded_weight_output(t):
                continue
            out.append(UnitInput(i, t, role, act))
        return out

    def _excluded_weight_output(self, t: str) -> bool:
        """True if ``t`` comes from an excluded node that onnxruntime would re-quantize if its output
        had a Q/DQ pair (WeightBiasQuantization: Conv / ConvTranspose / Gemm between DQ and Q)."""
        prod = self.ix.producer.get(t)
        unit = self.units.get(prod.name) if prod is not None else None
        if unit is None or not unit.excluded or prod.op_type not in U.REQUANTIZED_WHEN_EXCLUDED:
            return False
        if prod.name not in self._kept_float:
            self._kept_float.add(prod.name)
            self.issues.append(PlanIssue(prod.name, "info", f"excluded: its output {t!r} stays float for its "
                                         "consumers too (with Q/DQ on both sides onnxruntime would quantize "
                                         "its weight itself and run it as an integer kernel).", code=IssueCode.OUTPUT_KEPT_FLOAT))
        return True

    def _bias_input(self, node, cfg: NodeConfig, q_inputs: list[UnitInput]) -> UnitInput | None:
        fam = U.WEIGHT_OPS.get(node.op_type)
        if fam is None or fam.bias_index is None or len(node.input) <= fam.bias_index:
            return None
        b = node.input[fam.bias_index]
        if not b or cfg.bias is None or not self.ix.is_const(b):
            return None
        if cfg.bias.dtype != "int32":
            self.issues.append(PlanIssue(node.name, "warning", f"bias dtype {cfg.bias.dtype} is not "
                                         "supported (QDQ biases are int32); bias left in float.", code=IssueCode.BIAS_FLOAT))
            return None
        has_w = any(q.role == "weight" for q in q_inputs)
        has_a = any(q.role == "activation" and q.index == 0 for q in q_inputs)
        if not (has_w and has_a):
            self.issues.append(PlanIssue(node.name, "info", "bias left in float: int32 bias needs a "
                                         "quantized input and weight.", code=IssueCode.BIAS_FLOAT))
            return None
        a = attrs_of(node)
        if node.op_type == "Gemm" and (a.get("alpha", 1.0) != 1.0 or a.get("beta", 1.0) != 1.0):
            self.issues.append(PlanIssue(node.name, "info", "Gemm alpha/beta != 1: bias left in float.", code=IssueCode.BIAS_FLOAT))
            return None
        return UnitInput(fam.bias_index, b, "bias", cfg.bias)

    def _outputs(self, node: onnx.NodeProto, act: QuantSpec) -> tuple[list[str], list[str]]:
        outs = [o for o in node.output if o and self.ix.is_float(o)]
        if len(node.output) != 1 or not outs:
            return [node.name], outs
        nxt = self._foldable(node.output[0], act)
        if nxt is None:
            return [node.name], outs
        self.folded.add(nxt.name)
        return [node.name, nxt.name], [nxt.output[0]]

    def _foldable(self, tensor: str, act: QuantSpec) -> onnx.NodeProto | None:
        cons = self.ix.consumers.get(tensor, [])
        if len(cons) != 1 or tensor in self.ix.graph_outputs or act.symmetric:
            return None
        nxt = cons[0]
        if nxt.op_type not in U.FOLD_OPS or nxt.input[0] != tensor:
            return None
        if self._resolve(nxt.name, nxt.op_type).excluded:
            return None
        return nxt

    # -- subgraphs ----------------------------------------------------------------------------
    def _subgraph(self, parent: onnx.NodeProto, graph: onnx.GraphProto, top: bool = False) -> None:
        ix = GraphIndex(graph, self.types)
        for node in graph.node:
            for sub in subgraphs(node):
                self._subgraph(node, sub)
            rn = self._resolve(node.name, node.op_type)
            if rn.excluded and node.op_type in U.WEIGHT_OPS and node.op_type in self.recipe.quantized_op_types():
                # counted as the main graph's excluded units are: '0 of 12 quantized', not '0 of 0'
                self.units[node.name] = NodeUnit(node.name, node.op_type, [node.name], [], [], None, None,
                                                 rn.config, True, graph=parent.name)
                continue
            if rn.excluded or (rn.config.weight is None and rn.config.activation is None):
                continue
            unit = (self._weight_unit(node, rn.config, parent.name, ix, rn.sources.get("weight", ""))
                    if node.op_type in U.WEIGHT_OPS else None)
            if unit is None:
                self.issues.append(PlanIssue(node.name, "warning", f"inside the subgraph of {parent.name!r}: "
                                             "left in float (subgraph tensors are not calibrated).", code=IssueCode.SUBGRAPH))
                continue
            self.units[node.name] = unit
            if top and self._branch_boundary(parent, graph, ix, node, unit, rn.config):
                self.issues.append(PlanIssue(node.name, "info", f"inside the subgraph of {parent.name!r}: input "
                                             f"calibrated in the main graph, output through {parent.name!r}'s output "
                                             f"{self.proxies[unit.outputs[0]]!r}.", code=IssueCode.SUBGRAPH))
                continue
            self.issues.append(PlanIssue(node.name, "warning", f"inside the subgraph of {parent.name!r}: "
                                         "weight quantized, activations left in float (subgraph tensors "
                                         "are not calibrated).", code=IssueCode.SUBGRAPH))

    def _branch_boundary(self, parent, graph, ix: GraphIndex, node, unit: NodeUnit, cfg: NodeConfig) -> bool:
        """Make an If-branch unit fully static when its input is a main-graph tensor and its output
        is a branch output: both are then main-graph tensors the calibrator can observe."""
        if self.mode != "static" or parent.op_type != "If" or not node.input or not node.output:
            return False
        x, y = node.input[0], node.output[0]
        outs = [o.name for o in graph.output]
        in_main = x in self.ix.producer or x in self.ix.graph_inputs
        if x in ix.producer or x in ix.initializers or not in_main or not self.ix.is_float(x) or y not in outs:
            return False
        proxy = parent.output[outs.index(y)]
        act = _activation_spec(cfg.activation, node.name, self.issues)
        if act is None or not self.ix.is_float(proxy) or len(ix.consumers.get(y, [])) > 0:
            return False
        unit.inputs, unit.outputs = [x], [y]
        unit.quant_inputs.append(UnitInput(0, x, "activation", act))
        self.specs.append(act)
        self.requests.setdefault(x, []).append((node.name, act, False))
        self.requests.setdefault(proxy, []).append((node.name, act, True))
        self.proxies[y] = proxy
        return True

    # -- static: outputs no quantized unit reads --------------------------------------------------
    def _keep_unread_outputs_float(self) -> None:
        """Move the outputs of MatMul / Gemm units that no quantized unit reads to ``float_outputs``
        (module docstring). Only units whose two data inputs (A and B) are quantized: only those fuse."""
        read = {t for t, reqs in self.requests.items() if any(not r[2] for r in reqs)}
        for unit in self.units.values():
            if unit.excluded or unit.graph or unit.op_type not in U.FLOAT_OUTPUT_OPS or not unit.outputs:
                continue
            if not self._fuses_with_float_output(unit):
                continue
            unit.writes_float = True
            unread = [t for t in unit.outputs if not self._read_quantized(t, read)]
            for t in unread:
                unit.outputs.remove(t)
                unit.float_outputs.append(t)
                self.requests[t] = [r for r in self.requests[t] if r[0] != unit.node]
                if not self.requests[t]:
                    del self.requests[t]

    def _fuses_with_float_output(self, unit: NodeUnit) -> bool:
        """True if onnxruntime fuses ``unit`` with a float output (or, for 16-bit activations, which
        have no integer kernel, runs it as DQ + float MatMul either way): A and B both quantized to 8- or
        16-bit integers, B per tensor or a 2-D weight per channel. onnxruntime also fuses an N-D weight
        quantized per channel into MatMulIntegerToFloat, whose kernel then fails at run time
        ("b zero point is not valid"), so such a unit keeps its output pair (and runs as DQ + MatMul)."""
        q = {i.index: i for i in unit.quant_inputs if i.role in (Role.ACTIVATION, Role.WEIGHT)}
        if set(q) != {0, 1} or not all(i.spec.qtype.bits in (8, 16) and not i.spec.qtype.is_float for i in q.values()):
            return False
        b = q[1]
        if b.role != Role.WEIGHT or b.spec.granularity == Granularity.per_tensor:
            return True
        init = self.ix.initializers.get(b.tensor)
        return b.spec.granularity == Granularity.per_channel and init is not None and len(init.dims) == 2

    def _read_quantized(self, t: str, read: set[str]) -> bool:
        """True if a quantized unit reads ``t``, or a tensor that a chain of pass-through ops makes of it."""
        todo, seen = [t], {t}
        while todo:
            x = todo.pop()
            if x in read:
                return True
            for c in self.ix.consumers.get(x, []):
                if c.op_type not in U.PASS_THROUGH_OPS or not c.input or c.input[0] != x:
                    continue
                if self._resolve(c.name, c.op_type).excluded:
                    continue
                fresh = [o for o in c.output if o and o not in seen]
                seen.update(fresh)
                todo += fresh
        return False

    # -- static: pass-through aliases and spec resolution ------------------------------------------
    def _follow_pass_through(self) -> None:
        for node in self.ix.graph.node:
            if node.name in self.folded or not node.input:
                continue
            t = node.input[0]
            if t not in self.requests and t not in self.aliases:
                continue
            if self._resolve(node.name, node.op_type).excluded:
                continue
            if node.op_type in U.PASS_THROUGH_OPS:
                self._alias_outputs(node, t)
            elif node.op_type in U.FOLD_OPS and node.name not in self.units:
                self._standalone_activation(node, t)

    def _root(self, t: str) -> str:
        return alias_root(self.aliases, t)

    def _alias_outputs(self, node: onnx.NodeProto, t: str) -> None:
        root = self._root(t)
        root_spec = self._chosen(root)[1]
        for o in node.output:
            if not o or not self.ix.is_float(o):
                continue
            wanted = {s.dtype for _, s, _ in self.requests.get(o, [])}
            if wanted - {root_spec.dtype}:
                self.issues.append(PlanIssue(node.name, "info", f"{o!r}: its readers ask for "
                                             f"{' and '.join(sorted(wanted))}, its input is {root_spec.dtype}: it gets "
                                             "a grid of its own instead of sharing its input's.",
                                             code=IssueCode.SPEC_CONFLICT))
                continue
            self.requests.pop(o, None)
            self.aliases[o] = root

    def _standalone_activation(self, node: onnx.NodeProto, t: str) -> None:
        spec = self._chosen(self._root(t))[1]
        o = node.output[0]
        self.requests.setdefault(o, []).insert(0, (node.name, spec, True))
        self.units[node.name] = NodeUnit(node.name, node.op_type, [node.name], [t], [o], None, None,
                                         NodeConfig(activation=spec), False,
                                         [UnitInput(0, t, "activation", spec)])

    def _share_concat_grids(self) -> None:
        """Concat inputs consumed by nothing else take the Concat output's qparams (module docstring)."""
        for unit in self.units.values():
            if unit.op_type != "Concat" or unit.excluded or unit.graph or len(unit.outputs) != 1:
                continue
            out = unit.outputs[0]
            if out not in self.requests or out in self.aliases:
                continue
            spec = self._chosen(out)[1]
            for t in unit.inputs:
                if self._shareable(t, unit, spec):
                    self.shared[t] = out
                    self.aliases[t] = out

    def _shareable(self, t: str, unit: NodeUnit, spec: QuantSpec) -> bool:
        if unit.inputs.count(t) != 1 or t in self.aliases or t not in self.requests or t in self.shared:
            return False
        if t in self.ix.graph_outputs or t not in self.ix.producer:
            return False
        readers = [c for c in self.ix.consumers.get(t, []) if c.op_type not in U.SHAPE_ONLY_OPS]
        if len(readers) != 1 or readers[0].name != unit.node or t in self.aliases.values():
            return False
        return self._chosen(t)[1] == spec

    def _chosen(self, t: str) -> tuple[str, QuantSpec, bool]:
        """The request that decides a tensor's spec: its producer's, else the first consumer's."""
        reqs = self.requests[t]
        return ([r for r in reqs if r[2]] or reqs)[0]

    def _resolve_requests(self) -> None:
        dumps: dict = {}
        for t, reqs in self.requests.items():
            if t in self.aliases and t not in self.shared:
                continue
            unit, spec, writes = self._chosen(t)
            if writes:
                self.writers[t] = unit
            if _asks_other(spec, reqs, dumps):
                asked = sorted({f"({r[1].dtype}, symmetric={r[1].symmetric})" for r in reqs}
                               - {f"({spec.dtype}, symmetric={spec.symmetric})"})
                self.issues.append(PlanIssue(unit, "info", f"tensor {t!r} uses the activation spec of {unit!r} "
                                             f"({spec.dtype}, symmetric={spec.symmetric}); another unit reading "
                                             f"it asked for {', '.join(asked) or 'other observer settings'} and "
                                             "reads it on this grid (where 16-bit units meet 8-bit ones, e.g. those "
                                             "of the recipe choice, this is expected). Give both the same activation "
                                             "settings to change it.", code=IssueCode.SPEC_SHARED))
            self.activations[t] = spec
        self.issues += nonnegative.widen(self.activations, self.ix)
