"""Command-line front end: the same verbs as the app's menus.

    workbench-cli inspect MODEL
    workbench-cli quantize MODEL --preset cpu-u8s8 --data calib.npz -o model.int8.onnx
    workbench-cli quantize PROJECT.wbproj -o model.int8.onnx
    workbench-cli evaluate MODEL QUANTIZED --data eval.npz
    workbench-cli compare MODEL QUANTIZED --data calib.npz --json diff.json
    workbench-cli analyze MODEL --data calib.npz --eval eval.npz --json errors.json
    workbench-cli convert MODEL.qdq.onnx MODEL.qonnx.onnx --to qonnx
    workbench-cli cost MODEL --preset cpu-u8s8
    workbench-cli report MODEL --data calib.npz --eval eval.npz -o report.html
    workbench-cli render MODEL -o graph.png [--colour op|dtype|sqnr] [--data calib.npz] [--expand DEPTH]

Errors print one line naming the file, node or tensor and what to do, and exit with status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from workbench import __version__
from workbench import cli_choice_cache as choice_cache
from workbench.cli_sqnr_colours import all_grey_note, colour_db, grey_note, node_sqnr
from workbench.cli_usage import UsageParser
from workbench.core import api
from workbench.core.errors import AlreadyQuantizedError, DataError, ExportError, RecipeError, WorkbenchError
from workbench.core.issues import IssueCode
from workbench.core.wording import count, plural
from workbench.extras import INSTALL_EXTRAS, RENDER_MODULES, first_missing, not_installed

#: ``sweep --top-units`` default: units measured end to end (two suffix models each; the others keep their
#: own-error figure). ppocrv4_rec has 208 units: all of them take a minute or more, 16 about 7x one
#: calibration pass (``benchmarks/sensitivity_sweep.py`` uses this default).
SWEEP_TOP_UNITS = 16


def _phase_key(message: str) -> str:
    """The phase a progress message belongs to: its text before the first ':', without a trailing
    "(item)" ("Sweeping units (p2o.Conv.2)" and "Sweeping units (p2o.Add.9)" are one phase)."""
    head = message.split(":", 1)[0]
    return head.rsplit(" (", 1)[0] if head.endswith(")") else head


class TerminalProgress:
    """A one-line progress bar on stderr (plain lines when stderr is not a terminal)."""

    def __init__(self, stream=None, width: int = 30) -> None:
        self.stream = stream if stream is not None else sys.stderr  # the stderr of now, not of import time
        self.width = width
        self.tty = self.stream.isatty()
        self.start = time.monotonic()
        self._last = ""
        self._message: str | None = None
        self._phase = ("", 0.0)  # (:func:`_phase_key` of the message, when it began)

    def __call__(self, done: int, total: int, message: str) -> None:
        now = time.monotonic()
        elapsed = now - self.start
        phase = _phase_key(message)
        if phase != self._phase[0]:
            self._phase = (phase, now)
        if total:
            frac = min(done / total, 1.0)
            bar = "#" * int(frac * self.width)
            # no estimate before the first step is done (it read "ETA 0s" at 0/N); the estimate is the phase's
            # own pace (from the job's start it had charged the earlier phases to this one)
            in_phase = now - self._phase[1]
            eta = f"ETA {in_phase / frac - in_phase:.0f}s" if 0 < frac < 1 else f"{elapsed:.0f}s"
            line = f"[{bar:<{self.width}}] {done}/{total} {message} ({eta})"
        else:  # no total: a step index would only confuse ("1 1 units promoted")
            line = f"{message} ({elapsed:.0f}s)"
        if self.tty:
            self.stream.write("\r" + line.ljust(len(self._last)))
            self.stream.flush()
        elif message != self._message or (total and done == total):
            self.stream.write(line + "\n")
        self._last, self._message = line, message

    def close(self) -> None:
        if self.tty and self._last:
            self.stream.write("\n")
            self.stream.flush()


def _recipe_from_args(args):
    if getattr(args, "recipe", None):
        recipe = api.load_recipe(args.recipe)
    else:
        recipe = api.make_recipe("cpu-u8s8" if args.preset is None else args.preset)  # "" (an unset variable): refused
    if getattr(args, "exclude", None):
        recipe = recipe.model_copy(update={"exclude": list(recipe.exclude) + list(args.exclude)})
    return recipe


#: how the recipe choice's line says it was reused (the CLI then names the cache file, a shared report does not)
_REUSED = " [reused from an earlier run on the same model, data, samples and recipe"


def _shareable(chose: str) -> str:
    """The recipe choice's line without the cache file a reused choice names (a path in the user's home folder,
    which an HTML report sent to others should not hold)."""
    return chose.split(_REUSED)[0] + _REUSED + "]" if _REUSED in chose else chose


def _auto_recipe(args, model, recipe, progress, digest: str | None = None):
    """``--auto`` (quantize, analyze, report): the recipe choice among the preset, MSE ranges and
    compute-only quantization, with the few units that hold most of the output noise kept float
    (cpu-u8s8) or given 16-bit activations (:func:`workbench.core.api.choose_recipe`). Returns the recipe to
    quantize (unchanged without ``--auto``, data or a bare preset), its calibration over every row
    (None without a choice), the line to print on stderr once the command succeeded ("" when
    there was no choice) and the chosen variant's label (its name, and its promoted unit count when it
    has any; "" when there was no choice). ``digest``: the data file's sha256 when the job hashed it already
    (:func:`workbench.cli_choice_cache.data_digest`). A ``--recipe`` file is used as written, even a bare preset,
    unless it holds a preset and node overrides only: the choice then runs around the overrides, which it
    keeps (a note on stderr says so)."""
    from_file = bool(getattr(args, "recipe", None))
    auto = getattr(args, "auto", None)  # None: not given (on by default); True: --auto typed
    if auto is False:  # before why_not_choose: --no-auto never loads the recipe choice
        return recipe, None, "", ""
    why = ("no --data" if not args.data else "a --recipe file is used as written" if from_file and not recipe.overrides
           else api.why_not_choose(recipe))
    if why is not None:
        if auto is True:
            print(f"note: --auto chooses among variants of a static preset (node overrides kept); {why}, "
                  "so there is no choice.", file=sys.stderr)
        return recipe, None, "", ""
    if from_file:
        print(f"note: the --recipe file holds a preset and {count(len(recipe.overrides), 'node override')} only, "
              "so the recipe choice runs and keeps the overrides as written (--no-auto uses the file as it is).",
              file=sys.stderr)
    entry = choice_cache.entry_path(model, recipe, args.data, args.samples, digest)
    cached = choice_cache.load(entry) if args.command != "quantize" else None  # quantize chooses afresh, and keeps it
    if cached is not None:
        line, when = choice_cache.earlier_run(cached)  # its time is the earlier run's, labelled so
        return (cached.recipe, cached.calibration, f"{line}{_REUSED}{', ' + when if when else ''}: {cached.path}; "
                "delete it to choose again]", cached.label)
    choice = api.choose_recipe(model, recipe, _data_arg(args, args.data), samples=args.samples, progress=progress)
    choice_cache.store(entry, choice)
    return choice.recipe, choice.calibration, choice.summary(), "" if choice.skipped else choice.label


def _with_data_beside(exc: WorkbenchError, args) -> WorkbenchError:
    """``exc`` itself, or, when it asks for calibration data, no ``--data`` was given and a calibration
    file sits beside the model (:func:`workbench.core.api.data_beside`, the file the app opens), the
    same error naming that file: the CLI stays explicit and says what to add."""
    found = api.data_beside(args.model) if not args.data and "--data" in (exc.hint or "") else None
    if found is None:
        return exc
    return WorkbenchError(exc.message, hint=f"No --data given; {found} is beside the model: add --data {found}.")


def _note_renames(model) -> None:
    """Names preparation changed (unnamed or shared node names, tensors defined twice): the written model
    and every table use the new names, so say so once on stderr (``inspect`` lists each rename)."""
    for note in api.rename_notes(model.renames, model.ambiguous_names):
        print(f"note: {model.name}: {note} The output uses the new names (inspect lists them).", file=sys.stderr)


def _refuse_project(args) -> None:
    """``inspect`` reads a model: a project given instead is refused, naming the model it records.

    Raises
    ------
    WorkbenchError
        ``args.model`` is a ``.wbproj`` file.
    """
    if not str(args.model).endswith(".wbproj"):
        return
    try:
        model = str(api.load_project(args.model, check_model=False).model_path(args.model))
    except WorkbenchError:
        model = "MODEL.onnx"
    raise WorkbenchError(f"{args.model} is a project, not a model; {args.command} reads a model.",
                         hint=f"Run workbench-cli {args.command} {model} (the model the project records).")


def cmd_inspect(args) -> int:
    _refuse_project(args)
    # a model preparation would not change is described straight from the file (no onnx import)
    report = None if args.units else api.quick_report(args.model)
    if report is None:
        report = api.inspect_model(api.open_model(args.model), units=args.units)
    if args.json:
        print(api.dumps_strict(report, indent=2, default=str))  # strict JSON: a NaN / inf scale as "nan" / "inf"
    else:
        print(api.format_report(report, params=args.params))
    if args.units and report.get("units") is None:  # planned_units has nothing to plan in a quantized file
        print(f"note: --units lists the node units a preset would quantize in a float model; {args.model} is already "
              "quantized, so there are none (its quantized nodes are listed above); inspect the float model it "
              "was made from for its units", file=sys.stderr)
    return 0


def _data_arg(args, value):
    """``--data`` as given, or a Python reader spec when it names a .py file and ``--allow-code``
    was passed (without it the loader refuses the file and says how to allow it)."""
    if isinstance(value, str) and value.lower().endswith(".py") and getattr(args, "allow_code", False):
        return {"kind": "python", "path": value, "allow_code": True}
    return value


def _note_short_data(args, model) -> None:
    """A note when ``--samples`` asks for more samples than the ``--data`` file holds (the job then
    uses them all), one per array of the file that is not a model input (ignored), and one naming the
    files of a folder when it holds several. Never fails the command: data the job cannot read is reported by the job, if it
    reads it at all (dynamic and weight-only presets do not). Python readers are not opened here:
    that would run the user's code twice."""
    asked, data = getattr(args, "samples", None), getattr(args, "data", None)
    if not (isinstance(data, str) and not data.lower().endswith(".py")):
        return
    try:
        source = api.open_data_source(data, model)
        held = source.num_samples()
    except WorkbenchError:
        return
    for note in source.notes:
        # a misspelt input name, or a folder whose eval split would be read too, would otherwise go unseen
        if "is not a model input" in note or "files in name order" in note:
            print(f"note: {note}", file=sys.stderr)
    if asked and held is not None and held < asked:
        print(f"note: --samples {asked} asks for more samples than {data} holds ({held}); using all {held}",
              file=sys.stderr)


def _recheck_outputs(args) -> None:
    """After a model is opened (its external data files are now known inputs), refuse again any
    output onto one of them, before the long work starts."""
    for name in _OUTPUT_ARGS:
        value = getattr(args, name, None)
        if isinstance(value, str) and value:
            api.check_not_input(value)


def _export_settings(args) -> None:
    """``--format`` / ``--input-shape`` left out of a project replay come from the project (what the
    job that saved it wrote); a plain quantize defaults to QDQ."""
    if str(args.model).endswith(".wbproj") and (args.format is None or not args.input_shape):
        saved = api.load_project(args.model, check_model=False).export or {}
        if args.format is None:
            args.format = saved.get("format", "qdq")
        if not args.input_shape and args.format == "qonnx":
            args.input_shape = [(k, list(v)) for k, v in (saved.get("input_shapes") or {}).items()] or None
    args.format = args.format or "qdq"


def _refuse_qdq_only(args, model, recipe, prefix: str = "") -> None:
    """``quantize --format qdq`` of a recipe with QONNX-only dtypes, refused before any calibration
    (only a recipe with ``target`` "qonnx" may hold them), naming the units and the recipe fields
    (``prefix`` before each: "recipe." for a project's recipe).

    Raises
    ------
    ExportError
        From :func:`workbench.core.api.refuse_qdq_only`, its hint naming the fields and what to do.
    """
    if getattr(args, "format", "qdq") != "qdq" or recipe.target != "qonnx":  # autotune writes QDQ only
        return
    plan = api.plan(model, recipe)
    fields = api.qdq_only_fields(recipe, plan)
    source = getattr(args, "recipe", None) or args.model
    where = f"{source} sets them in {api.qdq_only_fields_text(fields, prefix=prefix)}: " if fields else ""
    dtype = f"change {'that' if fields else 'the'} dtype to one QDQ holds (int8, uint8, int4, uint4, int16, uint16)"
    if args.command == "autotune":
        hint = (f"{where}autotune writes QDQ files only: {dtype}, or quantize without tuning "
                f"(workbench-cli quantize {args.model} --recipe {source} --format qonnx).")
    else:
        hint = f"{where}export with --format qonnx, or {dtype}."
    api.refuse_qdq_only(plan, hint=hint)


def _replay(args, progress, **kwargs) -> tuple:
    """:func:`workbench.core.api.replay_project` of ``args.model``. A project with neither calibration data nor a
    calibration cache (saved before data was chosen) whose recipe needs calibrating is refused naming the field
    to add: the calibration step's own error asks for ``--data``, which a replay does not take.

    Raises
    ------
    WorkbenchError
        As the replay raises them; the one above names the project and its missing ``data`` field.
    """
    try:
        replayed = api.replay_project(args.model, progress=progress, allow_code=args.allow_code, **kwargs)
        _note_project_paths(args.model, model=not kwargs.get("model_path"))
        return replayed
    except WorkbenchError as exc:
        project = api.load_project(args.model, check_model=False)
        if "needs calibration data" not in exc.message or project.data is not None or project.calibration:
            raise
    raise WorkbenchError(f"{args.model}: the project names no calibration data and holds no calibration cache, so "
                         f"its recipe (preset {project.recipe.preset}) cannot be calibrated on replay.",
                         hint='Add "data": {"path": "calib.npz"} to the project file (a path relative to it), or open '
                              "it in Workbench, pick the data in the Calibration panel and save it.")


def _note_project_paths(path, *, model: bool = True, data: bool = True) -> None:
    """One stderr note per file the project at ``path`` did not find beside itself and took from the absolute
    path saved in it (:attr:`workbench.core.pipeline.project.Project.path_notes`), for the files the command reads: its
    model (``model=False`` when ``--model`` names the file instead) and its calibration data (``data=False``
    when ``--data`` replaces it). The app's ``evaluation`` files are not read by the CLI: not noted."""
    fields = [f for f, used in (("model.path", model), ("data.path", data)) if used]
    for note in api.load_project(path, check_model=False).path_notes:
        if any(note.startswith(f"project field {f}:") for f in fields):
            print(f"note: {note}", file=sys.stderr)


def _refuse_project_qdq_only(args) -> None:
    """:func:`_refuse_qdq_only` for a replayed project (its recipe, on its model), before the replay runs."""
    if args.format != "qdq":
        return
    recipe = api.load_project(args.model, check_model=False).recipe
    if recipe.target == "qonnx":
        project = api.load_project(args.model)  # a missing or changed model: the replay's own refusal
        _refuse_qdq_only(args, api.open_model(project.model_path(args.model)), recipe, prefix="recipe.")


def _refuse_retarget_qdq_only(args) -> None:
    """:func:`_refuse_qdq_only` for a retarget (``quantize PROJECT.wbproj --model NEW.onnx``): the project's
    recipe, its overrides matched to the new model, before any calibration."""
    if args.format != "qdq" or not str(args.model).endswith(".wbproj"):
        return
    if api.load_project(args.model, check_model=False).recipe.target == "qonnx":
        new = api.open_model(args.retarget_model)
        rt, _ = api.retarget_to_model(args.model, new)
        _refuse_qdq_only(args, new, rt.recipe, prefix="recipe.")


def _export_record(args) -> dict | None:
    """The project's ``export`` entry for this job (None for the default QDQ export)."""
    if args.format == "qdq":
        return None
    return {"format": args.format, "input_shapes": {k: list(v) for k, v in (args.input_shape or [])}}


def cmd_quantize(args) -> int:
    with contextlib.ExitStack() as kept:  # a QDQ quantize of a model file: its weights read once, saved too
        return _quantize_and_export(args, kept)


def _quantize_and_export(args, kept: contextlib.ExitStack) -> int:
    _export_settings(args)
    progress = TerminalProgress()
    variant = ""  # the recipe choice's pick, named in the last line
    ran = None  # the recipe a fresh quantize ran (the latency check's exclusions are those it adds)
    try:
        if str(args.model).endswith(".wbproj"):
            _refuse_no_latency_check(args)
        if args.retarget_model and str(args.model).endswith(".wbproj"):
            _refuse_replay_options(args, with_data=False)  # the project's recipe: --recipe was ignored here
        if args.retarget_model and str(args.model).endswith(".wbproj") and args.data is None \
                and args.samples is None and api.is_project_model(args.model, args.retarget_model):
            # the same model file elsewhere: the project moved (with --data / --samples: applied by the retarget)
            model, result = _replay(args, progress, model_path=args.retarget_model)
            args.retarget_model = None
        elif args.retarget_model:
            _refuse_retarget_qdq_only(args)
            model, result = _retarget(args, progress)
        elif str(args.model).endswith(".wbproj"):
            _refuse_replay_options(args)
            _refuse_project_qdq_only(args)
            model, result = _replay(args, progress)
        else:
            if args.shards and not args.executor:
                raise ExportError(f"--shards {args.shards}: calibration shards run through an executor.",
                                  hint="Add --executor processes (or ray), or drop --shards.")
            model = api.open_model(args.model, hash_now=False)  # hashed only if read (--auto: the choice cache)
            _recheck_outputs(args)
            recipe = _recipe_from_args(args)
            _refuse_qdq_only(args, model, recipe)  # before any note, choice or calibration
            _note_renames(model)
            _note_short_data(args, model)
            _qonnx_input_shapes(args, model.proto, args.model)  # refuse a bad --input-shape before calibrating
            search = None
            recipe, calibration, chose, variant = _auto_recipe(args, model, recipe, progress)
            if args.search and args.data:  # the automatic recipe search (static presets)
                search = api.search_recipe(model, recipe, _data_arg(args, args.data), samples=args.samples,
                                           progress=progress)
                recipe = search.recipe
            if args.executor and args.data:  # calibration shards through the executor, merged
                calibration = api.calibrate_sharded(model, recipe, _data_arg(args, args.data), shards=args.shards or 4,
                                                    samples=args.samples, executor=api.make_executor(args.executor),
                                                    progress=progress)
            if args.format == "qdq":  # the written model's copies of float weights share the bytes the job read
                kept.enter_context(api.raw_bytes_kept(model.proto))  # (tensor_bytes.restore_held): saved uncopied
            # check=False: the export below runs onnx.checker on the file it writes, before it lands
            try:
                result = api.quantize(model, recipe, data=_data_arg(args, args.data), samples=args.samples,
                                      calibration=calibration, progress=progress,
                                      latency_check=not args.no_latency_check, check=False)
                ran = recipe
            except WorkbenchError as exc:
                raise _with_data_beside(exc, args) from None
            if chose:
                print(chose, file=sys.stderr)
            if search is not None:
                _print_search(search, result)
    finally:
        progress.close()
    _print_issues(result.issues, {node.name: i for i, node in enumerate(model.proto.graph.node)},
                  recipe_file=_recipe_file(args))
    staged = None
    if args.save_project:
        if args.retarget_model:
            project = args.retargeted_project
        else:
            data = {"path": str(Path(args.data).resolve())} if isinstance(args.data, str) else None
            if data is not None and data["path"].lower().endswith(".py"):
                data["kind"] = "python"  # replaying it needs --allow-code again (or "allow_code": true)
            project = api.new_project(model.path, result.recipe, data=data, samples=args.samples,
                                      external_data=api.external_identity(model))
            if result.calibration is not None:
                project.calibration = result.calibration.to_json()
            project.latency_kept = _latency_kept(args, ran, result)
        project.export = _export_record(args)
        # the project waits in a temp file until the model is in place, then lands right after it
        staged = api.stage_project(project, args.save_project)
    out = _land_together(lambda: api.export(result, args.output, format=args.format, model=model,
                                            input_shapes=_qonnx_input_shapes(args, model.proto, model.path, note=True),
                                            static_shapes=True), [staged] if staged is not None else [])
    if args.format == "qonnx" and any(i.code in (IssueCode.LATENCY, IssueCode.SLOWER_THAN_FLOAT,
                                                     IssueCode.LATENCY_KEPT_FLOAT)
                                      for i in result.issues):
        print("note: the latency figures above are of the QDQ form of this model (onnxruntime cannot run "
              "QONNX's Quant nodes; a QONNX file is for checking and further tools, not for timing)",
              file=sys.stderr)
    quantized, counted = result.plan.quantized_count()  # a Relu carried by its input's units is not counted
    chosen = f", recipe choice: {variant}" if variant else ""
    if not quantized and counted:
        forced = ""
        if any(i.code == IssueCode.LATENCY_KEPT_FLOAT for i in result.issues):
            # a replay or retarget runs no latency check: its project's recipe excludes those units
            forced = ("; --no-latency-check writes the units the latency check kept float quantized" if ran is not None
                      else f"; {args.model}'s recipe excludes the units its latency check kept float (a replay measures "
                           "nothing): quantize the .onnx model itself with --no-latency-check to write them quantized")
        print(f"warning: no node unit is quantized: all {counted} were kept float "
              f"({_kept_float_why(args, result)}), so the written model computes in float like the input{forced}",
              file=sys.stderr)
        if args.format == "qonnx" and not result.plan.quantizes_any():
            _note_float_qonnx_shapes(args, model)
    elif not counted:  # "0 of 0": the recipe finds no unit at all (no Conv / MatMul / Gemm, weights behind a Cast ...)
        why = " (the reasons are above)" if any(i.node for i in result.issues) else ""
        print(f"warning: no node unit is quantized: the recipe (preset {result.recipe.preset}) quantizes no node of "
              f"{model.path}{why}, so the written model computes in float like the input; workbench-cli presets "
              "lists the other presets", file=sys.stderr)
    print(f"wrote {out} ({quantized} of {counted} node units quantized, preset "
          f"{result.recipe.preset}{chosen})")
    if args.save_project:
        print(f"wrote {args.save_project}")
    return 0


def _note_float_qonnx_shapes(args, model) -> None:
    """For a QONNX export of a result that quantizes nothing (the input file as given, as the QDQ export writes it),
    say when its input shapes were fixed (a symbolic batch set to 1, or ``--input-shape``): the one rewrite QONNX
    needs (:func:`workbench.core.qonnx.export.export_qonnx_shaped`)."""
    shapes = api.resolve_input_shapes(model.proto, _given_input_shapes(args, ExportError)).shapes
    if shapes is None:
        return
    fixed = ", ".join(f"{name} {'x'.join(map(str, dims))}" for name, dims in shapes.items())
    print(f"note: the QONNX file is the input model with its input shapes fixed ({fixed}) and its fixed-value nodes "
          "(shape arithmetic) folded, as qonnx's executor needs; --format qdq writes the input model as given",
          file=sys.stderr)


def _kept_float_why(args, result) -> str:
    """Where the warning that no unit is quantized finds the reasons: "the reasons are above" when an issue
    printed above names a unit kept float, else the recipe (or the replayed project's) excludes them: with
    ``--exclude '*'``, or a project whose recipe excludes every unit, it said "the reasons are above" over
    nothing but the latency note."""
    kept = {u.node for u in result.plan.units.values() if u.excluded}
    if any(i.node in kept for i in result.issues):
        return "the reasons are above"
    whose = f"{args.model}'s recipe" if str(args.model).endswith(".wbproj") else "the recipe (--exclude, --recipe)"
    return f"{whose} excludes them"


def _latency_kept(args, ran, result) -> list | None:
    """The saved project's ``latency_kept``: the units this quantize's latency check kept float (those the
    result's recipe excludes and ``ran``, the recipe it quantized, did not), or a replayed project's own record;
    None when there are none."""
    if ran is None:
        return api.load_project(args.model, check_model=False).latency_kept if str(args.model).endswith(".wbproj") \
            else None
    kept = [n for n, o in result.recipe.overrides.items()
            if o.exclude and not (n in ran.overrides and ran.overrides[n].exclude)]
    return api.latency_kept_record(kept, result.issues) or None


#: Issues of one kind about several nodes share lines from this many on (ppocr_mobile_v2_cls printed
#: 16 float-island notes, each naming its partner; minilm_l6_v2 12 notes on its attention MatMuls).
GROUP_ISSUES = 3


def _names(nodes: list[str]) -> str:
    return ", ".join(nodes[:8]) + (f" and {len(nodes) - 8} more" if len(nodes) > 8 else "")


def _group_key(issue) -> tuple:
    """What makes issues about several nodes one reason for :func:`_print_issues`: the same code and severity,
    and for the latency check's notes whether they are about islands (a microsecond model's islands all left
    float) or single units (the latency placement's probes)."""
    code = getattr(issue, "code", None)
    island = code == IssueCode.LATENCY_KEPT_FLOAT and getattr(issue, "island", False)  # the field, not the wording
    return code, getattr(issue, "severity", None), island


@dataclass(frozen=True)
class _RecipeFile:
    """The --recipe file as typed (``path``, "" without one) and the --exclude patterns the CLI added to its
    recipe (``cli_excludes``): a warning on an entry that matches no node names the file unless the entry came
    from --exclude."""

    path: str = ""
    cli_excludes: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.path)


def _recipe_file(args) -> _RecipeFile:
    """The --recipe file of ``args`` (:class:`_RecipeFile`; false without one)."""
    recipe = getattr(args, "recipe", None)
    return _RecipeFile(recipe if isinstance(recipe, str) else "", tuple(getattr(args, "exclude", None) or ()))


def _where(issue, recipe_file: _RecipeFile | None = None) -> str:
    """What a printed issue's line says it is about: "NODE: ", or "RECIPE.json: " for an entry of the --recipe
    file (rule, override, exclude pattern, op type) that matches no node (an exclude pattern given with --exclude
    is not the file's), else ""."""
    if getattr(issue, "node", ""):
        return f"{issue.node}: "
    if (recipe_file and getattr(issue, "code", None) == IssueCode.UNMATCHED_RECIPE_ENTRY
            and getattr(issue, "recipe_field", "")
            and not (issue.recipe_field == "exclude" and issue.recipe_entry in recipe_file.cli_excludes)):
        return f"{recipe_file.path}: "
    return ""


def _print_issues(issues, order: dict[str, int] | None = None, recipe_file: _RecipeFile | None = None) -> None:
    """The job's issues on stderr ("warning:" / "note:"), one line each, except when
    :data:`GROUP_ISSUES` or more name different nodes for one reason (the same code and severity):
    float islands then share one line, and for any other reason the first is printed in full and
    the rest on one line by name. The result keeps one issue per node (the app and JSON). ``order``: node
    name -> its index in the graph; the float islands' line lists them so (quantize found some before the
    latency placement and the rest after it, its project's replay all at once), others after them. ``recipe_file``:
    the --recipe file (:func:`_recipe_file`), named before an entry of it that matches no node."""
    groups: dict[tuple, list] = {}
    for issue in issues:
        if getattr(issue, "node", "") and getattr(issue, "code", None) is not None:
            groups.setdefault(_group_key(issue), []).append(issue)
    grouped = {key: members for key, members in groups.items() if len(members) >= GROUP_ISSUES}
    for issue in issues:
        kind = "warning" if getattr(issue, "severity", "") in ("warning", "error") else "note"
        # an issue about the whole model (no node) is never folded into a group of node issues
        members = grouped.get(_group_key(issue)) if getattr(issue, "node", "") else None
        if members is not None and issue is not members[0]:
            continue
        if members is not None and issue.code == IssueCode.FLOAT_ISLAND:
            nodes = sorted((i.node for i in members), key=lambda n: (order or {}).get(n, len(order or {})))
            print(f"note: {count(len(members), 'element-wise node')} kept in float ({_names(nodes)}): "
                  "they reach no quantized Conv/MatMul/Gemm, so onnxruntime gains no integer kernel and quantizing "
                  "them would only add rounding; name a node in an override to quantize it anyway", file=sys.stderr)
            continue
        where = _where(issue, recipe_file)
        print(f"{kind}: {where}{getattr(issue, 'message', issue)}", file=sys.stderr)
        if members is not None:
            print(f"{kind}: {count(len(members) - 1, 'more node')} likewise ({issue.code}): "
                  f"{_names([i.node for i in members[1:]])}", file=sys.stderr)


def _print_search(search, result) -> None:
    """What the recipe search chose (written into the recipe and a saved project) and what it cost."""
    if search.skipped == api.SEARCH_NOT_STATIC:
        return  # dynamic and weight-only presets have nothing to search
    print(search.summary(), file=sys.stderr)
    ranked = sorted(search.changed, key=lambda c: -c.gain_db)
    if len(ranked) > 10:
        print(f"  (the 10 largest gains of {len(ranked)}; the rest are in the recipe's overrides)", file=sys.stderr)
    for c in ranked[:10]:
        wide = f", {c.dtype}" if c.dtype else ""
        print(f"  {c.node}: activation observer {c.observer}{wide} ({c.gain_db:.1f} dB less local error than "
              f"minmax; {', '.join(c.tensors[:3])}{' ...' if len(c.tensors) > 3 else ''})", file=sys.stderr)
    cal = result.calibration.seconds if result.calibration is not None else 0.0
    if cal > 0 and not search.skipped:
        print(f"recipe search cost: {search.seconds:.1f} s = {search.seconds / cal:.1f}x the calibration pass "
              f"({cal:.1f} s); --no-search turns it off", file=sys.stderr)


def _retarget(args, progress):
    """``quantize PROJECT.wbproj --model NEW.onnx``: the project's recipe re-applied to a new version of
    its model; prints the match table (what matched, what moved, what no longer exists)."""
    if not str(args.model).endswith(".wbproj"):
        raise ExportError(f"--model {args.retarget_model}: applies to a project (quantize PROJECT.wbproj "
                          "--model NEW.onnx).", hint="Give a .wbproj file first, or drop --model.")
    model, result, rt, project = api.retarget_project(args.model, args.retarget_model, data=args.data,
                                                      samples=args.samples, progress=progress)
    _note_project_paths(args.model, model=False, data=not args.data)  # the project's data, unless --data
    print(api.format_match_table(rt))
    args.retargeted_project = project
    return model, result


def cmd_evaluate(args) -> int:
    model = api.open_model(args.model)
    quant = api.open_model(args.quantized)  # the loader's one-line refusals (a folder, a project, an empty file)
    mismatch = _evaluate_pair_warning(args, model, quant)  # said after the run: an error stays the only line
    if model.quantized and not quant.quantized:  # swapped, as the warning says: the float file is the reference
        model, quant, quantized_path = quant, model, args.model
    else:
        quantized_path = args.quantized
    metric = args.metric
    if metric is not None and metric.endswith(".py"):
        metric = api.load_metric(metric, allow_code=args.allow_code)
    chosen = metric is None and api.default_metric(model, args.data) == "top1"  # as report: gt_label -> top1
    unscored = _unscorable_labels(model, args.data, args.metric_output) if chosen else None
    chosen = chosen and unscored is None
    if args.metric_output is not None and metric is None and not chosen:
        raise DataError(f"--metric-output {args.metric_output}: no metric to read it (give --metric).",
                        hint="Add --metric top1|cosine|output_sqnr|detection_scores|FILE.py.")
    # two files, each run as it is written (the float one's prepared, folded graph differs by float rounding)
    report = api.evaluate(model, quantized_path, args.data, samples=args.samples, metric="top1" if chosen else metric,
                          metric_output=args.metric_output, float_as_given=True)
    if mismatch:
        print(f"warning: {mismatch}", file=sys.stderr)
    if chosen:  # after the run: an error stays the only line on stderr
        print(f"note: metric top1, from gt_label in {args.data} (--metric names another)", file=sys.stderr)
    if unscored is not None:
        print(f"note: no task metric: {unscored}", file=sys.stderr)
    for note in getattr(report, "notes", []):
        print(f"note: {note}", file=sys.stderr)
    text = report.format() if hasattr(report, "format") else str(report)
    print(text)
    return 0


def _evaluate_pair_warning(args, model, quant) -> str:
    """Why ``evaluate FLOAT QUANTIZED`` looks given the wrong files ("" when it does not): the same bytes twice
    (every figure is exact), the Q/DQ in the first file and not the second (swapped), Q/DQ in both (the
    reference is not the float model), or in neither (``quantize`` wrote every unit float: SQNR inf, equal
    metrics). cmd_evaluate measures swapped files in the order FLOAT QUANTIZED, as this warning says; the
    other cases as given."""
    first = "workbench-cli evaluate FLOAT.onnx QUANTIZED.onnx"
    if model.sha256 and model.sha256 == quant.sha256:
        same = "is the same file as" if os.path.realpath(args.model) == os.path.realpath(args.quantized) \
            else "has the same bytes as"
        return (f"{args.quantized} {same} {args.model}: the figures below compare a model with itself (SQNR inf); "
                f"give the float model and its quantized file ({first})")
    if model.quantized and not quant.quantized:
        return (f"{args.model} is quantized and {args.quantized} is not: they look swapped, the float model goes "
                f"first ({first}); the figures below take {args.quantized} as the reference")
    if model.quantized:
        return (f"{args.model} and {args.quantized} are both quantized: the figures below take {args.model} as the "
                f"reference, not a float model; give the float model first ({first})")
    if not quant.quantized:
        return (f"{args.quantized} holds no quantized node (no Q/DQ pair or integer kernel; `quantize` writes the "
                "float model when the latency check or the recipe keeps every unit float): the figures below "
                "compare two float models; `workbench-cli quantize --no-latency-check` writes the units the latency "
                "check kept float quantized")
    return ""


def _unscorable_labels(model, data, output: str | None = None) -> str | None:
    """Why top1 cannot score the ``gt_label`` in ``data`` (a one-hot array, fractions, ...) on the model's first
    output (``output``: that one), or None: evaluate without --metric then keeps to its per-output table
    instead of failing after both models ran."""
    try:
        api.check_metric_data("top1", model, data, output=output)
    except DataError as exc:
        return str(exc).split(";")[0]
    return None


def _compare_order(args, second: str = "quantized"):
    """The float model of ``compare`` (or ``render --compare``: ``second="compare"``) as a PreparedModel, and
    the quantized file's opened model, or None when it is opened later. The two given the other way round
    (Q/DQ in ``args.model``, none in the other file) are swapped, with a note on stderr: ``args.model`` and
    the other attribute then name the files in the order compared.

    Raises
    ------
    WorkbenchError
        ``compare`` of two quantized files: there is no float reference (render draws them as given).
    """
    model = api.open_model(args.model)
    other = getattr(args, second)
    if not model.quantized or not other:
        return model, None
    usage = "FLOAT.onnx QUANTIZED.onnx" if second == "quantized" else "FLOAT.onnx --compare QUANTIZED.onnx"
    quant = api.open_model(other)  # the loader's one-line refusals (a folder, a project, ...)
    if quant.quantized and second == "compare":  # render draws two quantized files side by side as before
        return model, None
    if quant.quantized:
        raise WorkbenchError(f"{args.model} and {other} are both quantized; {args.command} needs the float model "
                             "first and its quantized file second.",
                             hint=f"workbench-cli {args.command} {usage}")
    again = f"{other} {args.model}" if second == "quantized" else f"{other} --compare {args.model}"
    print(f"note: {args.model} is quantized and {other} is not: compared in the order FLOAT QUANTIZED, "
          f"as `workbench-cli {args.command} {again}`", file=sys.stderr)
    args.model, first = other, args.model
    setattr(args, second, first)
    return quant, model


def cmd_compare(args) -> int:
    model, quant = _compare_order(args)
    progress = TerminalProgress()
    try:
        # the opened file (the loader's one-line refusals: a folder, a project, ...) is held by compare_models alone,
        # which drops it for its prepared copy (diff.quant_proto, which the split reads): one copy of the quantized
        # weights beside the two sessions, not two
        held, quant = ([quant] if quant is not None else []), None  # popped into the call: no reference left here
        diff = api.compare_models(model, (held.pop() if held else api.open_model(args.quantized)).proto, args.data,
                                  samples=args.samples, progress=progress, quant_label=str(args.quantized))
        form = _split_form(diff.quant_proto) if args.data and args.split_samples != 0 else None
        split = api.noise_split(model, diff.quant_proto, args.data, samples=args.samples, **_split_cap(args),
                                quant_label=str(args.quantized)) if form in ("static", "weight-only") else None
    finally:
        progress.close()
    print(api.format_diff(diff, worst=args.worst))
    if form == "weight-only":  # float activations: the file as written is its weights-only variant
        split = api.NoiseSplit(split.all_db, split.all_db, math.inf, split.samples, runtime=split.runtime)
        _print_split(split, diff.samples, f"{Path(args.quantized).name} is weight-only (float activations): 100% of "
                                          f"the output noise comes from the weights (only the weights quantized "
                                          f"{split.weights_db:.2f} dB)")
    elif split is not None:
        _print_split(split, diff.samples)
        if split.unmatched:
            print(f"  ({count(len(split.unmatched), 'constant')} of the quantized file not matched to a float weight of "
                  f"{Path(args.model).name} stay quantized in the activations-only figure: {', '.join(split.unmatched[:3])}"
                  f"{' ...' if len(split.unmatched) > 3 else ''})")
        if split.corrected:
            print(f"  ({_corrected_line(split.corrected, Path(args.model).name)})")
    elif form is not None:
        print(f"weights vs activations: not measured ({form})")
    if args.json:
        doc = {**diff.to_json(), "split": split.to_json() if split is not None else None}
        api.atomic_write_bytes(Path(args.json), (api.dumps_strict(doc, indent=2) + "\n").encode())
        print(f"wrote {args.json}")
    return 0


def _corrected_line(corrected, float_name: str) -> str:
    """The parenthesis ``compare`` prints under the split for the biases matched to their float bias although
    their values moved (``NoiseSplit.corrected``: bias correction), the first three named with their change."""
    named = ", ".join(f"{b.tensor} (float {b.float_tensor}, changed by up to {b.largest:.3g}, mean {b.mean:.3g})"
                      for b in corrected[:3])
    return (f"{count(len(corrected), 'bias', 'biases')} of the quantized file matched to the float biases of {float_name} "
            f"although their values moved beyond rounding (bias correction): {named}{' ...' if len(corrected) > 3 else ''}; the "
            f"activations-only figure runs the float biases, so the change counts as weight noise")


def _split_form(proto) -> str:
    """How the weights vs activations split applies to a quantized file (main graph): "static" (activation
    Q -> DQ pairs and weights stored as integers with their DequantizeLinear: measured as written),
    "weight-only" (quantized weights, float activations: all the noise is the weights'), or why it does
    not apply, as the text of a parenthesis."""
    if api.has_qdq_pairs(proto):
        return "static"
    kinds = {q.kind for q in api.find_quantized(proto)}
    roles = {p.role for p in api.read_quant_params(proto)}
    weights = bool(roles & {"weight", "bias"})
    if kinds and kinds <= {"QDQ", "weight_only"} and weights and not roles - {"weight", "bias"}:
        kernels = set(api.summarize_quantization(proto).kernels.values())
        if "MatMulNBits" in kernels:
            return ("the quantized file's MatMulNBits run at accuracy_level 4: onnxruntime quantizes their "
                    "activations to int8 per block as they run, so there is no fixed activation quantization "
                    "to take out")
        if "QDQ -> MatMulNBits" in kernels:
            return ("onnxruntime fuses the quantized file's DequantizeLinear weights and MatMuls into MatMulNBits at "
                    "accuracy_level 4 (its default): it quantizes their activations to int8 per block as they run, "
                    "so there is no fixed activation quantization to take out")
        return "weight-only"
    if not kinds:
        return "the quantized file has no quantization nodes"
    if "dynamic" in kinds:
        return ("the quantized file is dynamic: its activation scales are computed at run time by "
                "DynamicQuantizeLinear, so there is no fixed activation quantization to take out")
    if "QOperator" in kinds:
        return ("the quantized file is QOperator: integer kernels such as QLinearConv hold both weights and "
                "activations, so neither can be taken out")
    if kinds == {"QDQ"} and weights:
        return ("the weights of the quantized file are quantized in the graph by QuantizeLinear -> "
                "DequantizeLinear pairs, as its activations are, not stored as integers with their own "
                "DequantizeLinear; the split cannot set the two apart")
    if kinds == {"QDQ"}:
        return "only the activations of the quantized file are quantized: all of its output noise comes from them"
    return f"the quantized file mixes {', '.join(sorted(kinds))} quantization"


def _split_cap(args) -> dict:
    """``noise_split`` keyword for ``--split-samples N`` (none when not given: the split's own cap)."""
    n = getattr(args, "split_samples", None)
    return {} if n is None else {"max_samples": n}


def _refuse_replay_options(args, with_data: bool = True) -> None:
    """A replayed project brings its own recipe (and, for ``quantize``, its data and sample count): one of
    those options beside it would be silently ignored, so it is refused. ``with_data=False``: ``analyze`` /
    ``report`` / ``sweep``, whose ``--data`` / ``--eval`` choose the rows measured.

    Raises
    ------
    ExportError
        Naming the first such option.
    """
    options = [("--preset", args.preset), ("--recipe", args.recipe), ("--exclude", args.exclude)]
    if with_data:
        options += [("--data", args.data), ("--samples", args.samples)]
    given = [flag for flag, value in options if value is not None]  # --preset "" too
    if given:
        brings = "recipe, data and sample count" if with_data else "recipe"
        retarget = " (--model NEW.onnx with --data applies the project's recipe to a new model)" if with_data else ""
        raise ExportError(f"{args.model}: {given[0]} does not apply to a replayed project: a project brings its own "
                          f"{brings}.",
                          hint=f"Drop it to replay the project as saved, or {args.command} the .onnx model with it"
                               f"{retarget}.")


def _refuse_no_latency_check(args) -> None:
    """``quantize PROJECT.wbproj --no-latency-check`` (a replay, or a retarget with ``--model``): the option was
    ignored without a word, as a replay runs no latency check (the units its project's latency check kept float
    stay float as its recipe says), so it is refused like the other options a project makes moot.

    Raises
    ------
    ExportError
        ``--no-latency-check`` was given.
    """
    if args.no_latency_check:
        raise ExportError(f"{args.model}: --no-latency-check does not apply to a replayed project: a replay runs no "
                          "latency check (the units it kept float when the project was saved stay float, as the "
                          "project's recipe says).",
                          hint="Drop it to replay the project as saved, or quantize the .onnx model with it to write "
                               "those units quantized.")


def _print_split(split, total: int, text: str = "") -> None:
    """The weights vs activations line of ``analyze`` and ``compare``: measured on ``split.samples`` of the
    ``total`` samples the figures above read (the split's cap, ``--split-samples``); ``text`` in place of
    ``split.describe()``."""
    if not split.samples:  # nothing to measure (integer outputs only): its describe() says why
        print(f"weights vs activations: {split.describe()}")
        return
    on = f"on {split.samples} of {total} samples, --split-samples N for more" if split.samples < total \
        else f"on {count(split.samples, 'sample')}"
    print(f"weights vs activations ({on}; output SQNR, graph as written): {text or split.describe()}")


def _job_model(args, progress, check=None) -> tuple:
    """``(model, result, eval data, recipe-choice line, job)`` of ``analyze`` / ``report`` / ``sweep``: a project
    replayed (its recipe, calibration and data; ``--eval`` / ``--data`` measure on other rows), or the model
    quantized as ``quantize`` writes it (recipe choice, and the latency check keeping float the units
    that run slower quantized). ``job``: its inputs and options (:func:`workbench.core.api.sweep_job_stamp`:
    the recipe before the latency check's timed decisions), which ``sweep --json`` records and ``report``
    matches.

    Raises
    ------
    ExportError
        A project with ``--recipe`` / ``--preset`` / ``--exclude`` (it brings its own recipe).

    ``check(model)``, when given, runs on the opened model before it is quantized (refusing bad
    inputs beside it before the long part of the job).
    """
    if str(args.model).endswith(".wbproj"):
        _refuse_replay_options(args, with_data=False)
        model, result = _replay(args, progress)
        project = api.load_project(args.model, check_model=False)
        data = project.data_spec(args.model, allow_code=args.allow_code)
        job = api.sweep_job_stamp(model, result.recipe, data, project.samples) \
            if args.command in ("sweep", "report") else None  # a replay measures no latency: its recipe as given
        return model, result, args.eval or args.data or data, "", job
    model = api.open_model(args.model)
    _refuse_quantized_job(args, model)
    if check is not None:
        check(model)
    _note_renames(model)
    _recheck_outputs(args)
    _note_short_data(args, model)
    stamped = args.command in ("sweep", "report")  # the commands that record or match a sweep
    # the data file hashed once for both the recipe choice's cache key and the sweep job stamp
    digest = choice_cache.data_digest(args.data) if stamped else None
    recipe, calibration, chose, _ = _auto_recipe(args, model, _recipe_from_args(args), progress, digest)
    result = api.quantize(model, recipe, data=_data_arg(args, args.data), samples=args.samples,
                          calibration=calibration, progress=progress,
                          latency_check=not args.no_latency_check and args.data is not None)
    job = api.sweep_job_stamp(model, recipe, args.data, args.samples, digest) if stamped else None
    return model, result, _data_arg(args, args.eval or args.data), chose, job


def _refuse_quantized_job(args, model) -> None:
    """``analyze`` / ``sweep`` / ``report`` / ``autotune`` / ``render --colour sqnr`` quantize a float model and measure
    it: on a file that is already quantized, name its format (QDQ, QOperator, ...), its quantized nodes and what it
    holds as ``quantize``'s refusal does (:func:`workbench.core.api.describe_quantized`), and point to ``compare`` (its
    error against the float model it was made from; for ``render``, its ``--compare`` panes), not to quantizing it
    again.

    Raises
    ------
    AlreadyQuantizedError
        ``model`` holds quantized operators.
    """
    if not model.quantized:
        return
    data = args.eval or args.data or "calib.npz"
    qonnx = any(q.kind == "QONNX" for q in model.quantized)  # compare, evaluate and onnxruntime refuse it as it is
    if args.command == "render" and qonnx:
        raise AlreadyQuantizedError(
            f"{args.model} is already quantized (a QONNX file, {count(len(model.quantized), 'quantized node')}); "
            "render --colour sqnr quantizes a float model and measures it, so it would quantize this file again.",
            hint=f"onnxruntime cannot run QONNX: to draw it coloured by its SQNR against its float model, convert it "
                 f"(workbench-cli convert {args.model} OUT.onnx --to qdq), then run workbench-cli render FLOAT.onnx "
                 f"--compare OUT.onnx --data {data} -o {args.output}; without --colour sqnr render draws "
                 f"{args.model} as it is (--colour dtype: the dtypes it holds).")
    what = f"{args.command} quantizes a float model and measures it, so it would quantize this file again."
    if qonnx:
        raise AlreadyQuantizedError(
            f"{args.model} is already quantized (a QONNX file, {count(len(model.quantized), 'quantized node')}); {what}",
            hint=f"onnxruntime cannot run QONNX: to measure its error against its float model, convert it "
                 f"(workbench-cli convert {args.model} OUT.onnx --to qdq), then run workbench-cli compare FLOAT.onnx "
                 f"OUT.onnx --data {data}; or {args.command} the float model.")
    # the format, the nodes and what the file holds as quantize's refusal names them (api.describe_quantized)
    described = api.describe_quantized(model)
    held = f"{args.model} is already quantized ({described.formats}): {described.nodes}"
    if args.command == "render":  # render --colour sqnr: the compare panes draw this file coloured by its SQNR
        raise AlreadyQuantizedError(
            f"{held}; render --colour sqnr quantizes a float model and measures it, so it would quantize this file "
            "again.",
            hint=f"{described.held} To draw this file coloured by its SQNR against the float model it was made from, "
                 f"run workbench-cli render FLOAT.onnx --compare {args.model} --data {data} -o {args.output}; without "
                 f"--colour sqnr render draws {args.model} as it is (--colour dtype: the dtypes it holds).")
    raise AlreadyQuantizedError(
        f"{held}; {what}",
        hint=f"{described.held} To measure this file's error against the float model it was made from, run "
             f"workbench-cli compare FLOAT.onnx {args.model} --data {data} (per-tensor SQNR; evaluate FLOAT.onnx "
             f"{args.model} --data {data} for the outputs), or {args.command} the float model.")


def _print_job_notes(chose: str, result, recipe_file: _RecipeFile | None = None) -> None:
    """What ``analyze`` / ``sweep`` / ``report`` / ``render --colour sqnr`` print once the job's progress closed:
    the recipe choice's line (``chose``, "" when none ran), the notes of calibration data cast to the
    model's input dtypes (float64 -> float32) and the warnings on recipe entries or ``--exclude`` patterns
    that match no node (``quantize`` prints them with the job's other issues)."""
    if chose:
        print(chose, file=sys.stderr)
    _print_issues([i for i in result.issues if i.code in (IssueCode.DATA_CAST, IssueCode.UNMATCHED_RECIPE_ENTRY)],
                  recipe_file=recipe_file)


def _print_unmatched(issues, recipe_file: _RecipeFile | None = None) -> None:
    """The warnings among ``issues`` (a plan's) on recipe entries or ``--exclude`` patterns matching no node:
    a typo otherwise changes nothing, silently. ``recipe_file``: as for :func:`_print_issues`."""
    _print_issues([i for i in issues if i.code == IssueCode.UNMATCHED_RECIPE_ENTRY], recipe_file=recipe_file)


def _note_latency_kept(kept: list, verb: str, args=None) -> None:
    """The stderr note of ``analyze`` / ``sweep`` / ``render --colour sqnr`` on the units the latency check keeps
    float (``kept``: its issues, one per unit probed alone or per island), counted in units: "5 units measured slower
    quantized (2 alone, 3 in 2 islands) are float here" (it read "4 units or islands", the issues counted);
    ``verb``: what ``--no-latency-check`` does instead ("measures", "sweeps"). ``args``: the verb's arguments; for
    a replayed project (``args.model`` a .wbproj) the note says its recipe keeps them, as --no-latency-check there
    changes nothing (a replay runs no latency check)."""
    # an island note's ``units`` names each of its units (its message only the first three); any other note is
    # about one unit (a latency placement probe, a replayed project's entry)
    islands = [len(i.units) for i in kept if i.island]
    alone = len(kept) - len(islands)
    units = alone + sum(islands)
    how = f" ({alone} alone, {sum(islands)} in {count(len(islands), 'island')})" if alone and islands else \
        f" (in {count(len(islands), 'island')})" if islands else ""
    project = str(getattr(args, "model", "")) if str(getattr(args, "model", "")).endswith(".wbproj") else ""
    why = (f": {project}'s recipe keeps them so, as the latency check decided when it was saved (--no-latency-check "
           f"beside the project changes nothing: `workbench-cli {args.command}` of the .onnx model with it "
           f"{verb} them quantized)") if project else \
        f", as `quantize` writes them (--no-latency-check {verb} every unit the recipe quantizes)"
    print(f"note: {count(units, 'unit')} measured slower quantized{how} {plural(units, 'is', 'are')} float here"
          f"{why}", file=sys.stderr)


def _note_unmeasured(plan, rows, kept) -> None:
    """Say why ``analyze``'s per-unit table is empty or lacks units (dynamic / weight-only recipes,
    units inside If / Loop bodies, units all float)."""
    branch = [u.node for u in plan.units.values() if u.graph and not u.excluded]
    main_units = [u for u in plan.units.values() if not u.graph]
    if not rows and plan.mode != "static":
        print(f"note: no per-unit figures: the recipe is {str(plan.mode).replace('_', '-')} (activations are not calibrated, so no "
              "unit has a quantized output to read); the end-to-end figure measures it", file=sys.stderr)
    elif not rows and main_units and all(u.excluded for u in main_units) and not kept and not branch:
        print("note: no unit to measure: every unit is float (the recipe, its exclusions or a guard keep them so)",
              file=sys.stderr)
    elif not rows and kept and not branch:
        print("note: no unit to measure: the latency check keeps every quantized unit float (next note)",
              file=sys.stderr)
    elif branch:
        print(f"note: {count(len(branch), 'unit')} inside If/Loop bodies not measured per unit ({_names(branch)}); "
              "the end-to-end figure includes them", file=sys.stderr)
    elif not rows and not kept:
        print("note: no unit of the main graph to measure (units inside If/Loop bodies are not measured; "
              "`workbench-cli inspect` shows where they are)", file=sys.stderr)


def cmd_analyze(args) -> int:
    progress = TerminalProgress()
    try:
        model, result, eval_data, chose, job = _job_model(args, progress)
        rows = api.analyze(model, result, eval_data, samples=args.eval_samples,
                           progress=progress, executor=api.make_executor(args.executor) if args.executor else None)
        e2e = api.analyze_end_to_end(model, result, eval_data, samples=args.eval_samples)
        split = api.noise_split(result.float_model or model, result.proto, eval_data, samples=args.eval_samples,
                                **_split_cap(args)) \
            if result.plan.mode == "static" and args.split_samples != 0 else None  # a StrEnum
    finally:
        progress.close()
    measured = (result.float_model or model).proto.graph
    local = {s.node: s.local_sqnr_db for s in api.local_sensitivity(result.plan, rows, graph=measured)}
    weights = {e.node: e for e in api.weight_errors(result.plan, (result.float_model or model).proto, result.proto)}
    doc = [{**r.to_json(), "local_sqnr_db": local.get(r.node, math.nan),
            **({"weight": weights[r.node].to_json()} if r.node in weights else {})} for r in rows]
    written = []  # said last, after the results (the files are written first: a failed write stops here)
    if args.json:
        api.atomic_write_bytes(Path(args.json), (api.dumps_strict(doc, indent=2) + "\n").encode())
        written.append(f"wrote {args.json}")
    if args.node_data:
        written += _write_node_data(model, result, rows, args.node_data)
    _print_job_notes(chose, result, _recipe_file(args))
    kept = [i for i in result.issues if i.code == IssueCode.LATENCY_KEPT_FLOAT and i.node]
    _note_unmeasured(result.plan, rows, kept)
    if kept:
        _note_latency_kept(kept, "measures", args)
    print(f"end to end ({count(e2e.samples, 'sample')}, as `evaluate` measures it): measured with {e2e.runtime}")
    for o in e2e.outputs:
        worst = f" ({o.worst_row_text()})" if o.worst_row_text() else ""
        print(f"  output {o.name}: SQNR {o.sqnr_db:.2f} dB{worst}, cosine {o.cosine:.5f}")
    if split is not None:
        _print_split(split, e2e.samples)
    elif result.plan.mode == "weight_only" and args.split_samples != 0:
        print("weights vs activations: the recipe is weight-only (float activations), so all of the output noise "
              "comes from the weights (the end-to-end figures above)")
    print(f"per node unit (fake-quantized outputs, read from the unfused graph): measured with "
          f"{api.describe_runtime(False)}")
    if not rows:
        print("  none measured (see the note on stderr)")
    else:
        _print_unit_table(args, rows, local, weights)
    for line in written:
        print(line, file=sys.stderr)  # stdout holds the results
    return 0


def _print_unit_table(args, rows, local: dict, weights: dict) -> None:
    """analyze's per-unit table (worst first, ``--top`` rows) and its legend."""
    w = _name_width(r.node for r in rows[: args.top])
    print(f"{'node':{w}s} {'op':14s} {'SQNR dB':>8s} {'local dB':>8s} {'weight dB':>9s} {'MSE':>10s} {'cosine':>8s}")
    for r in rows[: args.top]:
        wdb = f"{weights[r.node].sqnr_db:9.2f}" if r.node in weights else f"{'-':>9s}"
        print(f"{_middle(r.node, w):{w}s} {r.op_type[:14]:14s} {r.sqnr_db:8.2f} {local.get(r.node, math.nan):8.2f} "
              f"{wdb} {r.mse:10.3g} {r.cosine:8.5f}")
    if len(rows) > args.top:
        print(f"({args.top} of {len(rows)} units shown, worst first; --top N for more, --json for all)")
    print("SQNR: the unit's output against float, with every error upstream; local: the noise the unit adds "
          "itself, its quantized nodes (input and output rounding, weights) run alone on the float model's values "
          "of its inputs, against float (inf only when that is exact; a unit whose nodes cannot be run alone gets "
          "1/local = 1/SQNR - 1/SQNR of its worst input, nan when that input's noise is not measured); weight: the "
          "unit's weight against its dequantized value (no data; --json also gives its worst output channel)")


def _write_node_data(model, result, rows, out: str) -> list[str]:
    """Write the Model Explorer node data; the lines that say what was written (printed after the results)."""
    data = api.build_node_data(model, result.plan, rows, measured=result.float_model)
    paths = api.write_node_data(data, out)
    lines = [f"Model Explorer node data ({figure}, {count(len(data.node_ids(figure)), 'node')} of graph "
             f"{data.graph_id!r}): {path}" for figure, path in paths.items()]
    if data.unmatched:
        lines.append(f"note: {len(data.unmatched)} units not found in {model.path} by name or output tensor, left "
                     f"out: {', '.join(data.unmatched[:5])}")
    return lines


def cmd_sweep(args) -> int:
    # without --executor: the sweep's own default (one thread per core), not make_executor's processes
    executor = api.make_executor(args.executor) if args.executor else None
    progress = TerminalProgress()
    try:
        model, result, eval_data, chose, job = _job_model(args, progress)
        sweep = api.sensitivity_sweep(model, result, eval_data, samples=args.eval_samples,
                                      top=args.top_units or None, executor=executor, progress=progress)
    finally:
        progress.close()
    if args.json:  # with the recipe it measured and the job's options: report --sweep-json refuses another job's
        sweep.recipe, sweep.job = (result.recipe.to_json() if result.recipe is not None else None), job
        api.atomic_write_bytes(Path(args.json), (api.dumps_strict(sweep.to_json(), indent=2) + "\n").encode())
    _print_job_notes(chose, result, _recipe_file(args))
    kept = [i for i in result.issues if i.code == IssueCode.LATENCY_KEPT_FLOAT and i.node]
    if kept:
        _note_latency_kept(kept, "sweeps", args)
    _note_unswept(result.plan, sweep.rows, kept)
    units = sum(not u.excluded for u in result.plan.units.values())
    print(_all_quantized_line(units, sweep.all_quant_db, sweep.samples))
    if not sweep.rows:
        print("  none swept (see the note on stderr)")  # no bare header
    w = _name_width(r.node for r in sweep.rows[: args.top])
    if sweep.rows:
        print(f"{'node':{w}s} {'op':14s} {'only quant':>10s} {'only float':>10s} {'own dB':>8s} {'gain dB':>8s}")
    for r in sweep.rows[: args.top]:
        print(f"{_middle(r.node, w):{w}s} {r.op_type[:14]:14s} {r.only_quant_db:10.2f} {r.only_float_db:10.2f} "
              f"{r.local_db:8.2f} {r.gain_db:8.2f}")
    if len(sweep.rows) > args.top:
        print(f"({args.top} of {len(sweep.rows)} units shown, worst first; --top N for more, --json for all)")
    if sweep.rows:
        print(_end_to_end_footer(len(sweep.rows), args.top_units))
    if args.json:
        print(f"wrote {args.json}", file=sys.stderr)  # after the table, as analyze does: stdout holds the table
    return 0


def _all_quantized_line(units: int, db: float, samples: int) -> str:
    """``sweep``'s line on the whole model as written (``units``: how many it quantizes; ``db``: its output SQNR
    against float over ``samples`` samples, dB). With no unit quantized it computes in float, and a dB figure
    would be only the float rounding between the float model run optimised and the written one run as written
    (digits_cnn with --exclude '*', 8 samples: 137.74 dB), so the line says no quantization noise; an exact
    match says bit-exact."""
    head = f"the quantized model ({count(units, 'unit')} quantized)"
    rows = count(samples, "sample")
    if db == math.inf:
        return f"{head}: bit-exact with the float model, no quantization noise ({rows})"
    if units == 0:
        return (f"{head}: no quantization noise, it computes in float like the float model ({rows}; its outputs "
                "differ from the float model's by float rounding at most, no SQNR figure)")
    return (f"{head}: {db:.2f} dB output SQNR ({rows}; fake-quantized, measured with "
            f"{api.describe_runtime(False)})")


def _note_unswept(plan, rows, kept) -> None:
    """Say why ``sweep``'s table is empty or lacks units (units inside If / Loop bodies, units all float)."""
    branch = [u.node for u in plan.units.values() if u.graph and not u.excluded]
    main_units = [u for u in plan.units.values() if not u.graph]
    if branch:
        print(f"note: {count(len(branch), 'unit')} inside If/Loop bodies not swept ({_names(branch)}); "
              "the quantized model's figure includes them", file=sys.stderr)
    elif rows:
        return
    elif kept:
        print("note: no unit to sweep: the latency check keeps every quantized unit float (the note above)",
              file=sys.stderr)
    elif main_units and all(u.excluded for u in main_units):
        print("note: no unit to sweep: every unit is float (the recipe, its exclusions or a guard keep them so)",
              file=sys.stderr)
    else:
        print("note: no unit of the main graph to sweep (units inside If/Loop bodies are not measured; "
              "`workbench-cli inspect` shows where they are)", file=sys.stderr)


def _end_to_end_footer(units: int, top_units: int) -> str:
    """The sweep table's last line: how many of the ``units`` rows were measured end to end
    (``--top-units``; 0: all)."""
    if not top_units or top_units >= units:
        return f"({'the one unit' if units == 1 else f'all {units} units'} measured end to end)"
    return (f"({top_units} of {units} units measured end to end, those with the worst own error; the others have "
            "their own-error figure only, listed after them: --top-units N for more, --top-units 0 for all)")


def _name_width(names, least: int = 40, most: int = 64) -> int:
    """Width of a table's node column: its longest name, within ``least`` .. ``most`` characters (a longer
    name is cut from the middle, :func:`_middle`)."""
    return max(least, min(most, max((len(n) for n in names), default=least)))


def _middle(name: str, width: int) -> str:
    """``name`` cut to ``width`` characters from the middle: exported node names share long prefixes
    (``/model/encoder/layer.3/...``) and differ at both ends."""
    if len(name) <= width:
        return name
    keep = width - 3
    head = keep // 2
    return f"{name[:head]}...{name[len(name) - (keep - head):]}"


def _promoted_summary(levels: dict[str, str]) -> str:
    if not levels:
        return "no unit promoted"
    order = sorted(set(levels.values()), key=lambda lv: (lv != "float", lv))  # as the progress lines list them
    counts = [f"{sum(1 for v in levels.values() if v == lv)} to {lv}" for lv in order]
    return f"{count(len(levels), 'unit')} promoted: " + ", ".join(counts)


def _curve_head(latency: bool) -> str:
    lat = f" {'latency':>9s}" if latency else ""
    return (f"{'trial':>5s} {'metric':>10s} {'8-bit units':>11s} {'weight MiB':>10s} {'GBOPs':>10s}{lat} "
            f"{'int16':>5s} {'float':>5s} {'int4w':>5s}")


def _curve_row(pt, *, marks: bool = True, latency: bool = False) -> str:
    """One autotune curve point as a table row: its trial number, metric, weight MiB, GBOPs, with ``latency``
    the measured latency / float ("?" where a figure is unknown), the units at each level; with ``marks``
    whether it is on the path and the front, and what the walk tried there. (The units promoted are the
    level columns' sum: once a ceiling put every unit at int16 it read the same on every row.)"""
    mib = "?" if pt.weight_bytes is None else f"{pt.weight_bytes / 2**20:.4f}"
    gbops = "?" if pt.bops is None else f"{pt.bops / 1e9:.4f}"
    wide = pt.count("int16") + pt.count("uint16")
    lat = "" if not latency else " " + ("?" if pt.latency is None else f"{pt.latency:.2f}x").rjust(9)
    row = (f"{pt.trial:5d} {api.fmt_metric(pt.metric):>10s} {pt.fraction_int8:11.1%} {mib:>10s} {gbops:>10s}{lat} "
           f"{wide:5d} {pt.count('float'):5d} {pt.count('int4-weights'):5d}")
    if marks:
        row += f"  {'*' if pt.accepted else '-':>4s} {'*' if pt.pareto else '-':>5s}  {pt.step}".rstrip()
    return row


def _check_labels_early(model, metric, data, *, default_top1: bool = False, output: str | None = None) -> None:
    """Refuse labels a built-in metric cannot score (missing, a length other than the input rows', not
    integer class indices) before the job quantizes or analyses anything. ``default_top1``: no metric
    given means top1 when the data has ``gt_label`` (the report's default); ``output``: the model output the
    metric reads (autotune's --metric-output; the first when None). Python readers are not
    opened here (that would run the user's code twice); the job checks them when it opens them."""
    if data is None or isinstance(data, dict) or (isinstance(metric, str) and metric.endswith(".py")):
        return
    if metric is None and default_top1:
        metric = api.default_metric(model, data)
    api.check_metric_data(metric, model, data, output=output)


def cmd_autotune(args) -> int:
    model = api.open_model(args.model)
    _refuse_quantized_job(args, model)  # before the eval data is read and the calibration starts
    _recheck_outputs(args)
    if args.metric in api.METRICS or args.metric == "sqnr":
        _check_labels_early(model, args.metric, _data_arg(args, args.eval), output=args.metric_output)
    recipe = _recipe_from_args(args)
    _refuse_qdq_only(args, model, recipe)  # the tuned model is written as QDQ: refused before any calibration
    _print_unmatched(api.plan(model, recipe, guard=True).issues, _recipe_file(args))
    progress = TerminalProgress()
    try:
        start = ""
        if args.auto:  # the recipe quantize would write, before its latency check
            recipe, _, start, _ = _auto_recipe(args, model, recipe, progress)
        res = api.autotune(model, recipe, data=_data_arg(args, args.data), eval_data=_data_arg(args, args.eval), metric=args.metric,
                       max_drop=args.max_drop, min_score=args.min_score, samples=args.samples,
                       eval_samples=args.eval_samples, promote_to=args.promote_to,
                       allow_code=args.allow_code, rank=args.rank, e2e_candidates=args.e2e_candidates,
                       rank_samples=args.rank_samples, max_trials=args.max_trials,
                       int4_weights=args.int4_weights, latency=args.latency, metric_output=args.metric_output,
                       speed_check=not args.no_latency_check, executor=api.make_executor(args.executor) if args.executor else None, progress=progress)
    finally:
        progress.close()
    print(f"measured with {api.describe_runtime(True)}")
    _print_autotune_metrics(args, res, start)
    for note in res.notes:
        print(note)
    print(_latency_scope_note(args, res))
    head = _curve_head(args.latency)
    print(head + "  path front  tried")
    for pt in res.curve:
        print(_curve_row(pt, latency=args.latency))
    against = ("weight MiB and measured latency (quantized / float, 1 thread, the first eval row)" if args.latency
               else "weight MiB and GBOPs at the recipe's widths (--latency measures latency)")
    print(f"Pareto front ({len(res.front)} of {len(res.curve)} points; metric against {against}):")
    print(head)
    for pt in res.front:
        print(_curve_row(pt, marks=False, latency=args.latency))
    _write_autotune(args, res)
    if res.met:
        slow = (f" (within target, NOT faster than float: {res.latency_after.ratio:.2f}x its latency)"
                if res.faster is False else "")
        print(f"wrote {args.output}" + (f" and {args.curve_json}" if args.curve_json else "") + slow)
        print(f"wrote the tuned recipe to {args.recipe_out} (quantize --recipe {args.recipe_out} --no-auto "
              f"--no-latency-check writes {args.output} again"
              + ("" if args.print_recipe else "; --print-recipe prints it here") + ")")
    else:
        print(_not_met_line(args, res))
    if args.print_recipe:
        print(_tuned_recipe_text(res.recipe))
    return 0 if res.met else 1


def _latency_scope_note(args, res) -> str:
    """autotune's line on latency: its trials are quantized without the latency check ``quantize`` applies by
    default (which would change the models scored), and what was timed instead: the tuned model after the
    search, every point (``--latency``), or nothing (``--no-latency-check``, or a target not met)."""
    if res.latency_after is not None:
        timed = "the tuned model alone, against float after the search (the latency line above)"
    elif args.no_latency_check:
        timed = "not at all (--no-latency-check)"
    elif not res.met:
        timed = "not at all: the target was not met"
    else:
        timed = "not at all: it could not be measured (the line above says why)"
    every = "; --latency timed every point of the curve as well" if args.latency else ""
    return ("note: the trials are quantized without the latency check `quantize` applies by default (it keeps float "
            "the depthwise and single-input-channel Convs, AveragePools and activation MatMuls whose integer kernel measures slower and, when the model measures slower than float, "
            "the islands that do not pay), so every metric here is of the recipe as written; latency is measured "
            f"separately: {timed}{every}. `quantize --recipe` with the tuned recipe applies that check and can keep "
            "units float that this output quantizes")


def _not_met_line(args, res) -> str:
    """autotune's one line when no tried recipe met the target: what it wrote (the best recipe tried: the
    best metric, on a tie the fewest units promoted; the recipe as given when nothing beat it)."""
    best = ("the recipe as given" if not res.levels else "the best recipe tried") + f" ({_promoted_summary(res.levels)}"
    files = [args.output, args.recipe_out] + ([args.curve_json] if args.curve_json else [])
    return (f"target NOT met: no tried recipe reached {args.metric} {_target_text(args, res)}; wrote "
            f"{', '.join(files[:-1])} and {files[-1]} with {best}, {args.metric} {api.fmt_metric(res.metric_after)})")


def _target_text(args, res) -> str:
    """``>= 0.9900`` (the target as a score): ``--min-score``, or the float metric minus ``--max-drop``."""
    score = args.min_score if args.min_score is not None else res.metric_float - args.max_drop
    return f">= {api.fmt_metric(score)}"


def _tuned_recipe_text(recipe) -> str:
    """The tuned recipe's JSON with its preset always named: a recipe of the default preset and nothing
    else (the recipe as given, nothing promoted) read ``{"reduce_range": false}`` alone."""
    doc = json.loads(recipe.to_json())
    return json.dumps({"preset": recipe.preset, **doc}, indent=2)


def _recipe_out_default(args) -> None:
    """``autotune`` without ``--recipe-out`` writes the tuned recipe beside the model (``tuned.onnx`` ->
    ``tuned.recipe.json``; about 550 lines on minilm_l6_v2 went to stdout before).

    Raises
    ------
    ExportError
        That file is the ``--recipe`` the run reads.
    """
    if args.command != "autotune" or args.recipe_out or not args.output:
        return
    out = Path(args.output)
    args.recipe_out = str(out.with_name((out.name[:-5] if out.name.lower().endswith(".onnx") else out.name)
                                        + ".recipe.json"))
    if args.recipe and os.path.realpath(args.recipe) == os.path.realpath(args.recipe_out):
        raise ExportError(f"{args.recipe_out}: autotune writes the tuned recipe there by default, but it is the "
                          "--recipe this run reads.", hint="Give --recipe-out FILE another path.")


def _print_autotune_metrics(args, res, start: str = "") -> None:
    """The float, all-quantized and tuned figures, each followed by its own bootstrap interval against
    float (the interval of the all-quantized model printed after the tuned figure read as the tuned one's),
    and the start point: the recipe choice's summary ``start`` (``--auto``) or the preset as it is."""
    r0, r1 = res.resolution, res.resolution_after
    rows = f" on {r0.rows} eval rows" if r0 is not None else ""
    step = f" (it moves in steps of 1/{r0.rows} = {r0.step:.4f})" if r0 is not None and r0.step else ""
    print(f"metric {args.metric}{_metric_output_text(args, res)}{rows}{step}:")
    print(f"  float {api.fmt_metric(res.metric_float)}")
    print(f"  all quantized {api.fmt_metric(res.metric_before)}" + (f"; {r0.interval('all quantized')}" if r0 else ""))
    if start:
        print(f"    (start point: the recipe `quantize` chooses, {start}; without --auto autotune starts from the "
              "preset as it is)")
    elif not getattr(args, "recipe", None):  # quantize's recipe choice applies to a bare preset only
        print(f"    (start point: preset {args.preset or 'cpu-u8s8'} as it is, not the recipe `quantize` writes: it first "
              "chooses between the preset and MSE activation ranges (its --auto default), which can score higher; "
              "autotune --auto starts from that choice)")
    met = "NOT met" if not res.met else "met, but NOT faster than float" if res.faster is False else "met"
    print(f"  after autotune {api.fmt_metric(res.metric_after)} ({_promoted_summary(res.levels)}; "
          f"target {met})" + (f"; {r1.interval('after autotune')}" if r1 else ""))


def _metric_output_text(args, res) -> str:
    """`` on output NAME`` (and the others, and the option to pick one) where a model has several outputs
    and a built-in metric reads one of them; "" otherwise (a metric file reads what it likes)."""
    if len(res.outputs) < 2 or res.metric_output is None or (args.metric.endswith(".py") and not args.metric_output):
        return ""
    others = ", ".join(o for o in res.outputs if o != res.metric_output)
    how = "as --metric-output asked" if args.metric_output else "the first output"
    return f" on output {res.metric_output} ({how}; others: {others}; --metric-output NAME scores another)"


def _write_autotune(args, res) -> None:
    """The files of ``autotune``: the curve (``--curve-json``) and the tuned recipe (``--recipe-out``) wait
    in temporary files beside their targets while the model is written (atomically, the last write), then
    are renamed into place: an interrupt or an error before that leaves none of the new files."""
    staged = []
    try:
        if args.curve_json:
            doc = {"metric": args.metric, "metric_float": res.metric_float, "promote_to": args.promote_to,
                   "eval": str(args.eval), "eval_samples": args.eval_samples,  # what the curve was measured on
                   "cost_proxy": ("latency (quantized / float, measured)" if args.latency
                                  else "bops (latency not measured: --latency)"),
                   "curve": [pt.to_json() for pt in res.curve], "front": [pt.trial for pt in res.front]}
            staged.append(api.StagedWrite(args.curve_json, (api.dumps_strict(doc, indent=2) + "\n").encode()))
        if args.recipe_out:
            staged.append(api.StagedWrite(args.recipe_out, _tuned_recipe_text(res.recipe).encode()))
    except BaseException:
        for s in staged:
            s.discard()
        raise
    _land_together(lambda: api.export(res.result, args.output), staged)


def _land_together(write, staged: list) -> Path:
    """``write()`` (the model, written atomically; returns its path), then each of ``staged`` (temporary
    files of the job's other outputs) renamed into place. An interrupt or error once the model landed
    removes it and the files already renamed (a Ctrl-C in the cleanup and fsync between the renames left
    minilm_l6_v2's model without its project, after "error: interrupted."), so a job that fails leaves none
    of its outputs; the temporary files are removed in any case."""
    landed: list[Path] = []
    try:
        landed.append(Path(write()))
        for s in staged:
            s.commit()
            landed.append(s.path)
        return landed[0]
    except BaseException:
        for path in landed:
            with contextlib.suppress(OSError):
                path.unlink()
        raise
    finally:
        for s in staged:
            s.discard()  # no-op once committed


def cmd_report(args) -> int:
    progress = TerminalProgress()
    try:
        if not str(args.model).endswith(".wbproj") and not args.data and not args.eval:
            raise ExportError("report: no data given.", hint="Add --data CALIB.npz (and --eval EVAL.npz).")
        # the files given beside the model are read before the job: a bad one is refused at once
        curve = api.load_curve(args.curve_in) if args.curve_in else None
        sweep = api.read_sweep(args.sweep_in) if args.sweep_in else None
        metric = args.metric
        if metric is not None and metric.endswith(".py"):
            metric = api.load_metric(metric, allow_code=args.allow_code)
        def names_known(model) -> None:  # the node names only need the model: refused before quantizing
            api.check_report_names(model, curve=curve, curve_source=str(args.curve_in or ""), sweep=sweep,
                                   sweep_source=str(args.sweep_in or ""))
            _check_labels_early(model, metric, _data_arg(args, args.eval or args.data), default_top1=True)

        model, result, eval_data, chose, job = _job_model(args, progress, check=names_known)
        sweep = sweep or _project_sweep(args.model, result)
        sweep_source = str(args.sweep_in or f"{args.model}: results.sensitivity.sweep")
        api.check_report_inputs(model, result, curve=curve, curve_source=str(args.curve_in or ""),
                                sweep=sweep, sweep_source=sweep_source, job=job)
        out = api.write_report(args.output, model, result, eval_data, eval_samples=args.eval_samples,
                               metric=metric, curve=curve, sweep=sweep, worst=args.worst,
                               progress=progress, choice=_shareable(chose),
                               **({} if args.split_samples is None else {"split_samples": args.split_samples}))
    finally:
        progress.close()
    _print_job_notes(chose, result, _recipe_file(args))
    if placement := api.sweep_placement_note(sweep, result.recipe):  # timed decisions: the sweep is taken as measured
        print(f"note: {sweep_source}: {placement}", file=sys.stderr)
    print(f"wrote {out} (open it in a browser; it loads nothing from the network)")
    return 0


def _project_sweep(path: str, result):
    """The sensitivity sweep a project saved from the app, when it was made with the same recipe."""
    if not str(path).endswith(".wbproj"):
        return None
    saved = (api.load_project(path, check_model=False).results or {}).get("sensitivity") or {}
    if not saved.get("sweep") or saved.get("recipe") != result.recipe.to_json():
        return None
    return api.load_sweep(saved["sweep"], f"{path}: results.sensitivity.sweep")


def _not_convertible(path: str, proto, to: str) -> str | None:
    """Why the model has nothing to convert to ``to`` (None when it has), from the kinds of
    quantized operators :func:`workbench.core.graph.quantized_ops.find_quantized` recognises."""
    found = api.find_quantized(proto)
    kinds = {q.kind for q in found}
    if (to == "qdq" and "QONNX" in kinds) or (to == "qonnx" and "QDQ" in kinds and "dynamic" not in kinds):
        return None
    if kinds == {"QDQ"} or kinds == {"QONNX"}:
        return f"{path} is already a {kinds.pop()} model: nothing to convert to {to}."
    if "dynamic" in kinds:
        ops = sorted({q.op_type for q in found if q.kind == "dynamic"})
        return (f"{path} is quantized dynamically ({', '.join(ops)}): its activations have no fixed "
                f"scales, so it cannot be written as {to}. Quantize the float model with a static preset "
                f"(e.g. workbench-cli quantize FLOAT.onnx --preset cpu-u8s8 --data calib.npz --format {to}).")
    if kinds:
        return (f"{path} holds {', '.join(sorted(kinds))} operators, which have no {to} form. Quantize the "
                f"float model instead (workbench-cli quantize FLOAT.onnx --data calib.npz --format {to}).")
    if any(p.key == api.WRITTEN_KEY for p in proto.metadata_props):  # what quantize wrote with every unit float
        return (f"{path} has no quantization nodes: nothing to convert to {to}. workbench-cli quantize wrote it with "
                "every unit float (the latency check or the recipe kept them float); quantize the float model with "
                f"--no-latency-check (workbench-cli quantize FLOAT.onnx --data calib.npz --no-latency-check --format "
                f"{to} -o OUT.onnx).")
    return (f"{path} has no quantization nodes: nothing to convert to {to}. Quantize the float model "
            f"first (workbench-cli quantize {path} --data calib.npz --format {to} -o OUT.onnx).")


def _given_input_shapes(args, error=WorkbenchError) -> dict[str, list[int]]:
    """``--input-shape NAME:DIMS`` values as {name: dims}; ``error`` (a WorkbenchError type) for an input
    given twice."""
    given: dict[str, list[int]] = {}
    for name, dims in getattr(args, "input_shape", None) or []:
        if name in given:
            raise error(f"--input-shape {name}: given twice.", hint="Give each input once.")
        given[name] = dims
    return given


def _qonnx_input_shapes(args, proto, source, *, note: bool = False) -> dict[str, list[int]] | None:
    """``--input-shape NAME:DIMS`` values as {name: dims}, checked against ``proto``'s inputs (one-line
    ExportError for a bad name, rank or fixed dimension); with ``note``, prints why a QONNX file stays
    symbolic (inputs with symbolic dimensions besides the batch and no --input-shape)."""
    given = _given_input_shapes(args, ExportError)
    fmt = getattr(args, "format", None) or getattr(args, "to", None)
    if given and fmt != "qonnx":
        flag = "--to qonnx" if hasattr(args, "to") else "--format qonnx"
        raise ExportError("--input-shape applies to QONNX output only.", hint=f"Add {flag}, or drop --input-shape.")
    if fmt == "qonnx":
        choice = api.resolve_input_shapes(proto, given, source=str(source))
        if note and choice.note:
            print(f"note: {choice.note}", file=sys.stderr)
    return given or None


def _input_shape_type(text: str) -> tuple[str, list[int]]:
    """argparse type of ``--input-shape``: NAME:DIMS (see :func:`workbench.core.qonnx.shapes.parse_input_shape`)."""
    try:
        return api.parse_input_shape(text)
    except WorkbenchError as exc:
        raise argparse.ArgumentTypeError(exc.message.removeprefix("--input-shape ")) from None


def _add_auto_arg(s) -> None:
    s.add_argument("--auto", action=argparse.BooleanOptionalAction, default=None,
                   help="with --data and a bare preset (no --recipe), or a --recipe of a preset and node overrides "
                        "only (kept as written): keep the preset, or switch to MSE activation "
                        "ranges, or to MSE ranges with only Conv/MatMul/Gemm quantized, whichever gives the highest "
                        "output SQNR on held-out calibration rows (within 0.5 dB of the best, the preset, then "
                        "the compute-only variant, wins); then the run of units that holds most of the output noise "
                        "is kept float (cpu-u8s8: onnxruntime runs 16-bit activations on float kernels) or given "
                        "16-bit activations (s8s8), if that raises the SQNR by 3 dB or more; written into the recipe "
                        "and a saved project (the default; --auto given where there is no choice says why); "
                        "--no-auto quantizes the preset as it is")


def _add_remeasure_arg(s) -> None:
    s.add_argument("--remeasure-latency", action="store_true",
                   help="measure latency again instead of reusing a cached measurement of the same pair of models "
                        "(measurements are cached per pair under the user cache directory, except ones taken on a "
                        "loaded machine; the WORKBENCH_REMEASURE_LATENCY=1 environment variable does the same, "
                        "also for the app)")


def _add_split_arg(s) -> None:
    s.add_argument("--split-samples", type=_count_arg, metavar="N",
                   help="measure the weights vs activations split (the output SQNR with only the weights, and "
                        "with only the activations, quantized: four unfused passes) on at most N of the samples; "
                        "default: the split's own cap, which its line names when it reads fewer samples than the "
                        "figures above; 0: no split")


def _add_input_shape_arg(s) -> None:
    s.add_argument("--input-shape", action="append", type=_input_shape_type, metavar="NAME:DIMS",
                   help="QONNX: fix an input's shape, e.g. input:1,3,224,224 (repeatable); without it a "
                        "symbolic batch becomes 1, so qonnx/FINN run the file as written")


def cmd_convert(args) -> int:
    proto = api.read_convert_input(args.input)
    why = _not_convertible(args.input, proto, args.to)
    if why:
        print(f"error: {why} Nothing written.", file=sys.stderr)
        return 2
    report = api.conversion_report(proto, args.to)
    for node, reason in report:
        print(f"cannot convert {node}: {reason}")
    if report and not args.partial:
        node, reason = report[0]
        more = f" (and {len(report) - 1} more, listed above)" if len(report) > 1 else ""
        print(f"error: node {node!r} cannot be converted to {args.to}: {reason.rstrip('.')}{more}; nothing "
              "written (use --partial to leave such nodes unchanged).", file=sys.stderr)
        return 2
    out = api.convert_file(args.input, args.output, args.to, partial=args.partial,
                           input_shapes=_qonnx_input_shapes(args, proto, args.input, note=True), static_shapes=True)
    print(f"wrote {args.output} ({args.to}, {len(out.graph.node)} nodes, {len(report)} left unconverted)")
    return 0


#: the legend's first note under the SQNR stops (the canvas's own when no note is given)
SQNR_STOPS_NOTE = "linear between the stops; bit-exact shown as 100 dB, all noise (-inf) as -100 dB (red)"


def _render_values(args, model) -> tuple[str, dict | None, dict | None, dict | None, list[str] | None, list[str]]:
    """Canvas colour mode, per-node dtypes / SQNR (dB), per-tensor SQNR of edges, the legend's notes (None:
    the canvas's own) and the units the recipe keeps float (their names, as the app marks them: a dashed
    outline, and "kept float" on a grey group box) for ``render``."""
    recipe = _recipe_from_args(args)
    if args.compare:  # the quantized file, coloured by the SQNR of each tensor against this float model
        if not args.data:
            raise WorkbenchError("render --compare: the SQNR is measured on data; give --data CALIB.npz.")
        progress = TerminalProgress()
        try:
            diff = api.compare_models(model, api.open_model(args.compare).proto, _data_arg(args, args.data),
                                      samples=args.samples, progress=progress, quant_label=str(args.compare))
        finally:
            progress.close()
        for note in getattr(diff, "notes", []):  # e.g. renamed graph outputs matched by position
            print(f"note: {note}", file=sys.stderr)
        # bit-exact at 100 dB, all noise (-inf) at -100 dB (red), as render --colour sqnr and the app draw them
        edges = {diff.tensors[t]: colour_db(db) for t, db in diff.sqnr.items() if not math.isnan(db)}
        errors = {n: colour_db(db) for n, db in diff.node_sqnr().items() if not math.isnan(db)}
        return "error", None, errors, edges, None, []
    if args.colour == "dtype" and model.quantized:  # an already-quantized file: the dtypes it holds
        return "dtype", api.summarize_quantization(model.proto).node_dtypes, None, None, None, []
    if args.colour == "dtype":
        dtypes = {}
        plan = api.plan(model, recipe, guard=True)
        _print_unmatched(plan.issues, _recipe_file(args))
        for name, unit in plan.units.items():
            spec = None if unit.excluded else (unit.config.activation or unit.config.weight)
            for n in unit.nodes or [name]:
                dtypes[n] = spec.dtype if spec is not None else "float"
        return "dtype", dtypes, None, None, None, _kept_float(plan.units)
    if args.colour == "sqnr":
        if not args.data:
            raise WorkbenchError("render --colour sqnr: the SQNR is measured on data; give --data CALIB.npz.")
        progress = TerminalProgress()
        try:  # the model quantize writes (recipe choice, latency check), as analyze measures it
            model, result, eval_data, chose, job = _job_model(args, progress)
            rows = api.analyze(model, result, _data_arg(args, eval_data), samples=args.samples, progress=progress,
                               own_noise=False)  # the accumulated SQNR only
        finally:
            progress.close()
        _print_job_notes(chose, result, _recipe_file(args))
        kept = [i for i in result.issues if i.code == IssueCode.LATENCY_KEPT_FLOAT and i.node]
        errors = node_sqnr(rows, result.plan.units)  # every node of a unit, as the app colours them
        units = result.plan.units
        # no unit quantized: the picture is all grey; one line says why and what to do (a replayed project's
        # latency note says its recipe keeps them, where --no-latency-check changes nothing)
        all_grey = not errors and all(u.excluded for u in units.values()) and \
            not (kept and str(args.model).endswith(".wbproj"))
        if kept and not all_grey:
            _note_latency_kept(kept, "measures", args)
        if all_grey:
            latency = sum(len(i.units) if i.island else 1 for i in kept)
            print(f"note: {all_grey_note(units, latency)}", file=sys.stderr)
        grey = grey_note(model.proto.graph.node, units, errors, bool(kept))
        # the stops' note only where some node is coloured (the picture's legend then lists "no value" alone)
        notes = ([SQNR_STOPS_NOTE] if errors else []) + ([grey] if grey else [])
        return "error", None, errors, None, notes, _kept_float(units)
    return "op", None, None, None, None, []


def _kept_float(units: dict) -> list[str]:
    """The units ``units`` (the plan's: name -> ``NodeUnit``) keeps float, by name: what the app passes to its
    canvas's ``set_float_nodes``."""
    return sorted(n for n, u in units.items() if u.excluded)


def cmd_render(args) -> int:
    """Draw the model's graph as the app's canvas shows it at "Fit graph", into a PNG or SVG.

    The core work (open, plan, quantize + analyze for ``--colour sqnr``) runs here; the drawing
    runs in a child process, ``python -m workbench.qt.render SPEC.json`` (offscreen Qt), because
    this module may import only the core facade (an import-linter contract) and a verb that does
    not draw should not load Qt. The spec (a temporary JSON file) carries the model path, the
    output, the colour mode, the per-node values and the open depth; with ``--compare`` also the float
    model, and the child draws the two aligned panes of the app's compare tab.
    """
    suffix = Path(args.output).suffix.lower()
    if suffix not in (".png", ".svg"):
        raise ExportError(f"{args.output}: render writes .png or .svg pictures.", hint="Name the output OUT.png or OUT.svg.")
    missing = first_missing(RENDER_MODULES)  # the README's CLI-only install (pip install -e .) has none of them
    if missing is not None:
        raise WorkbenchError(f"render draws with the app's extras, {not_installed(missing)}.",
                             hint=f"Install them with {INSTALL_EXTRAS}; the other verbs need none of them.")
    model, _ = _compare_order(args, "compare")  # render QUANTIZED --compare FLOAT: swapped, with a note
    _recheck_outputs(args)
    mode, dtypes, errors, edge_errors, notes, floats = _render_values(args, model)
    drawn = args.compare or args.model  # --compare draws the quantized file
    spec = {"model": str(Path(drawn).resolve()), "output": str(Path(args.output).resolve()), "mode": mode,
            "dtypes": dtypes, "errors": errors, "edge_errors": edge_errors, "error_notes": notes, "depth": args.expand,
            "max_side": args.max_side, "floats": floats}
    if args.compare:  # the float model left, the quantized file right (two aligned panes)
        spec["float_model"] = str(Path(args.model).resolve())
    env = dict(os.environ)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    with tempfile.TemporaryDirectory() as tmp:
        spec_path = Path(tmp) / "render.json"
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        child = subprocess.run([sys.executable, "-m", "workbench.qt.render", str(spec_path)], env=env,
                               capture_output=True, text=True)
    if child.returncode != 0:
        lines = [ln for ln in child.stderr.strip().splitlines() if ln.strip()]
        last = lines[-1] if lines else f"exit status {child.returncode}"
        raise WorkbenchError(f"render {args.model}: {last.removeprefix('error: ')}")
    print(child.stdout.strip())
    return 0


def cmd_cost(args) -> int:
    project = _cost_project(args)
    model = api.open_model(project.model_path(args.model) if project else args.model)
    given = _given_input_shapes(args)
    _refuse_unknown_dims(args, model, given)
    as_written = api.written_float(model)
    if as_written is not None:  # quantize's output, float as written: count what onnxruntime runs, not a recipe
        return _print_file_cost(args, api.file_cost(model, args.data, batch=args.batch, input_shapes=given),
                                as_written, given)
    if model.quantized:  # counted as the file is written: its integer widths, the kernels onnxruntime runs
        rep, text = api.quantized_file_cost(model, args.data, batch=args.batch, input_shapes=given)
        qonnx = any(q.kind == "QONNX" for q in model.quantized)  # onnxruntime cannot run its Quant nodes
        return _print_file_cost(args, rep, f"{Path(args.model).name} is already quantized ({text})", given,
                                qonnx=qonnx)
    recipe = _recipe_from_args(args) if project is None else project.recipe.model_copy(
        update={"exclude": list(project.recipe.exclude) + list(args.exclude or [])})
    plan = api.plan(model, recipe, guard=True)  # the units quantize keeps float count as float
    for issue in plan.issues:  # an --exclude or recipe entry that matches nothing: said as quantize says it
        if issue.code == IssueCode.UNMATCHED_RECIPE_ENTRY:
            print(f"warning: {_where(issue, _recipe_file(args))}{issue.message}", file=sys.stderr)
    rep = api.plan_cost(model, plan, args.data, batch=args.batch, input_shapes=given)
    if args.json:
        print(json.dumps({"recipe": plan.recipe.preset, **rep.to_json()}, indent=2))
        return 0
    _print_cost_rows(rep)
    ratio = rep.bops_float / rep.bops if rep.bops else 0.0
    as_run = rep.bops_float / rep.bops_kernel if rep.bops_kernel else 0.0
    counted = f"project {args.model} (recipe {plan.recipe.preset} as saved)" if project else f"recipe {plan.recipe.preset}"
    print(f"{counted}: BOPs / {ratio:.1f} (as onnxruntime runs them: / {as_run:.1f}), weight memory "
          f"{rep.memory_float_bits / 8e6:.3f} MB -> {rep.memory_bits / 8e6:.3f} MB "
          f"({_cost_shapes(args, given)})")
    for note in rep.notes:
        print(f"note: {note}")
    if project is None:
        print(f"note: {_plan_not_written(args, recipe)}")
    on_float = [r for r in rep.rows if (r.weight_bits, r.activation_bits) != (api.FLOAT_BITS, api.FLOAT_BITS)
                and (r.kernel_weight_bits, r.kernel_activation_bits) == (api.FLOAT_BITS, api.FLOAT_BITS)]
    if on_float:
        kinds = Counter(r.op_type for r in on_float)
        print(f"note: {count(len(on_float), 'quantized node')} run DequantizeLinear and a float kernel in onnxruntime "
              f"({', '.join(f'{op} x{n}' for op, n in kinds.items())}: ConvTranspose, 16-bit activations, float8 or "
              "weight-only int8), so 'BOPs as run' counts them 32 x 32")
    guarded = Counter(i.code.value for i in plan.issues if i.code in (IssueCode.FLOAT_ISLAND, IssueCode.WEIGHT_DQ_ONLY))
    if guarded:
        print(f"note: {count(sum(guarded.values()), 'unit')} of the recipe counted float, as `quantize` keeps "
              f"them by default ({', '.join(f'{n} {code}' for code, n in guarded.items())}; `quantize` says why)")
    mx_rows = [r for r in rep.rows if r.node in plan.units and not plan.units[r.node].excluded
               and plan.units[r.node].config.weight is not None
               and plan.units[r.node].config.weight.dtype.startswith("mx")]
    if mx_rows:  # OCP MX: one E8M0 byte per block of 32 weights, not in the columns above
        print(f"note: MX weights also store one E8M0 scale byte per 32 elements "
              f"(about +{sum(-(-r.weight_params // 32) for r in mx_rows):,} B)")
    return 0


def _cost_project(args):
    """The project ``cost PROJECT.wbproj`` counts (its model under its recipe: the recipe ``quantize
    --save-project`` saved, with the units its recipe choice and latency check kept float), with ``--data``
    defaulting to the project's data file; None for a model.

    Raises
    ------
    WorkbenchError
        ``--preset`` or ``--recipe`` given with a project (the project's recipe is the one counted).
    """
    if not str(args.model).endswith(".wbproj"):
        return None
    if args.preset is not None or args.recipe:
        flag = "--recipe" if args.recipe else "--preset"
        raise WorkbenchError(f"{flag}: {args.model} is a project; cost counts the recipe it saved.",
                             hint=f"Drop {flag}, or give the model the project records in place of the project.")
    project = api.load_project(args.model)
    for note in project.path_notes:
        print(f"note: {note}", file=sys.stderr)
    if not args.data:
        data = [p for p in project.input_paths(args.model)[2:] if p.suffix.lower() in (".npz", ".npy") and p.is_file()]
        args.data = os.path.normpath(data[0]) if data else None
    return project


def _plan_not_written(args, recipe) -> str:
    """The note under ``cost MODEL``: the figures count the recipe's plan, not the model ``quantize`` writes, and
    how to count that one."""
    chooses = args.data and not args.recipe and api.why_not_choose(recipe) is None
    more = ("chooses the recipe (MSE ranges, compute-only, units kept float or 16-bit) and " if chooses else "")
    return (f"these figures count the plan of {'--recipe ' + args.recipe if args.recipe else 'preset ' + recipe.preset} "
            f"with quantize's float-island guards, not a written model: quantize {more}keeps units float whose "
            "integer kernel measures slower, so it can quantize fewer; to count what it writes, run quantize with "
            "--save-project P.wbproj and then cost P.wbproj")


def _refuse_unknown_dims(args, model, given: dict[str, list[int]]) -> None:
    """Refuse to count a model whose input sizes (an image's height and width, a sequence length) neither
    the model, ``--input-shape`` nor ``--data`` gives: they would count as 1 and every MAC figure with them.

    Raises
    ------
    WorkbenchError
        Naming the inputs and dimensions, with an ``--input-shape`` to type and the data file beside the
        model when there is one.
    """
    names = {i.name for i in model.proto.graph.input}
    if args.data or not set(given) <= names:  # those are refused by the count, with their reason
        return
    unknown = api.unknown_dims(model.proto, given)
    if not unknown:
        return
    dims = "; ".join(f"{name}: {', '.join(labels)}" for name, labels in unknown.items())
    name = next(iter(unknown))
    vi = next(i for i in model.proto.graph.input if i.name == name)
    example = "x".join(_dim_example(k, d) for k, d in enumerate(vi.type.tensor_type.shape.dim))
    found = api.data_beside(args.model)
    beside = f" ({found} is beside the model)" if found else ""
    raise WorkbenchError(
        f"{args.model}: the input sizes are unknown ({dims}); cost would count them as 1 and its MACs and "
        "BOPs would mean nothing.",
        hint=f"Give them: --input-shape {name}:{example} (repeatable), or --data "
             f"{found or 'calib.npz'} to count at its first sample's shapes{beside}.")


def _dim_example(k: int, dim) -> str:
    """One dimension of an ``--input-shape`` example: its size, 1 for an unknown batch (the first), else
    ``<its name>`` to fill in."""
    if dim.dim_value > 0:
        return str(dim.dim_value)
    if k == 0:
        return "1"
    return f"<{dim.dim_param}>" if dim.dim_param not in ("", "?") else f"<dim{k}>"


def _print_cost_rows(rep) -> None:
    """The per-node table of ``cost`` (op types and figures whole: each column as wide as its longest entry, the
    totals included) and its total line, then which nodes the total leaves out when their MACs are unknown."""
    ow = max([8, *(len(r.op_type) for r in rep.rows)])
    mw, bw = max(12, len(f"{rep.macs:,}")), max(14, len(f"{rep.bops_float:,}"))
    print(f"{'node':36s} {'op':{ow}s} {'MACs':>{mw}s} {'w/a bits':>8s} {'BOPs float':>{bw}s} {'BOPs quant':>{bw}s} "
          f"{'BOPs as run':>{bw}s} {'weights float':>13s} {'weights quant':>13s}")
    for r in rep.rows:
        macs, bops = _cost_figures(r)
        print(f"{_middle(r.node, 36):36s} {r.op_type:{ow}s} {macs:>{mw}s} {f'{r.weight_bits}/{r.activation_bits}':>8s} "
              f"{bops[0]:>{bw}s} {bops[1]:>{bw}s} {bops[2]:>{bw}s} {r.memory_float_bits // 8:>11,} B "
              f"{r.memory_bits // 8:>11,} B")
    print(f"{'total':36s} {'':{ow}s} {rep.macs:>{mw},} {'':>8s} {rep.bops_float:>{bw},} {rep.bops:>{bw},} "
          f"{rep.bops_kernel:>{bw},} {rep.memory_float_bits // 8:>11,} B {rep.memory_bits // 8:>11,} B")
    unknown = rep.unknown
    if unknown:
        print(f"the MAC and BOPs totals exclude {count(len(unknown), 'node')} whose shapes stay unknown at these "
              f"input shapes (a size that depends on the values, a dimension no input fixes, or an operator before "
              f"them that shape inference does not know): "
              f"{', '.join(unknown)}")


def _cost_figures(row) -> tuple[str, tuple[str, str, str]]:
    """A cost row's MACs and (float, quantized, as run) BOPs as table cells, ``?`` where the MACs are unknown."""
    if row.macs is None:
        return "?", ("?", "?", "?")
    return f"{row.macs:,}", (f"{row.bops_float:,}", f"{row.bops:,}", f"{row.bops_kernel:,}")


def _print_file_cost(args, rep, as_written: str, given: dict[str, list[int]], *, qonnx: bool = False) -> int:
    """``cost`` of a file as written: one quantize wrote in float (:func:`workbench.core.api.written_float`:
    every node 32 x 32) or an already-quantized one (:func:`workbench.core.api.quantized_file_cost`); ``as_written``
    says which. A recipe given is not counted and a note says so. ``qonnx``: a QONNX file, which onnxruntime
    cannot run: its "as run" column counts every node 32 x 32 (float kernels between the Quant nodes, as QONNX's
    own executor runs it), and the summary says so and how to count what onnxruntime runs."""
    asked = ("--recipe " + args.recipe if args.recipe else "--preset " + args.preset if args.preset is not None
             else "--exclude" if args.exclude else "")
    if args.json:
        print(json.dumps({"recipe": None, "as_written": as_written, **rep.to_json()}, indent=2))
        return 0
    _print_cost_rows(rep)
    ratio = rep.bops_float / rep.bops if rep.bops else 1.0
    as_run = rep.bops_float / rep.bops_kernel if rep.bops_kernel else 1.0
    memory = f"{rep.memory_float_bits / 8e6:.3f} MB" + (
        f" -> {rep.memory_bits / 8e6:.3f} MB" if rep.memory_bits != rep.memory_float_bits else "")
    run = (f"onnxruntime cannot run QONNX; 'BOPs as run' counts every node 32 x 32, the float kernels QONNX's "
           f"executor computes between its Quant nodes: / {as_run:.1f}" if qonnx
           else f"as onnxruntime runs them: / {as_run:.1f}")
    print(f"as written: BOPs / {ratio:.1f} ({run}), weight memory {memory} ({_cost_shapes(args, given)})")
    for note in rep.notes:
        print(f"note: {note}")
    if qonnx:
        path = Path(args.model)
        qdq = path.with_name(path.name.removesuffix(".onnx").removesuffix(".qonnx") + ".qdq.onnx")
        print(f"note: to count the kernels onnxruntime runs, convert it to QDQ (workbench-cli convert {args.model} "
              f"{qdq} --to qdq) and run cost on that file")
    print(f"note: {as_written}; the figures count the file as it is"
          + (f" ({asked} not counted: give it with the float model quantize read)" if asked else ""))
    return 0


def _cost_shapes(args, given: dict[str, list[int]]) -> str:
    """Where the cost's input shapes came from, for its summary line."""
    parts = [f"{name} {'x'.join(map(str, dims))}" for name, dims in given.items()]
    if args.data:
        parts.append(f"{'other inputs at ' if parts else ''}the shapes of {args.data}")
    return "at " + ", ".join(parts) if parts else f"batch {args.batch}"


def cmd_presets(args) -> int:
    for p in api.PRESETS.values():
        print(f"{p.name:12s} {p.mode:12s} {p.description}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = UsageParser(prog="workbench-cli", description="Post-training quantization of ONNX models.")
    p.add_argument("--version", action="version", version=f"workbench {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="log details to stderr")
    sub = p.add_subparsers(dest="command")

    s = sub.add_parser("inspect", help="ops, opset, subgraphs, weights, already quantized? (--units: quantizable units)")
    s.add_argument("model", help="MODEL.onnx (float or quantized)")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.add_argument("--units", action="store_true",
                   help="also list the node units the default preset (cpu-u8s8) would quantize")
    s.add_argument("--params", action="store_true",
                   help="list every quantized tensor's scale and zero_point (the text summarizes them by default)")
    s.set_defaults(func=cmd_inspect)

    def recipe_args(s):
        g = s.add_mutually_exclusive_group()
        g.add_argument("--preset", help="cpu-u8s8 (default), s8s8, a16w8, w4-block, fp8-e4m3, dynamic-u8")
        g.add_argument("--recipe", help="recipe JSON file")
        s.add_argument("--exclude", action="append", metavar="GLOB", help="keep matching nodes in float")
        s.add_argument("--data", help="calibration data: .npz/.npy file or folder")
        s.add_argument("--samples", type=_positive_int, help="use at most N calibration samples")

    s = sub.add_parser("quantize", help="quantize a model (or replay a .wbproj project)")
    s.add_argument("model", help="MODEL.onnx or PROJECT.wbproj")
    recipe_args(s)
    s.add_argument("-o", "--output", required=True, help="output model path")
    s.add_argument("--format", choices=["qdq", "qonnx"],
                   help="output format (default qdq; a replayed project writes what it was saved with)")
    s.add_argument("--save-project", metavar="PROJECT.wbproj", help="also save a project that replays this job")
    _add_input_shape_arg(s)
    s.add_argument("--model", dest="retarget_model", metavar="NEW.onnx",
                   help="with a project: apply its recipe (overrides matched by name, then by structure) "
                        "to a new version of its model, e.g. a retrained one; a file with the recorded "
                        "sha256 (a moved project) is simply used in place of the recorded path")
    s.add_argument("--allow-code", action="store_true",
                   help="allow running a Python data reader (--data READER.py, or one named by a replayed project)")
    s.add_argument("--executor", help="calibrate in row shards there: processes[:N], ray or ray:ADDRESS "
                   "(default: one pass in this process)")
    s.add_argument("--shards", type=_positive_int, help="calibration shards with --executor (default 4)")
    s.add_argument("--no-latency-check", action="store_true",
                   help="do not measure latency: write every unit the recipe quantizes. By default Convs with one input "
                        "channel per group (depthwise), AveragePools and activation MatMuls whose integer kernel measures slower are kept float, the model is timed "
                        "against float (onnxruntime CPU, 1 thread, the first calibration sample; about 2 s, cached "
                        "per model pair) and, when it measures slower, the islands that do not pay are left float (every "
                        "unit, for a model a few microseconds a run slower); "
                        "measurements on a loaded machine can change which units those are")
    _add_remeasure_arg(s)
    _add_auto_arg(s)
    s.add_argument("--search", action=argparse.BooleanOptionalAction, default=False,
                   help="automatic per-tensor observer search on held-out calibration rows (static presets "
                        "with --data; opt-in for now: it costs 3-5x one calibration pass); --no-search (the "
                        "default) quantizes exactly what the recipe says")
    s.set_defaults(func=cmd_quantize)

    s = sub.add_parser("evaluate", help="run float and quantized models on eval data; per-output SQNR")
    s.add_argument("model", help="the float model (MODEL.onnx)")
    s.add_argument("quantized", help="its quantized version (a QDQ .onnx, ours or another tool's; a QONNX file needs `convert --to qdq` first)")
    s.add_argument("--data", required=True, help="eval .npz")
    s.add_argument("--samples", type=_positive_int, help="use at most the first N eval samples")
    s.add_argument("--metric", help="also score a task metric on both models: top1 (the default when the data has "
                   "gt_label, as in report), cosine, output_sqnr, detection_scores, or a .py file defining "
                   "metric(outputs, batch) (needs --allow-code)")
    s.add_argument("--allow-code", action="store_true", help="allow loading a Python metric file")
    s.add_argument("--metric-output", metavar="NAME",
                   help="the model output a built-in metric reads (default: the first output; the metric line "
                        "names the one read), as autotune's")
    s.set_defaults(func=cmd_evaluate)

    s = sub.add_parser("compare", help="float vs quantized file: matched nodes, inserted Q/DQ, folded ops, "
                       "per-tensor SQNR on the data")
    s.add_argument("model", help="the float model")
    s.add_argument("quantized", help="its quantized file (ours or another tool's)")
    s.add_argument("--data", help="samples (.npz, image folder) for the per-tensor SQNR; without it, structure only")
    s.add_argument("--samples", type=_positive_int)
    s.add_argument("--worst", type=_positive_int, default=10, help="how many of the worst tensors to print")
    _add_split_arg(s)
    s.add_argument("--json", help="write the whole diff as JSON")
    s.set_defaults(func=cmd_compare)

    s = sub.add_parser("analyze", help="per-node-unit error of the quantized model, worst first")
    s.add_argument("model", help="MODEL.onnx, or PROJECT.wbproj (its job replayed; --eval / --data measure on other rows)")
    recipe_args(s)
    _add_auto_arg(s)
    s.add_argument("--no-latency-check", action="store_true",
                   help="measure every unit the recipe quantizes; by default the model is timed as `quantize` "
                        "times it, and the units it would keep float (slower quantized) are float here too")
    _add_remeasure_arg(s)
    s.add_argument("--eval", help="held-out data for the error figures (default: --data)")
    s.add_argument("--eval-samples", type=_positive_int, default=32, help="eval samples measured (default 32)")
    _add_split_arg(s)
    s.add_argument("--json", help="write the rows as JSON")
    s.add_argument("--node-data", metavar="OUT.json", help="write Model Explorer node data: OUT.sqnr.json (unit "
                   "SQNR, dB) and OUT.sensitivity.json (SQNR each unit adds itself, dB), node ids as Model "
                   "Explorer's ONNX adapter names them")
    s.add_argument("--top", type=_count_arg, default=20, help="rows to print (default 20, worst first; 0: none)")
    s.add_argument("--allow-code", action="store_true", help="allow running a Python data reader (--data READER.py)")
    s.add_argument("--executor", help="measure the eval data in shards: inline (default), processes[:N], ray or "
                   "ray:ADDRESS")
    s.set_defaults(func=cmd_analyze)

    s = sub.add_parser("sweep", help="sensitivity sweep: output SQNR with only each unit quantized / left float")
    s.add_argument("model", help="MODEL.onnx, or PROJECT.wbproj (its job replayed; --eval / --data sweep other rows)")
    recipe_args(s)
    _add_auto_arg(s)
    s.add_argument("--no-latency-check", action="store_true",
                   help="sweep every unit the recipe quantizes; by default the model is timed as `quantize` "
                        "times it, and the units it would keep float (slower quantized) are float here too")
    _add_remeasure_arg(s)
    s.add_argument("--allow-code", action="store_true", help="allow running a Python data reader (--data READER.py)")
    s.add_argument("--eval", help="data the sweep runs on (default: --data)")
    s.add_argument("--eval-samples", type=_positive_int, default=8, help="eval samples each model runs (default 8)")
    s.add_argument("--top-units", type=_count_arg, default=SWEEP_TOP_UNITS,
                   help=f"measure end to end (two suffix models each) only the N units with the worst own error "
                        f"(default {SWEEP_TOP_UNITS}; the others keep their own-error figure; 0: every unit)")
    s.add_argument("--executor", help="where the tasks run: inline, processes[:N], ray or ray:ADDRESS "
                   "(default: one thread per core in this process)")
    s.add_argument("--json", help="write the ranked table as JSON")
    s.add_argument("--top", type=_count_arg, default=20, help="rows to print (default 20, worst first; 0: none)")
    s.set_defaults(func=cmd_sweep)

    s = sub.add_parser("autotune", help="promote the most sensitive units until a metric target holds")
    s.add_argument("model", help="the float model (MODEL.onnx)")
    recipe_args(s)
    s.add_argument("--eval", required=True, help="eval .npz (with gt_label for top1)")
    s.add_argument("--eval-samples", type=_positive_int, help="eval samples the metric reads (default: all)")
    s.add_argument("--metric", default="top1", help="top1 | cosine | output_sqnr | detection_scores | FILE.py defining metric(outputs, batch)")
    target = s.add_mutually_exclusive_group()
    target.add_argument("--max-drop", type=_non_negative_float, help="allowed metric drop from the float model")
    target.add_argument("--min-score", type=_finite_float, help="absolute target instead (e.g. SQNR dB)")
    s.add_argument("--promote-to", default="int16,float",
                   help="levels a unit may climb, cheapest first: int16 / uint16 activations (a16w8) and/or float "
                        "(excluded); default int16,float")
    s.add_argument("--max-trials", type=_positive_int, default=32,
                   help="at most this many quantize + evaluate runs in the search (default 32)")
    s.add_argument("--int4-weights", action="store_true",
                   help="once the target holds, give int4 weights to unpromoted Conv/MatMul/Gemm units, least "
                        "sensitive first, while it still holds (up to --max-trials more runs)")
    s.add_argument("--rank-samples", type=_positive_int,
                   help="eval rows of the sensitivity ranking (default --eval-samples or 32)")
    s.add_argument("--latency", action="store_true",
                   help="time every measured recipe against the float model (onnxruntime, 1 thread, about 1 s "
                        "each, cached) and put the Pareto front on metric, weight MiB and that latency")
    _add_remeasure_arg(s)
    s.add_argument("--no-latency-check", action="store_true",
                   help="do not time the tuned model against float (by default a pick within target that is not "
                        "faster is replaced by a faster point within target, or reported as not faster)")
    s.add_argument("--auto", action="store_true",
                   help="start from the recipe `quantize` chooses with --data (preset, MSE ranges or compute-only, "
                        "and the units it keeps float); default: the preset or --recipe as it is")
    s.add_argument("--allow-code", action="store_true", help="allow running a metric FILE.py")
    s.add_argument("--rank", default="local", choices=["local", "e2e"],
                   help="order of promotion: local SQNR, or the metric with each of the first 12 promoted alone")
    s.add_argument("--e2e-candidates", type=_positive_int, default=12,
                   help="with --rank e2e: how many of the worst units are re-ranked by the task metric")
    s.add_argument("--executor", help="where the e2e ranking's trials run: inline (default), processes[:N], "
                   "ray or ray:ADDRESS")
    s.add_argument("--recipe-out", metavar="FILE",
                   help="write the tuned recipe JSON here (default: beside the model, OUTPUT with .recipe.json "
                        "in place of .onnx)")
    s.add_argument("--print-recipe", action="store_true", help="also print the tuned recipe JSON on stdout")
    s.add_argument("--metric-output", metavar="NAME",
                   help="the model output a built-in metric reads (default: the first output; a model with "
                        "several outputs, e.g. token_embeddings and sentence_embedding, is scored on one)")
    s.add_argument("--curve-json", metavar="FILE",
                   help="write every measured point (promoted, metric, fraction_int8, weight_bytes, bops, latency, levels, on "
                        "the path / the Pareto front; the eval data and samples) as JSON")
    s.add_argument("-o", "--output", required=True)
    s.set_defaults(func=cmd_autotune)

    s = sub.add_parser("convert", help="convert a QDQ model to QONNX or back; prints what cannot be converted")
    s.add_argument("input", help="the quantized model to convert (QDQ .onnx, or QONNX with --to qdq)")
    s.add_argument("output", help="the file to write (.onnx)")
    s.add_argument("--to", required=True, choices=["qonnx", "qdq"], help="target format")
    s.add_argument("--partial", action="store_true", help="leave unconvertible nodes unchanged")
    _add_input_shape_arg(s)
    s.set_defaults(func=cmd_convert)

    s = sub.add_parser("cost", help="per-node MACs, bit operations and weight memory, float vs quantized")
    s.add_argument("model", help="the float model (MODEL.onnx), or a project quantize saved (PROJECT.wbproj: its "
                                 "model under the recipe it wrote, units kept float by the recipe choice and "
                                 "latency check included; its data gives the shapes), or a quantized file "
                                 "(counted as written, at the kernels onnxruntime runs)")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--preset", help="preset whose bits to count (default cpu-u8s8)")
    g.add_argument("--recipe", help="recipe JSON file")
    s.add_argument("--exclude", action="append", metavar="GLOB", help="count matching nodes as float")
    s.add_argument("--batch", type=_positive_int, default=1, help="value of symbolic dimensions of inputs neither --data "
                                                           "nor --input-shape gives (default 1)")
    s.add_argument("--data", help="count at the input shapes of this data's first sample (e.g. calib.npz); "
                                  "--batch then applies to inputs the data does not feed")
    s.add_argument("--input-shape", action="append", type=_input_shape_type, metavar="NAME:DIMS",
                   help="count at this shape of input NAME, e.g. images:1x3x384x640 (repeatable; wins over "
                        "--data and --batch for that input; fixed dimensions of the model must agree)")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=cmd_cost)

    s = sub.add_parser("report", help="one self-contained HTML report: recipe, issues, SQNR, histograms, "
                       "sensitivity, autotune curve, task metric, graph")
    s.add_argument("model", help="MODEL.onnx or PROJECT.wbproj")
    recipe_args(s)
    _add_auto_arg(s)
    s.add_argument("--no-latency-check", action="store_true",
                   help="report on every unit the recipe quantizes; by default the model is timed as `quantize` "
                        "times it, and the units it would keep float (slower quantized) are float here too")
    _add_remeasure_arg(s)
    s.add_argument("--eval", help="held-out data for every figure (default: --data, or the project's data)")
    s.add_argument("--eval-samples", type=_positive_int, default=32, help="samples of the analysis and the metric")
    _add_split_arg(s)
    s.add_argument("--metric", help="task metric: top1 (default with gt_label), cosine (default otherwise), "
                   "output_sqnr, detection_scores, or a .py file defining metric(outputs, batch) (--allow-code)")
    s.add_argument("--curve-json", dest="curve_in", metavar="FILE",
                   help="an autotune curve (autotune --curve-json FILE) to draw")
    s.add_argument("--sweep-json", dest="sweep_in", metavar="FILE",
                   help="an end-to-end sensitivity sweep of the same recipe (sweep --json FILE) to tabulate")
    s.add_argument("--worst", type=_positive_int, default=4, help="units whose histograms are drawn")
    s.add_argument("--allow-code", action="store_true", help="allow a Python data reader or metric file")
    s.add_argument("-o", "--output", required=True, help="the HTML file to write")
    s.set_defaults(func=cmd_report)
    s = sub.add_parser("render", help="draw the graph as the app shows it (offscreen Qt) into a PNG or SVG")
    s.add_argument("model", help="MODEL.onnx (with --compare: the float model)")
    s.add_argument("-o", "--output", required=True, help="OUT.png or OUT.svg")
    s.add_argument("--colour", "--color", choices=["op", "dtype", "sqnr"], default="op",
                   help="op type (default), dtype the recipe assigns, or per-unit SQNR measured on --data (of the "
                        "model quantize writes, as analyze measures it)")
    recipe_args(s)
    s.add_argument("--eval", help="data for the SQNR (default: --data)")
    _add_auto_arg(s)
    s.add_argument("--no-latency-check", action="store_true",
                   help="--colour sqnr: measure every unit the recipe quantizes (default: the model quantize "
                        "writes, with the units its latency check keeps float)")
    _add_remeasure_arg(s)
    s.add_argument("--expand", type=_count_arg, metavar="DEPTH",
                   help="open groups down to DEPTH (0: all collapsed; default: the app's automatic depth)")
    s.add_argument("--max-side", type=_picture_side, default=2400,
                   help=f"longest picture side in pixels ({RENDER_SIDES[0]} to {RENDER_SIDES[1]})")
    s.add_argument("--compare", metavar="QUANTIZED",
                   help="draw MODEL and this quantized file of it side by side (two aligned panes, as the app's "
                        "compare tab), the quantized one coloured by the SQNR of each tensor against MODEL on --data")
    s.set_defaults(func=cmd_render)

    s = sub.add_parser("presets", help="list presets")
    s.set_defaults(func=cmd_presets)
    return p


def _positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (a sample count)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: give 1 or more")
    return value


#: ``render --max-side`` range, pixels: below it the 40-pixel margins leave (almost) nothing to draw the graph
#: in (``--max-side 1`` drew a 60x1 picture); above it a picture no viewer opens (Qt's raster images stop at 32767)
RENDER_SIDES = (200, 16384)


def _picture_side(text: str) -> int:
    """argparse type: a picture side in pixels, within :data:`RENDER_SIDES`."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    lo, hi = RENDER_SIDES
    if not lo <= value <= hi:
        raise argparse.ArgumentTypeError(f"{value}: give {lo} to {hi} (pixels of the picture's longest side)")
    return value


def _count_arg(text: str) -> int:
    """argparse type: an integer >= 0 (rows to print)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value}: give 0 or more")
    return value


def _non_negative_float(text: str) -> float:
    """argparse type: a number >= 0 (a metric drop)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value >= 0:  # NaN too
        raise argparse.ArgumentTypeError(f"{text}: give 0 or more (the drop from the float model's metric)")
    return value


def _finite_float(text: str) -> float:
    """argparse type: a finite number (a metric target; NaN or inf would never be met, or always)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text}: give a finite number (the metric value to reach)")
    return value


#: Arguments that name files the command writes.
_OUTPUT_ARGS = ("output", "save_project", "json", "curve_json", "recipe_out", "node_data")


#: Commands whose ``output`` is an ONNX model (QDQ or QONNX: both are .onnx files).
_ONNX_OUTPUT_COMMANDS = ("quantize", "autotune", "convert")


def _warn_suffixes(args) -> None:
    """One warning line on stderr (not an error: the file is written as named) per output whose name
    does not say what it holds: an ONNX model not ending in .onnx, a project not ending in .wbproj."""
    wanted = [("output", ".onnx", "an ONNX model")] if args.command in _ONNX_OUTPUT_COMMANDS else []
    wanted.append(("save_project", ".wbproj", "a Workbench project"))
    for name, suffix, what in wanted:
        value = getattr(args, name, None)
        if isinstance(value, str) and value and not value.lower().endswith(suffix):
            print(f"warning: {value} will hold {what} but its name does not end in {suffix} (it is written as "
                  f"named; other tools may not open it)", file=sys.stderr)


#: ``dest`` of every argument that names a file or folder -> how the command line spells it (positionals
#: in capitals; ``output`` is positional for ``convert`` only)
_PATH_ARGS = {"model": "MODEL", "quantized": "QUANTIZED", "input": "INPUT", "output": "--output", "data": "--data",
              "eval": "--eval", "recipe": "--recipe", "retarget_model": "--model",
              "compare": "--compare", "curve_in": "--curve-json", "sweep_in": "--sweep-json",
              "save_project": "--save-project", "json": "--json", "curve_json": "--curve-json",
              "recipe_out": "--recipe-out", "node_data": "--node-data"}


def _refuse_empty_paths(args) -> None:
    """Refuse a path given as an empty string (``--data "$CALIB"`` with the variable unset): it would be read
    as the current folder (every .npz in it calibrating) or written as one.

    Raises
    ------
    WorkbenchError
        Naming the argument.
    """
    for dest, flag in _PATH_ARGS.items():
        if getattr(args, dest, None) == "":
            flag = "OUTPUT" if dest == "output" and args.command == "convert" else flag
            raise WorkbenchError(f"{flag} is an empty path (an unset shell variable?).",
                                 hint=f"Give {flag} the path of a file.")


def _output_stamps(args) -> dict[str, tuple[int, int] | None]:
    """Each output path of the command (``-o``, ``--json``, ``--save-project``, ... and ``--node-data``'s
    files) -> its (mtime in ns, size in bytes), None where there is no file: taken before the command runs and
    again after an interrupt, so the CLI says "nothing was written" only when every output is as it was."""
    paths = [v for v in (getattr(args, n, None) for n in _OUTPUT_ARGS) if isinstance(v, str) and v]
    if getattr(args, "node_data", None):
        paths += [str(p) for p in api.node_data_paths(args.node_data).values()]
    stamps = {}
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            stamps[path] = None
        else:
            stamps[path] = (st.st_mtime_ns, st.st_size)
    return stamps


def _preflight_outputs(args) -> None:
    """Refuse, before any work, output paths that are an input file or in a folder that is missing
    or not writable (so a long calibration never ends in a write error or a half-done job)."""
    for name in ("model", "input", "float_model", "quantized", "compare", "data", "eval", "recipe", "metric", "retarget_model",
                 "curve_in", "sweep_in"):
        value = getattr(args, name, None)
        if isinstance(value, str) and os.path.exists(value):
            api.protect_input(value)
            if name == "model" and value.endswith(".wbproj"):
                # a replay reads the project, its model and its data: none of them may be an output
                for path in api.load_project(value, check_model=False).input_paths(value):
                    api.protect_input(path)
    seen: dict[str, str] = {}
    for name in _OUTPUT_ARGS:
        value = getattr(args, name, None)
        if not isinstance(value, str) or not value:
            continue
        api.check_not_input(value)
        real = os.path.realpath(value)
        if real in seen:
            raise ExportError(f"{value}: given both as --{seen[real].replace('_', '-')} and as "
                              f"--{name.replace('_', '-')}; the second file would replace the first.",
                              hint="Give each output its own path.")
        seen[real] = name
        if os.path.isdir(value):
            flag = "OUTPUT" if name == "output" and args.command == "convert" else f"--{name.replace('_', '-')}"
            raise ExportError(f"{value}: is a folder; {flag} names the file to write.",
                              hint=f"Give a file name inside it, e.g. {os.path.join(value, _example_name(args, name))}.")
        _refuse_special_file(value, name)
        folder = os.path.dirname(os.path.abspath(value))
        if os.path.exists(folder) and not os.path.isdir(folder):
            raise ExportError(f"{value}: {folder} is a file, not a folder.", hint="Choose another output path.")
        if not os.path.isdir(folder):
            raise ExportError(f"{value}: the folder {folder} does not exist.", hint="Create it or choose another path.")
        if not os.access(folder, os.W_OK):
            raise ExportError(f"{value}: the folder {folder} is not writable.", hint="Choose a folder you can write to.")
        _probe_folder(value, folder)
    if getattr(args, "node_data", None):
        for path in api.node_data_paths(args.node_data).values():
            api.check_not_input(path)
            _refuse_special_file(path, "node_data")
            if os.path.realpath(path) in seen:
                raise ExportError(f"{path}: written by --node-data and given as --{seen[os.path.realpath(path)]}.",
                                  hint="Give each output its own path.")


#: an example file name for each output argument, for the error of a folder given in its place
_EXAMPLE_NAMES = {"json": "out.json", "curve_json": "curve.json", "node_data": "nodes.json",
                  "recipe_out": "tuned.recipe.json", "save_project": "job.wbproj"}
#: ``--output`` of the commands that do not write an ONNX model -> an example name
_EXAMPLE_OUTPUTS = {"report": "report.html", "render": "graph.png"}


def _example_name(args, name: str) -> str:
    """A file name of the kind output ``name`` of this command writes (``out.json`` for ``--json``)."""
    if name == "output":
        return _EXAMPLE_OUTPUTS.get(args.command, "out.onnx")
    return _EXAMPLE_NAMES.get(name, "out")


def _probe_folder(value: str, folder: str) -> None:
    """Create and remove an empty file in ``folder``, as the output's temporary file will be: a folder that
    passes the permission test but takes no new file (root in /proc, a read-only mount) is refused before
    the calibration, not after it. Nothing is left behind.

    Raises
    ------
    ExportError
        Naming the path and the system's reason.
    """
    try:
        fd, probe = tempfile.mkstemp(prefix=".workbench-probe-", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise ExportError(f"{value}: cannot create a file in {folder} ({exc.strerror or exc}).",
                          hint="Choose a folder you can write to.") from None
    os.close(fd)
    os.unlink(probe)


def _refuse_special_file(value: str, name: str) -> None:
    """Refuse an output path that exists and is not a regular file (a device such as /dev/null, a FIFO, a
    socket): outputs are written to a temporary file renamed over the path, which would replace the
    device node itself with a regular file."""
    kind = api.special_file_kind(value)  # None: missing (it will be created) or a regular file
    if kind is not None:
        raise ExportError(f"{value}: is {kind}, not a regular file; writing --{name.replace('_', '-')} there "
                          "would replace it with a file.",
                          hint="Give the path of a regular file (to discard the output, write it to a temporary folder).")


def _quiet_blas() -> None:
    """One OpenBLAS thread for numpy, unless the user set it or numpy is already loaded: the CLI's
    numpy work is reductions and element-wise maths (onnxruntime runs the models on its own
    threads), and OpenBLAS's idle threads spin at start-up, 0.13 s of CPU per run (minilm_l6_v2's
    64-row quantize: 2.46 -> 2.32 s, x86_64 AVX512-VNNI, 2 cores)."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


class _CliLogFormat(logging.Formatter):
    """Log records as the CLI's own lines: 'warning: ...', 'info: ...'."""

    def format(self, record: logging.LogRecord) -> str:
        return f"{record.levelname.lower()}: {record.getMessage()}"


class _Once(logging.Filter):
    """Each text once per command (the recipe choice's calibration pass and the quantize after it
    warn about the same NaN rows)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[tuple[int, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.levelno, record.getMessage())
        if key in self.seen:
            return False
        self.seen.add(key)
        return True


def _log_handler(level: int) -> logging.Handler:
    """A handler on the root logger writing to this command's stderr; remove it when the command ends."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_CliLogFormat())
    handler.addFilter(_Once())
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)
    return handler


def _silence_closed_pipes() -> None:
    """Point stdout (and stderr, when it is the closed pipe too) at the null device, so that the flush at
    interpreter exit does not fail again on the pipe whose reader is gone."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            try:
                os.dup2(devnull, stream.fileno())
            except (OSError, ValueError):  # not a file descriptor (a captured stream)
                pass
        except (OSError, ValueError):
            pass
    os.close(devnull)


def _in_recipe_file(args, exc: WorkbenchError) -> str:
    """"RECIPE.json: " before an error about a field of the --recipe file's recipe (``RecipeError.field`` set: its
    message does not name the file; the plan's 'recipe op_types ["Cnv"] selects no node of the model'), else ""."""
    recipe = getattr(args, "recipe", None)
    if not (isinstance(exc, RecipeError) and exc.field and isinstance(recipe, str)):
        return ""
    if exc.field == "exclude" and exc.entry in (getattr(args, "exclude", None) or []):
        return ""  # the name came from --exclude, not from the file
    return f"{recipe}: "


def _user_code(args) -> str:
    """The Python files of the command (a --data / --eval reader, a --metric file), for an error about them."""
    files = [v for v in (getattr(args, n, None) for n in ("data", "eval", "metric"))
             if isinstance(v, str) and v.lower().endswith(".py")]
    return ", ".join(dict.fromkeys(files)) or "Python code loaded with --allow-code"


def main(argv: list[str] | None = None) -> int:
    _quiet_blas()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2  # a command is needed: scripts see the failure
    handler = _log_handler(logging.INFO if args.verbose else logging.WARNING)
    marks: dict[str, tuple[int, int] | None] = {}  # the outputs before the command ran (none yet: none written)
    try:
        _refuse_empty_paths(args)
        for name in ("data", "eval"):  # a model given as data: said before any model is loaded
            if isinstance(getattr(args, name, None), str):
                api.refuse_model_as_data(getattr(args, name))
        _recipe_out_default(args)
        _preflight_outputs(args)
        _warn_suffixes(args)
        if getattr(args, "executor", None):
            api.check_executor_spec(args.executor)  # before the calibration, not after it
        marks = _output_stamps(args)
        if getattr(args, "remeasure_latency", False):
            with api.remeasuring_latency():
                return args.func(args)
        return args.func(args)
    except WorkbenchError as exc:
        print(f"error: {_in_recipe_file(args, exc)}{' '.join(str(exc).split())}", file=sys.stderr)  # one line
        return 2
    except KeyboardInterrupt:
        unchanged = _output_stamps(args) == marks if marks else True
        print("error: interrupted; nothing was written." if unchanged else "error: interrupted.", file=sys.stderr)
        return 130
    except BrokenPipeError:  # stdout piped into a reader that stopped (`inspect MODEL | head`): end quietly
        _silence_closed_pipes()
        return 141  # 128 + SIGPIPE, as a shell tool killed by the signal
    except OSError as exc:  # a path the system refuses (a name too long, a loop of links): one line, not a traceback
        print(f"error: {exc.filename or 'a file'}: {exc.strerror or exc}. Check the path.", file=sys.stderr)
        return 2
    except SystemExit as exc:  # argparse exits before the try: this is the user's code (--allow-code) exiting
        print(f"error: {_user_code(args)} called sys.exit({exc.code!r}) while Workbench ran it. Return or raise "
              "there instead of exiting (an argparse call at import time exits too).", file=sys.stderr)
        return 2
    finally:
        logging.getLogger().removeHandler(handler)


if __name__ == "__main__":
    sys.exit(main())
