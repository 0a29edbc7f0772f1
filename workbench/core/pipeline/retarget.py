"""Re-applying a project's recipe to a new version of its model (a retrained or re-exported file).

The usual workflow is: retrain, keep the quantization recipe, quantize again. A project's recipe
names nodes (``overrides``) and name globs (``rules`` with ``name``, ``exclude``) of the model it was
made on, and its calibration cache is keyed by that model's tensor names. :func:`retarget_recipe`
carries them over to the new model:

- an override whose node exists in the new model with the same op type is kept (``name``);
- otherwise the node is looked up by structure (``structure``): its op type and the structure of
  everything upstream of it (graph input positions, weight shapes and dtypes, producer nodes and
  output positions; names and weight values left out), the k-th node of a signature matching the
  k-th, so renamed nodes are found; the override moves to the new name;
- an override found neither way no longer exists and is dropped (``missing``);
- name globs are kept as written; the table says how many nodes each matched before and now.

A cached range is kept only for a tensor whose value is provably the same function of the model
inputs: same ops, attributes, weight bytes and inputs upstream (a content hash, names left out).
Every other cached range is dropped, so the tensors of a retrained model are calibrated again from
the project's data. Without the old model (the project's file was replaced by the new one: its
sha256 changed), overrides are matched by name only and every cached range is dropped.
"""

from __future__ import annotations

import fnmatch
import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path

import onnx

from workbench.core.calibration.calibrate import CalibrationResult, unserved
from workbench.core.errors import ProjectError, WorkbenchError
from workbench.core.model.external_identity import external_identity
from workbench.core.model.load import PreparedModel, sha256_file
from workbench.core.model.load import load_model as open_model
from workbench.core.pipeline.latency_record import moved_record, replay_notes
from workbench.core.pipeline.project import (
    LatencyKept,
    Project,
    check_external_data,
    load_project,
    new_project,
)
from workbench.core.pipeline.quantize import QuantizeResult, plan, quantize
from workbench.core.progress import CancelToken, ProgressFn
from workbench.core.recipe.recipe import Recipe
from workbench.core.wording import count

log = logging.getLogger(__name__)


@dataclass
class MatchRow:
    """One line of the match table.

    Attributes
    ----------
    kind : str
        "override", "rule" (a name-glob rule) or "exclude" (an exclude glob).
    old : str
        The node name (override) or glob of the project's recipe.
    new : str or None
        The node it now applies to (override), None when it no longer exists; for globs the glob.
    how : str
        "name", "structure" or "missing" (overrides); "glob" (globs).
    detail : str
        Op type (overrides) or "N nodes (was M)" (globs).
    """

    kind: str
    old: str
    new: str | None
    how: str
    detail: str = ""


@dataclass
class Retarget:
    """Outcome of :func:`retarget_recipe`.

    Attributes
    ----------
    recipe : Recipe
        The recipe for the new model (overrides renamed, missing ones dropped).
    calibration : CalibrationResult or None
        The cached observers still valid, under the new model's tensor names.
    rows : list of MatchRow
        The match table.
    kept_ranges, dropped_ranges : list of str
        Cached tensors kept (new names) and dropped (old names: changed or gone).
    structure : bool
        Whether the old model was available for structural matching and range checks.
    respecced : list of str
        Kept tensors whose statistics no longer serve the retargeted recipe's settings (a rule that no
        longer matches changed their observer): calibrated again (:func:`retarget_project` fills it).
    latency_kept : list of LatencyKept
        The project's ``latency_kept`` under the new node names, moved with their overrides (an override
        that matches no node any more drops its entry; :func:`retarget_to_model` fills it).
    """

    recipe: Recipe
    calibration: CalibrationResult | None
    rows: list[MatchRow] = field(default_factory=list)
    kept_ranges: list[str] = field(default_factory=list)
    dropped_ranges: list[str] = field(default_factory=list)
    structure: bool = True
    respecced: list[str] = field(default_factory=list)
    latency_kept: list[LatencyKept] = field(default_factory=list)

    @property
    def moved(self) -> list[MatchRow]:
        return [r for r in self.rows if r.how == "structure"]

    @property
    def missing(self) -> list[MatchRow]:
        return [r for r in self.rows if r.how == "missing"]


# -- signatures ---------------------------------------------------------------------------------------

def _digest(parts) -> str:
    return hashlib.sha1(repr(parts).encode()).hexdigest()


def _attr_key(a: onnx.AttributeProto):
    if a.type == onnx.AttributeProto.GRAPH:
        return (a.name, hashlib.sha1(a.g.SerializeToString(deterministic=True)).hexdigest())
    if a.type == onnx.AttributeProto.GRAPHS:
        return (a.name, tuple(hashlib.sha1(g.SerializeToString(deterministic=True)).hexdigest() for g in a.graphs))
    return (a.name, a.SerializeToString(deterministic=True).replace(a.name.encode(), b""))


def signatures(proto: onnx.ModelProto, *, content: bool) -> tuple[dict[str, str], dict[str, str]]:
    """(node name -> signature, tensor name -> signature) of the main graph, names left out.

    ``content=False`` (structure): op type, domain and the signatures of the inputs, where a graph
    input is its position and a weight its dtype and shape. ``content=True`` also hashes attributes
    and weight bytes, so two tensors with one content signature hold the same values for the same
    inputs. The nodes must be in topological order (prepared models are).
    """
    g = proto.graph
    tensors: dict[str, str] = {}
    inits = {i.name: i for i in g.initializer}
    for i, vi in enumerate(x for x in g.input if x.name not in inits):
        tensors[vi.name] = _digest(("input", i, vi.type.SerializeToString(deterministic=True) if content else b""))
    for t in inits.values():
        body = hashlib.sha1(onnx.numpy_helper.to_array(t).tobytes()).hexdigest() if content else ""
        tensors[t.name] = _digest(("weight", t.data_type, tuple(t.dims), body))
    nodes: dict[str, str] = {}
    for n in g.node:
        ins = tuple(tensors.get(i, "?") if i else "" for i in n.input)
        attrs = tuple(sorted(_attr_key(a) for a in n.attribute)) if content else ()
        sig = _digest((n.op_type, n.domain, ins, attrs))
        nodes[n.name] = sig
        for k, o in enumerate(n.output):
            if o:
                tensors[o] = _digest((sig, k))
    return nodes, tensors


def _ranked(proto: onnx.ModelProto, sigs: dict[str, str]) -> dict[str, tuple[str, int]]:
    """node -> (signature, k): the k-th node of the graph with that signature."""
    seen: dict[str, int] = {}
    out = {}
    for n in proto.graph.node:
        s = sigs[n.name]
        out[n.name] = (s, seen.get(s, 0))
        seen[s] = seen.get(s, 0) + 1
    return out


# -- recipe and cache -----------------------------------------------------------------------------------

def retarget_recipe(old: PreparedModel | None, new: PreparedModel, recipe: Recipe,
                    calibration: CalibrationResult | None = None) -> Retarget:
    """Carry ``recipe`` (and the calibration cache) made on ``old`` over to ``new`` (module docstring).

    Parameters
    ----------
    old : PreparedModel or None
        The model the recipe was made on; None matches overrides by name only and drops the cache.
    new : PreparedModel
        The new version of the model.
    recipe : Recipe
        The project's recipe (not modified).
    calibration : CalibrationResult, optional
        The project's calibration cache (keyed by ``old``'s tensor names).
    """
    new_ops = {n.name: n.op_type for _, n in new.iter_nodes()}
    old_ops = {n.name: n.op_type for _, n in old.iter_nodes()} if old is not None else {}
    by_rank: dict[tuple[str, int], str] = {}
    old_rank: dict[str, tuple[str, int]] = {}
    if old is not None:
        new_rank = _ranked(new.proto, signatures(new.proto, content=False)[0])
        by_rank = {v: k for k, v in new_rank.items()}
        old_rank = _ranked(old.proto, signatures(old.proto, content=False)[0])
    rows: list[MatchRow] = []
    overrides = {}
    for name, settings in recipe.overrides.items():
        op = old_ops.get(name) or new_ops.get(name, "?")
        if name in new_ops and (old is None or name not in old_ops or new_ops[name] == old_ops[name]):
            overrides[name] = settings
            rows.append(MatchRow("override", name, name, "name", new_ops[name]))
            continue
        target = by_rank.get(old_rank[name]) if name in old_rank else None
        if target is not None and new_ops[target] == op and target not in recipe.overrides:
            overrides[target] = settings
            rows.append(MatchRow("override", name, target, "structure", op))
        else:
            rows.append(MatchRow("override", name, None, "missing", op))
    for kind, globs in (("rule", [r.name for r in recipe.rules if r.name]), ("exclude", list(recipe.exclude))):
        for pattern in globs:
            now = sum(fnmatch.fnmatchcase(n, pattern) for n in new_ops)
            was = sum(fnmatch.fnmatchcase(n, pattern) for n in old_ops) if old is not None else None
            detail = f"{now} nodes" + (f" (was {was})" if was is not None else "")
            rows.append(MatchRow(kind, pattern, pattern if now else None, "glob" if now or not was else "missing",
                                 detail))
    new_recipe = recipe.with_override_map(overrides)
    calib, kept, dropped = _retarget_cache(old, new, calibration)
    return Retarget(new_recipe, calib, rows, kept, dropped, old is not None)


def _retarget_cache(old, new, calibration):
    if calibration is None:
        return None, [], []
    if old is None:
        return None, [], sorted(calibration.observers)
    old_t = signatures(old.proto, content=True)[1]
    new_by_sig: dict[str, str] = {}
    for t, s in signatures(new.proto, content=True)[1].items():
        new_by_sig.setdefault(s, t)
    observers, kept, dropped = {}, [], []
    for t, obs in calibration.observers.items():
        target = new_by_sig.get(old_t.get(t, ""))
        if target is None:
            dropped.append(t)
        else:
            observers[target] = obs
            kept.append(target)
    renamed = {t: new_by_sig.get(old_t.get(t, "")) for t in calibration.observers}
    calib = CalibrationResult(observers, calibration.samples_seen, calibration.seconds,
                              [(renamed[t], s, c) for t, s, c in calibration.nonfinite if renamed.get(t)],
                              [renamed[t] for t in calibration.empty if renamed.get(t)])
    return calib, kept, dropped


def format_match_table(rt: Retarget) -> str:
    """The match table as text: one line per override and glob, then the calibration cache."""
    if rt.rows:
        lines = [f"{'recipe entry':10s} {'in the project':40s} {'in the new model':40s} {'matched by':10s} detail"]
    else:  # a bare preset: nothing names a node
        lines = ["recipe: no overrides or name rules to match (it applies to any model as it is)"]
    for r in rt.rows:
        how = {"structure": "structure", "name": "name", "missing": "-", "glob": "glob"}[r.how]
        new = r.new if r.new is not None else "(no longer exists)"
        lines.append(f"{r.kind:10s} {r.old[:40]:40s} {new[:40]:40s} {how:10s} {r.detail}")
    overrides = [r for r in rt.rows if r.kind == "override"]
    gone = [r for r in overrides if r.how == "missing"]
    moved = [r for r in overrides if r.how == "structure"]
    lines.append(f"overrides: {len(overrides) - len(gone)}/{len(overrides)} applied ({len(moved)} moved to a new "
                 f"name, {len(gone)} no longer exist)")
    if overrides and len(gone) == len(overrides):
        lines.append("warning: none of the project's overrides matches this model; check that it is a version of "
                     "the project's model")
    lines.append(f"calibration cache: {len(rt.kept_ranges)} ranges kept (same tensor), "
                 f"{len(rt.dropped_ranges)} dropped (changed or gone; recalibrated)"
                 + (f", {len(rt.respecced)} of the kept recalibrated (their settings changed: "
                    f"{', '.join(rt.respecced[:3])}{' ...' if len(rt.respecced) > 3 else ''})" if rt.respecced else ""))
    if not rt.structure:
        lines.append("note: the project's model file (or its external data) changed or is missing, so overrides "
                     "were matched by name only and every cached range was dropped")
    return "\n".join(lines)


# -- projects --------------------------------------------------------------------------------------------

def _old_model(project: Project, project_path: Path, new: PreparedModel,
               new_identity: list[list[str]] | None) -> PreparedModel | None:
    """The project's own model as it was saved, or None when its file is missing or changed, or when the
    external data files its weights sit in are not the ones the project recorded (changed in place, or not
    recorded at all: :func:`check_external_data`): its cached ranges then prove nothing about the tensors of any
    model. ``new_identity``: :func:`external_identity` of ``new``, reused when ``new`` is the project's own file
    (its .data files are hashed once)."""
    path = project.model_path(project_path)
    if not path.is_file() or sha256_file(path) != project.model.sha256:
        log.info("retarget: the project's model %s is missing or changed; matching by name only", path)
        return None
    old = open_model(path)
    same = (new_identity is not None and new.path is not None and Path(new.path).resolve() == path.resolve()
            and new.external_data_files == old.external_data_files)
    try:
        check_external_data(project, project_path, path, new_identity if same else external_identity(old))
    except ProjectError as exc:
        log.info("retarget: matching by name only: %s", exc)
        return None
    return old


def retarget_to_model(project_path: str | Path, new: PreparedModel, *,
                      identity: list[list[str]] | None = None) -> tuple[Retarget, Project]:
    """The match table of the project at ``project_path`` against the open model ``new``, nothing quantized.

    ``identity``: :func:`external_identity` of ``new`` when the caller has it (not hashed again when ``new`` is
    the project's own model file).

    Returns
    -------
    (Retarget, Project)
        The retargeted recipe, cache and match table (:func:`retarget_recipe`; structural matching
        when the project's own model file is still there unchanged) with the project's ``latency_kept`` moved
        to the new names, and the project as read.

    Raises
    ------
    ProjectError
        The project is unreadable.
    """
    project_path = Path(project_path)
    project = load_project(project_path, check_model=False)
    old = _old_model(project, project_path, new, identity)
    cache = CalibrationResult.from_json(project.calibration) if project.calibration else None
    rt = retarget_recipe(old, new, project.recipe, cache)
    # the units the latency check kept float stay its, under their new names (their overrides moved with them)
    rt.latency_kept = moved_record(project.latency_kept, {r.old: r.new for r in rt.rows if r.kind == "override"}) or []
    return rt, project


def retarget_project(project_path: str | Path, model_path: str | Path, *, data=None, samples: int | None = None,
                     progress: ProgressFn | None = None, cancel: CancelToken | None = None,
                     ) -> tuple[PreparedModel, QuantizeResult, Retarget, Project]:
    """Quantize ``model_path`` (a new version of the project's model) with the project's recipe.

    Overrides are re-matched and the calibration cache filtered by :func:`retarget_recipe`; the
    tensors without a valid cached range are calibrated from ``data`` (default: the project's data).
    A recipe with SmoothQuant or bias correction reads ``data`` even when every cached range is kept,
    so the written model is the one a replay of the returned project writes (byte for byte).

    Returns
    -------
    (PreparedModel, QuantizeResult, Retarget, Project)
        The new model, the quantize result, the match table and a project for the new model
        (absolute paths; the retargeted recipe, data, samples and the new calibration; the project's
        ``latency_kept`` under the new node names, each unit still excluded reported in the result's issues as
        a replay reports it: :func:`~workbench.core.pipeline.latency_record.replay_notes`).

    Raises
    ------
    ProjectError
        The project is unreadable.
    WorkbenchError
        Ranges must be recalibrated but neither the project nor ``data`` gives calibration data.
    """
    project_path = Path(project_path)
    new = open_model(model_path)
    identity = external_identity(new)
    rt, project = retarget_to_model(project_path, new, identity=identity)
    data_spec = project.data_spec(project_path) if data is None else data
    samples = samples if samples is not None else project.samples
    the_plan, missing = None, None  # missing: the cached ranges that no longer serve (None: no cache)
    if rt.calibration is not None or data_spec is None:
        the_plan = plan(new, rt.recipe)
        missing = unserved(the_plan, rt.calibration) if rt.calibration is not None else None
    rt.respecced = [t for t in missing or [] if t in rt.calibration.observers]
    # every range still serves its spec: no need to touch the data, unless a pass reads it (SmoothQuant's
    # activation scales, bias correction's Conv input means), as a replay of the saved project does
    reads_data = rt.recipe.smoothquant is not None or rt.recipe.bias_correction
    use = None if missing == [] and not reads_data else data_spec
    if use is None and the_plan.mode == "static" and missing != []:
        raise WorkbenchError(f"{project_path}: the ranges of {count(len(missing), 'tensor') if missing else 'all tensors'} "
                             f"must be calibrated again for {model_path}, and the project has no calibration data.",
                             hint="Pass --data FILE.npz (or a folder of images).")
    result = quantize(new, rt.recipe, data=use, samples=samples, calibration=rt.calibration,
                      progress=progress, cancel=cancel)
    spec = data if isinstance(data, dict) else ({"path": str(Path(data).resolve())} if data is not None
                                                 else project.data_spec(project_path))
    out = new_project(new.path, rt.recipe, data=spec, samples=samples,
                      external_data=identity)
    out.allow_code = project.allow_code
    if result.calibration is not None:
        out.calibration = result.calibration.to_json()
    out.latency_kept = rt.latency_kept or None
    result.issues += replay_notes(out.latency_kept or [], [u.node for u in result.plan.units.values() if u.excluded],
                                  project_path)
    return new, result, rt, out
