"""Whether a sweep file (``workbench-cli sweep --json``) was measured for the report's job.

The match compares the job's inputs and options, as the sweep recorded them in its ``job`` field
(:func:`sweep_job_stamp`): the model file's sha256, the calibration data's, the calibration sample count and the
recipe the job quantized with (the options and the recipe choice), before the latency placement and the
latency fallback kept float the units that measured slower quantized. Those two decisions are timed, so
the sweep's run and the report's can differ on a loaded machine with identical options: the report then
takes the sweep as measured and says in one line which units differ (:func:`sweep_placement_note`). A sweep
file without a ``job`` field (written before it was recorded) is compared by the recipe it measured.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from workbench.core.analysis.sensitivity import SweepResult
from workbench.core.errors import DataError
from workbench.core.model.external_identity import external_identity
from workbench.core.model.load import sha256_file
from workbench.core.recipe.recipe import Recipe
from workbench.core.wording import count

_HINT = "Run `workbench-cli sweep --json FILE` with the report's model, data and recipe options."


def data_identity(data: Any, sha256: str | None = None) -> str:
    """What names the calibration data ``data`` (a path as the CLI takes it, or a project's data spec, a dict
    with ``path``) in a sweep's job: a file's sha256 (64 hex digits; the same bytes match under any path;
    ``sha256`` when the caller hashed the file already), a folder's absolute path, or ``str(data)`` ("" for None)."""
    if isinstance(data, dict) and isinstance(data.get("path"), str):
        data = data["path"]
    if isinstance(data, (str, os.PathLike)):
        path = Path(data)
        if path.is_file():
            return sha256 or sha256_file(path)
        if path.is_dir():
            return str(path.resolve())
    return "" if data is None else str(data)


def sweep_job_stamp(model, recipe: Recipe, data: Any, samples: int | None, data_sha256: str | None = None) -> dict:
    """The ``job`` a sweep records: ``model`` (the PreparedModel's file sha256, "" without a file; with
    ``external_data``, :func:`external_identity`, when its weights are in external data files), ``data``
    (:func:`data_identity`; ``data_sha256``: the data file's sha256 when the caller has it, so the file is not
    read again), ``samples`` (calibration samples; None: all) and ``recipe`` (the JSON of the recipe given to
    quantize, before the latency placement's and the latency fallback's measured decisions)."""
    stamp = {"model": getattr(model, "sha256", "") or "", "data": data_identity(data, data_sha256),
             "samples": samples, "recipe": recipe.to_json()}
    weights = external_identity(model)
    if weights:  # only then: the stamps of models without external data stay as they were
        stamp["external_data"] = weights
    return stamp


def job_field_error(job: Any) -> str | None:
    """What is wrong with a sweep file's ``job`` field as read from JSON (``"field job...: ..."``, one phrase), or
    None when it is a stamp :func:`sweep_job_stamp` could have written: an object whose ``model`` and ``data`` are
    strings and whose ``samples`` is a whole number of at least 1 or null (``recipe`` is read as a recipe by
    :func:`workbench.core.report.collect.load_sweep`). A hand-edited file otherwise compared as if it differed
    ("8 there, 8 here" for ``"8"``) or, with a ``job`` that is not an object, was matched by its measured recipe."""
    if not isinstance(job, dict):
        return f"field job: not an object ({type(job).__name__ if job is not None else 'null'})"
    for key in ("model", "data"):
        if not isinstance(job.get(key), str):
            return f"field job.{key}: not a string ({'missing' if key not in job else repr(job[key])})"
    samples = job.get("samples", "missing")
    if samples is not None and (isinstance(samples, bool) or not isinstance(samples, int) or samples < 1):
        return f"field job.samples: not a sample count, a whole number of at least 1 or null for all ({samples!r})"
    return None


def _recipe_difference(sweep_json: str, report_json: str) -> tuple[str, str, list[str]]:
    """``(the sweep's preset, the report's preset, the recipe fields that differ, in field order)``, the
    defaults filled in (``sweep --json`` writes the recipe without them: a recipe of the default preset
    has no ``preset`` key; :func:`workbench.core.report.collect.load_sweep` refused a recipe it cannot read)."""
    theirs = Recipe.from_json(sweep_json, source="the sweep's recipe").model_dump(mode="json")
    ours = Recipe.from_json(report_json).model_dump(mode="json")
    fields = [k for k in dict.fromkeys([*theirs, *ours]) if theirs.get(k) != ours.get(k)]
    return str(theirs["preset"]), str(ours["preset"]), fields


def _refuse_recipe(source: str, sweep_json: str, report_json: str) -> None:
    theirs, ours, fields = _recipe_difference(sweep_json, report_json)
    raise DataError(f"{source}: the sweep measured another recipe (preset {theirs}) than this report's (preset "
                    f"{ours}, as the recipe choice and the options make it); they differ in "
                    f"{', '.join(fields) or 'their JSON'}.", hint=_HINT)


def _input_difference(theirs: dict, ours: dict) -> str | None:
    """The first of model, data, samples the two job stamps differ in, as a phrase; None when none does."""
    if theirs.get("model") != ours["model"]:
        return "the model files differ (another sha256)"
    if theirs.get("external_data", []) != ours.get("external_data", []):
        return "the model's external data files (its weights) differ (another sha256)"
    if theirs.get("data") != ours["data"]:
        return "the calibration data differ (another file or folder)"
    if theirs.get("samples") != ours["samples"]:
        said = {k: "all" if v is None else v for k, v in (("there", theirs.get("samples")), ("here", ours["samples"]))}
        return f"its calibration samples differ ({said['there']} there, {said['here']} here)"
    return None


def check_sweep_job(sweep: SweepResult, source: str, result_recipe: Recipe | None, job: dict | None) -> None:
    """Refuse ``sweep`` when it was measured for another job than the report's: with both job stamps
    (``sweep.job`` and ``job``, :func:`sweep_job_stamp`) another model, data, sample count or recipe given; else
    (an older sweep file, or a caller without a stamp) another recipe measured than ``result_recipe``.

    Raises
    ------
    DataError
        One line naming ``source`` and what differs (the presets and the recipe fields for a recipe).
    """
    if sweep.job is not None and job is not None:
        differs = _input_difference(sweep.job, job)
        if differs is not None:
            raise DataError(f"{source}: the sweep was measured on another job than this report's: {differs}.",
                            hint=_HINT)
        if sweep.job.get("recipe") != job["recipe"]:
            _refuse_recipe(source, str(sweep.job.get("recipe")), job["recipe"])
        return
    if sweep.recipe is not None and result_recipe is not None and sweep.recipe != result_recipe.to_json():
        _refuse_recipe(source, sweep.recipe, result_recipe.to_json())


def _kept_float(recipe: Recipe) -> set[str]:
    return {name for name, s in recipe.overrides.items() if s.exclude}


def sweep_placement_note(sweep: SweepResult | None, result_recipe: Recipe | None) -> str:
    """One line on the units the sweep's run kept float and the report's quantizes (and the reverse), when
    both recorded the recipe they measured and those differ (the latency placement's or fallback's timed
    decisions, once :func:`check_sweep_job` matched the job); "" when they agree or one is unknown."""
    if sweep is None or sweep.recipe is None or result_recipe is None or sweep.recipe == result_recipe.to_json():
        return ""
    theirs, ours = _kept_float(Recipe.from_json(sweep.recipe)), _kept_float(result_recipe)
    parts = []
    for units, where in ((theirs - ours, "in the sweep that this report quantizes"),
                         (ours - theirs, "in this report that the sweep quantized")):
        if units:
            parts.append(f"{count(len(units), 'unit')} float {where} ({', '.join(sorted(units))})")
    if not parts:
        return "the latency check decided otherwise in the sweep: the sweep table is of the sweep's recipe"
    return (f"the latency check kept {' and '.join(parts)}: the sweep table is of the sweep's placement, the rest "
            "of the report of its own")
