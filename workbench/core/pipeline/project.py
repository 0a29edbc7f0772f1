"""Project files (``.wbproj``): JSON that replays a whole quantization job.

Schema (``schema_version`` 1)::

    {"schema_version": 1, "tool_version": "0.1.0",
     "model": {"path": "model.onnx" (relative to the project file), "sha256": "...",
               "external_data": [["model.onnx.data", "<sha256>"], ...] | absent (weights in external data)},
     "absolute_paths": {"model.path": "/abs/model.onnx", "data.path": ..., "evaluation.data": ...} | absent,
     "recipe": {...Recipe...}, "data": {...data source spec...} | null, "samples": 128 | null,
     "calibration": {...CalibrationResult.to_json()...} | null, "results": {...} | null,
     "allow_code": false, "export": {"format": "qonnx", "input_shapes": {...}} | null,
     "analysis_samples": 32 | null, "choose_recipe": true,
     "evaluation": {"data": "eval.npz", "metric": "top1" | "metric.py" | null, "samples": 100 | null} | null,
     "latency_kept": [{"node": "Conv_0", "ratio": 1.4 | null, "reason": "..."}, ...] | absent}

``results`` is what the app last showed: per-unit errors, qparams, issues and the recipe they were
computed with, under ``"sensitivity"`` the last sweep (``SweepResult.to_json()``, suggestion,
recipe), under ``"autotune"`` the last finished autotune run (the job's result with its curve, the
metric, target and eval settings) and under ``"evaluation"`` the last Evaluate run (``EvalReport.to_json()``,
metric, eval data, recipe). Headless replays ignore it, ``analysis_samples`` (the app's per-unit analysis sample
count; null: the app's default), ``choose_recipe`` (the app's "Choose the recipe first": its calibration of a
bare preset runs the recipe choice first, as ``quantize`` does by default; the replay uses the recipe as
written) and ``evaluation`` (the app's Evaluate settings, its files relative to
the project like the model and data; null: the app's defaults). Projects without the optional fields
open as before.

``absolute_paths`` holds, for each file field (``model.path``, ``data.path``, ``evaluation.data``,
``evaluation.metric``), the file's absolute path when the project was saved. On load a field is resolved
relative to the project first; when nothing is there, its absolute path is used (a project copied to another
folder), and :attr:`Project.path_notes` says so. An entry whose path does not end with the field's own path
(the field was edited by hand) is ignored. The model's sha256 is checked whichever path is used. Projects
without the field (older ones) resolve relative to the project only.

``latency_kept`` names the units the latency check kept float (:class:`LatencyKept`: the recipe excludes each,
as the measurement decided on the machine that saved it), so those exclusions stay the latency check's, not the
user's: the app shows them so after reopening, and a replay keeps them float (the recipe says so) and reports
them. Absent when it kept none, or in projects saved before it was recorded (those open as before).

Never pickle; code (Python readers / metrics) runs only if ``allow_code`` is true in the file.
Older schemas are migrated by :data:`MIGRATIONS`; newer ones are refused.
"""

from __future__ import annotations

import json
import os
import types
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    StrictInt,
    ValidationError,
    field_validator,
)
from typing_extensions import TypedDict, is_typeddict

from workbench import __version__
from workbench.core.analysis.metrics import METRICS
from workbench.core.data.loader import KINDS, OPTIONS
from workbench.core.errors import ExportError, ProjectError, RecipeError
from workbench.core.io.atomic import StagedWrite, atomic_write_bytes, same_file
from workbench.core.io.jsonsafe import UntrustedJSONError, loads_untrusted
from workbench.core.model.external_identity import external_file_names, files_identity
from workbench.core.model.load import sha256_file
from workbench.core.recipe.recipe import Recipe
from workbench.core.wording import did_you_mean

SCHEMA_VERSION = 1
PROJECT_SUFFIX = ".wbproj"

#: schema_version -> function upgrading a dict of that version to the next one.
MIGRATIONS: dict[int, Any] = {}


class ModelRef(BaseModel):
    """A project's ``model`` section: the model file, its sha256 and its external data files; no other key (a
    misspelt one would be ignored by the replay)."""

    model_config = ConfigDict(extra="forbid")

    path: str
    sha256: str
    #: [[file name relative to the model, sha256], ...] of the external data files its weights were read from,
    #: checked on load like ``sha256`` (absent: none recorded; the model file's digest covers none of their bytes)
    external_data: list[tuple[str, str]] | None = None


class ExportSection(TypedDict, total=False):
    """A project's ``export`` section, checked on load (kept a plain dict): ``format`` "qdq" / "qonnx" (None:
    QDQ) and ``input_shapes`` {input name: [dims, each a whole number >= 1]} (QONNX static shapes); no other
    key (a misspelt one would be ignored by the replay)."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    format: Literal["qdq", "qonnx"] | None
    input_shapes: dict[str, Annotated[list[Annotated[StrictInt, Field(ge=1)]], Field(min_length=1)]] | None


class LatencyKept(BaseModel):
    """One unit the latency check kept float (its placement probe or its fallback's island), as a project's
    ``latency_kept`` records it; the recipe holds the exclusion itself (an override with exclude true)."""

    model_config = ConfigDict(extra="forbid")

    #: the unit's node name
    node: str
    #: quantized / float latency the check measured before keeping it float (1.4: 1.4 ms quantized for 1.0 ms
    #: float, a ratio); None when its note gives none
    ratio: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    #: the latency check's note on it (the probe's, or its island's warning), as the job reported it
    reason: str = ""


class Project(BaseModel):
    """In-memory project. ``model.path`` is relative to the project file once saved. An unknown top-level key is
    refused on load, naming it (``analysis_sample`` was ignored: the app's setting silently fell back)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    tool_version: str = __version__
    model: ModelRef
    recipe: Recipe = Field(default_factory=Recipe)
    data: dict[str, Any] | None = None
    samples: int | None = Field(default=None, ge=1)
    calibration: dict[str, Any] | None = None
    results: dict[str, Any] | None = None
    allow_code: bool = False
    #: how the replay writes the model when the command line does not say: ``format`` ("qdq" or
    #: "qonnx") and ``input_shapes`` (input name -> dims, QONNX); None = QDQ, shapes as in the model
    export: ExportSection | None = None
    #: samples of the app's per-unit analysis after calibration (its Calibration panel); None = the app's
    #: default. The CLI does not read it (``analyze --eval-samples`` says how many rows it measures)
    analysis_samples: int | None = Field(default=None, ge=1)
    #: the app's "Choose the recipe first" (its Calibration panel): a calibration of a bare static preset runs
    #: the recipe choice first, as ``workbench-cli quantize`` does by default (false: the preset as it is,
    #: ``--no-auto``). The CLI does not read it: the replay quantizes the recipe as written
    choose_recipe: StrictBool = True
    #: the app's Evaluate settings: ``data`` (eval .npz), ``metric`` (a built-in name, a metric .py file or
    #: None) and ``samples`` (None: all); None = the app's defaults (eval data found beside the model). A
    #: metric file runs only when the user ticks Allow code again. The CLI does not read it
    evaluation: dict[str, Any] | None = None
    #: file field ("model.path", "data.path", "evaluation.data", "evaluation.metric") -> the file's absolute
    #: path when saved: where a load looks when the path relative to the project finds nothing (a copied
    #: project). Recomputed on each save; None in projects saved before it existed
    absolute_paths: dict[str, str] | None = None
    #: the units the latency check kept float (:class:`LatencyKept`, sorted by node): which of the recipe's
    #: exclusions are its measurement, not the user's. None (absent from the file) when it kept none or the project
    #: was saved before it was recorded
    latency_kept: list[LatencyKept] | None = None

    @field_validator("latency_kept")
    @classmethod
    def _one_entry_per_unit(cls, entries: list[LatencyKept] | None) -> list[LatencyKept] | None:
        """A unit named twice (a hand edit) would be reported twice by a replay: refused, naming it."""
        seen: set[str] = set()
        for entry in entries or []:
            if entry.node in seen:
                raise ValueError(f"node {entry.node!r} is named twice; keep one entry per unit")
            seen.add(entry.node)
        return entries
    #: what the load resolved differently from the file (an absolute path used, a model located elsewhere)
    _notes: list[str] = PrivateAttr(default_factory=list)
    #: file field -> (the path written in the file, the absolute path the load put in its place)
    _saved: dict[str, tuple[str, str]] = PrivateAttr(default_factory=dict)

    @property
    def path_notes(self) -> list[str]:
        """One sentence per file field the load did not find beside the project: which path it used instead."""
        return list(self._notes)

    def model_path(self, project_path: str | Path) -> Path:
        """Absolute, normalised path of the model (``..`` folded), resolved against the project file's folder."""
        p = Path(self.model.path)
        return Path(os.path.normpath(p if p.is_absolute() else (Path(project_path).resolve().parent / p)))

    def data_spec(self, project_path: str | Path, *, allow_code: bool = False) -> dict[str, Any] | None:
        """The data spec with a relative ``path`` resolved against the project folder and normalised.

        A Python reader may run when the project says ``"allow_code": true`` at its top level or
        the caller passes ``allow_code=True`` (the CLI's ``--allow-code``); a data spec's own
        ``allow_code`` is never enough (a project file from elsewhere must not run code by itself).
        """
        if self.data is None:
            return None
        spec = dict(self.data)
        if "path" in spec and not isinstance(spec["path"], str):
            raise ProjectError(f"{project_path}: the data path must be a string, not {spec['path']!r}.",
                               hint="Fix data.path or choose the calibration data again and re-save.")
        if "path" in spec and not Path(spec["path"]).is_absolute():
            spec["path"] = os.path.normpath(Path(project_path).resolve().parent / spec["path"])  # no "out/../.."
        if data_runs_code(spec):
            # code runs only when the project itself or the user allows it, whatever the data spec says
            spec["allow_code"] = bool(self.allow_code or allow_code)
        return spec

    def evaluation_spec(self, project_path: str | Path) -> dict[str, Any] | None:
        """``evaluation`` with its eval data and metric file paths absolute (resolved against the project's
        folder), normalised.

        Raises
        ------
        ProjectError
            A field of the wrong type.
        """
        if self.evaluation is None:
            return None
        spec = dict(self.evaluation)
        for key in ("data", "metric"):
            value = spec.get(key)
            if value is not None and not isinstance(value, str):
                raise ProjectError(f"{project_path}: the project field evaluation.{key} must be a string, not {value!r}.",
                                   hint="Fix it or choose it again in the app's Evaluate panel and re-save.")
        samples = spec.get("samples")
        if samples is not None and (not isinstance(samples, int) or isinstance(samples, bool) or samples < 1):
            raise ProjectError(f"{project_path}: the project field evaluation.samples must be a positive integer "
                               f"or null, not {samples!r}.", hint="Fix it or set it again in the app and re-save.")
        for key in _evaluation_files(spec):
            if not Path(spec[key]).is_absolute():
                spec[key] = os.path.normpath(Path(project_path).resolve().parent / spec[key])
        return spec

    def input_paths(self, project_path: str | Path) -> list[Path]:
        """Files (and folders) a replay of this project reads: the project, its model, its data."""
        paths = [Path(project_path), self.model_path(project_path)]
        if isinstance(self.data, dict) and isinstance(self.data.get("path"), str) and self.data["path"]:
            data_path = self.data["path"]
            paths.append(Path(os.path.normpath(Path(data_path) if Path(data_path).is_absolute()
                                               else Path(project_path).resolve().parent / data_path)))
        return paths


def data_runs_code(spec: dict) -> bool:
    """Whether the data spec ``spec`` names code to run (a Python reader): only then does a project's
    ``allow_code`` matter for it."""
    return (spec.get("kind") == "python" or "allow_code" in spec
            or str(spec.get("path", "")).lower().endswith(".py"))


#: the file fields of a project, each "section.key", in the order a load resolves them
FILE_FIELDS = ("model.path", "data.path", "evaluation.data", "evaluation.metric")


def _file_value(sections: dict, key: str) -> str | None:
    """The path the file field ``key`` holds in ``sections`` (a project's JSON, or :func:`_sections`); None
    when it names no file (no such section, not a string, a built-in metric's name)."""
    section, name = key.split(".")
    part = sections.get(section)
    value = part.get(name) if isinstance(part, dict) else None
    if not isinstance(value, str) or not value:
        return None
    return None if key == "evaluation.metric" and not value.lower().endswith(".py") else value


def _sections(project: Project) -> dict:
    return {"model": {"path": project.model.path}, "data": project.data, "evaluation": project.evaluation}


def _set_file(project: Project, key: str, value: str) -> None:
    if key == "model.path":
        project.model.path = value
    else:
        section, name = key.split(".")
        getattr(project, section)[name] = value


def _saved_absolute(project: Project, key: str, saved: str) -> Path | None:
    """The absolute path ``project`` recorded for the file field ``key`` whose path in the file is ``saved``;
    None when there is none, or it does not end with ``saved``'s own folder and file names (``saved`` was
    edited by hand since: the entry is about another file)."""
    value = (project.absolute_paths or {}).get(key)
    if not isinstance(value, str) or not Path(value).is_absolute() or Path(saved).is_absolute():
        return None
    absolute = Path(os.path.normpath(value))
    tail = [part for part in Path(os.path.normpath(saved)).parts if part not in ("..", ".")]
    return absolute if not tail or list(absolute.parts[-len(tail):]) == tail else None


def file_candidates(project: Project, project_path: str | Path, key: str) -> list[Path]:
    """Where the file of the field ``key`` (one of :data:`FILE_FIELDS`) of ``project`` (saved at
    ``project_path``) may be, in the order they are tried: its path resolved against the project's folder,
    then the absolute path saved in the project (when recorded and different). Absolute, normalised paths;
    [] when the field names no file."""
    value = _file_value(_sections(project), key)
    if value is None:
        return []
    if key in project._saved and project._saved[key][1] == value:  # the load put the absolute path in
        value = project._saved[key][0]
    first = Path(os.path.normpath(Path(value) if Path(value).is_absolute()
                                  else Path(project_path).resolve().parent / value))
    absolute = _saved_absolute(project, key, value)
    return [first] if absolute is None or absolute == first else [first, absolute]


def _use_absolute(project: Project, key: str, tried: list[Path], why: str) -> None:
    """Put ``tried[-1]`` (the saved absolute path) in the field ``key`` and note it (``why``: what was wrong
    with ``tried[0]``)."""
    value = _file_value(_sections(project), key)
    _set_file(project, key, str(tried[-1]))
    project._saved[key] = (project._saved.get(key, (value, ""))[0], str(tried[-1]))
    project._notes.append(f"project field {key}: {tried[0]} (relative to the project) {why}; "
                          f"used {tried[-1]}, the absolute path saved in the project.")


def resolve_files(project: Project, project_path: str | Path) -> None:
    """Point each file field of ``project`` whose path finds nothing relative to the project at the
    absolute path saved for it, when that exists (:attr:`Project.path_notes` says which); others stay."""
    for key in FILE_FIELDS:
        tried = file_candidates(project, project_path, key)
        if len(tried) == 2 and not tried[0].exists() and tried[1].exists():
            _use_absolute(project, key, tried, "is not there")


def new_project(model_path: str | Path, recipe: Recipe, *, data: dict | str | None = None,
                samples: int | None = None, sha256: str | None = None,
                external_data: list | None = None) -> Project:
    """A project for the model at ``model_path`` (absolute until saved). ``sha256``: the model
    file's digest when the caller has it (``PreparedModel.sha256``); else the file is hashed.
    ``external_data``: ``[[file name, sha256], ...]`` of its external data files
    (:func:`workbench.core.model.external_identity.external_identity`), checked when the project is replayed."""
    model_path = Path(model_path).resolve()
    if isinstance(data, (str, Path)):
        data = {"path": str(Path(data).resolve())}
    ref = ModelRef(path=str(model_path), sha256=sha256 or sha256_file(model_path),
                   external_data=[(str(n), str(d)) for n, d in external_data] if external_data else None)
    return Project(model=ref, recipe=recipe, data=data, samples=samples)


def _evaluation_files(spec: dict) -> list[str]:
    """The keys of an ``evaluation`` entry that hold file paths: its data, and its metric when a .py file."""
    keys = ["data"] if isinstance(spec.get("data"), str) and spec["data"] else []
    if isinstance(spec.get("metric"), str) and spec["metric"].lower().endswith(".py"):
        keys.append("metric")
    return keys


def _relative(target: str, base: Path) -> str:
    t = Path(target)
    if not t.is_absolute():
        return target
    try:
        return os.path.relpath(t, base)
    except ValueError:  # other drive on Windows
        return str(t)


def named_files(project: Project, path: str | Path) -> list[tuple[Path, str]]:
    """The files ``project`` saved at ``path`` names, each with what it is: its model, its calibration data
    (or Python reader), its eval data and metric file; relative paths resolved against ``path``'s folder."""
    out = [(p, "the project's model" if i == 0 else "the project's calibration data")
           for i, p in enumerate(project.input_paths(path)[1:])]
    if isinstance(project.evaluation, dict):
        spec = {k: v for k, v in project.evaluation.items() if k in ("data", "metric")}
        base = Path(path).resolve().parent
        for key in _evaluation_files(spec):
            what = "the project's eval data" if key == "data" else "the project's metric file"
            out.append((Path(spec[key]) if Path(spec[key]).is_absolute() else base / spec[key], what))
    return out


def refuse_onto_named_files(project: Project, path: str | Path) -> None:
    """Refuse to write the project file ``path`` onto a file the project names (:func:`named_files`).

    Raises
    ------
    ExportError
        ``path`` is (after ``~`` and symbolic links are resolved) the model, the calibration data, the eval
        data or the metric file of ``project``; the message names the file and what it is.
    """
    hit = same_file(path, named_files(project, path))
    if hit is not None:
        raise ExportError(f"{path} is {hit[1]}; saving the project there would replace it.",
                          hint=f"Choose another file name for the project (e.g. ending in {PROJECT_SUFFIX}).")


def save_project(project: Project, path: str | Path) -> Path:
    """Write ``project`` to ``path`` atomically; model and data paths become relative to it.

    Raises
    ------
    ExportError
        When the target cannot be written, or is a file the project names (its model, calibration data, eval
        data or metric file: :func:`refuse_onto_named_files`).
    """
    path = Path(path)
    refuse_onto_named_files(project, path)
    atomic_write_bytes(path, project_bytes(project, path))
    return path


def stage_project(project: Project, path: str | Path) -> StagedWrite:
    """``project`` written to a temporary file beside ``path``; ``commit()`` renames it into place
    (so it lands right after the model exported in between: both or, after a kill, neither).

    Raises
    ------
    ExportError
        When the target cannot be written, or is a file the project names (:func:`refuse_onto_named_files`).
    """
    refuse_onto_named_files(project, path)
    return StagedWrite(path, project_bytes(project, path))


def project_bytes(project: Project, path: str | Path) -> bytes:
    """The file content of ``project`` saved at ``path``: model, data and eval file paths relative to it, and
    their absolute paths under ``absolute_paths``."""
    path = Path(path)
    base = path.resolve().parent
    doc = project.model_dump(mode="json")
    if doc["model"].get("external_data") is None:
        doc["model"].pop("external_data", None)  # projects of models without external data stay as they were
    if not doc.get("latency_kept"):
        doc.pop("latency_kept", None)  # nor do projects with no unit kept float by the latency check
    absolute = {key: os.path.normpath(value if Path(value).is_absolute() else base / value)
                for key in FILE_FIELDS if (value := _file_value(doc, key)) is not None}
    doc["absolute_paths"] = absolute or None
    doc["model"]["path"] = _relative(project.model.path, base)
    if doc.get("data") and "path" in doc["data"]:
        doc["data"]["path"] = _relative(doc["data"]["path"], base)
    if isinstance(doc.get("evaluation"), dict):
        for key in _evaluation_files(doc["evaluation"]):
            doc["evaluation"][key] = _relative(doc["evaluation"][key], base)
    doc["recipe"] = json.loads(project.recipe.model_dump_json(exclude_defaults=True))
    return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode("utf-8")


def _invalid_field(path: Path, doc: dict, errors: list[dict]) -> ProjectError:
    """The error of a project that fails validation (it read pydantic's "Extra inputs are not permitted" and "Field
    required"): an error in its recipe as a recipe file says it (a field at the wrong level, a typo with a guess); an
    unknown field by name, reported before the field it misspells, which then reads "missing" with the key the file
    has there; else the field and our validator's text."""
    first = _misspelt_missing(doc, errors) or next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = first["loc"]
    if loc and loc[0] == "recipe" and isinstance(doc.get("recipe"), dict):
        try:
            Recipe.from_json(json.dumps(doc["recipe"]), source=str(path), unapplied=True)
        except RecipeError as exc:
            return _recipe_field_error(exc)
    where = ".".join(str(p) for p in loc)
    import difflib  # only for a misspelt name

    if first["type"] == "extra_forbidden":  # the guess among every field there, not only the missing ones
        # ("export.input_shape" had no guess: the optional "input_shapes" was not missing)
        missing = [str(e["loc"][-1]) for e in errors if e["type"] == "missing" and e["loc"][:-1] == loc[:-1]]
        msg = f"unknown field {str(loc[-1])!r}{did_you_mean(loc[-1], _field_names_at(loc[:-1]) + missing)}"
    elif first["type"] == "missing":
        close = difflib.get_close_matches(str(loc[-1]), [str(k) for k in _keys_at(doc, loc[:-1])], n=1)
        msg = (f"missing (the file has {close[0]!r} there, a misspelling?)" if close else
               "missing (a project Workbench saves has it)")
    else:
        msg = first["msg"].removeprefix("Value error, ").rstrip(".")  # pydantic's prefix on our validators' text
    return ProjectError(f"{path}: invalid project field {where}: {msg}.",
                        hint="Fix the field or re-save the project from Workbench.")


def _recipe_field_error(exc: RecipeError) -> ProjectError:
    """A project's recipe error as a recipe file's (``P: invalid recipe at rules.0...``), its field named as the
    project's (``P: invalid project field recipe.rules.0...``), with the same hint."""
    return ProjectError(exc.message.replace(": invalid recipe at ", ": invalid project field recipe.", 1)
                        .replace(": invalid recipe: ", ": invalid project field recipe: ", 1), hint=exc.hint)


def _misspelt_missing(doc: dict, errors: list[dict]) -> dict | None:
    """The first "missing" error whose field the file holds misspelt beside it ("modle" for "model": reported as the
    missing field, naming the key there, rather than as an unknown "modle"); None when there is none."""
    import difflib  # only for a misspelt name

    for error in errors:
        loc = error["loc"]
        if error["type"] == "missing" and loc and difflib.get_close_matches(
                str(loc[-1]), [str(k) for k in _keys_at(doc, loc[:-1])], n=1):
            return error
    return None


def _field_names_at(loc: tuple) -> list[str]:
    """The field names of the object a project holds at pydantic location ``loc`` (``("export",)``: the export
    section's; ``("latency_kept", 0)``: an entry's); [] where it is not an object with fields of its own."""
    kind: Any = Project
    for part in loc:
        kind = _bare(kind)
        if isinstance(part, int):
            kind = get_args(kind)[0] if get_origin(kind) is list and get_args(kind) else None
        else:
            kind = _fields(kind).get(part)
    return list(_fields(_bare(kind)))


def _bare(kind: Any) -> Any:
    """``kind`` without ``Annotated`` and without ``| None``."""
    while get_origin(kind) is Annotated:
        kind = get_args(kind)[0]
    if get_origin(kind) in (Union, types.UnionType):
        kind = next((arg for arg in get_args(kind) if arg is not type(None)), None)
    return kind


def _fields(kind: Any) -> dict[str, Any]:
    """A pydantic model's or a TypedDict's fields (name -> type); {} for any other type."""
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return {name: field.annotation for name, field in kind.model_fields.items()}
    return get_type_hints(kind) if is_typeddict(kind) else {}


def _keys_at(doc: Any, loc: tuple) -> list:
    """The keys of the JSON object at ``loc`` in ``doc`` (none where there is no object)."""
    for part in loc:
        doc = doc[part] if isinstance(doc, dict) and part in doc else (
            doc[part] if isinstance(doc, list) and isinstance(part, int) and part < len(doc) else None)
    return list(doc) if isinstance(doc, dict) else []


def load_project(path: str | Path, *, check_model: bool = True, model_path: str | Path | None = None) -> Project:
    """Read a project file, migrate old schemas, resolve its file paths and check the model file.

    A file not found relative to the project is looked for at the absolute path saved with it
    (:func:`resolve_files`; :attr:`Project.path_notes` says so). ``model_path``: the model chosen by the
    user instead (it must have the recorded sha256; checked even when ``check_model`` is False).

    Raises
    ------
    ProjectError
        Unreadable or malformed JSON, a newer schema, a recipe a recipe file may not hold (as
        :func:`workbench.core.api.load_recipe` refuses it: settings that do not fit together, activation settings a
        static plan does not apply as written, per_block with an observer that computes no per-block ranges), a
        model file that moved or whose sha256 changed (the message names the file, the field and the paths tried,
        and says what to do), a ``data`` section of an unknown kind or option, or without a path
        (:func:`check_data_section`), an ``evaluation`` section with an unknown field or metric
        (:func:`check_evaluation_section`).
    """
    path = Path(path)
    try:
        doc = loads_untrusted(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ProjectError(f"{path}: cannot read project ({exc.strerror}).", hint="Check the path.") from None
    except UnicodeDecodeError as exc:
        raise ProjectError(f"{path}: not a Workbench project (not UTF-8 text: {exc.reason} at byte {exc.start}).",
                           hint="Open a .wbproj file saved by Workbench.") from None
    except UntrustedJSONError as exc:
        raise ProjectError(f"{path}: not a Workbench project ({exc}).",
                           hint="Open a .wbproj file saved by Workbench, or re-save it from Workbench.") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("schema_version"), int):
        raise ProjectError(f"{path}: not a Workbench project (no integer schema_version).",
                           hint="Open a .wbproj file saved by Workbench.")
    version = doc["schema_version"]
    if version > SCHEMA_VERSION:
        raise ProjectError(f"{path}: project schema {version} is newer than this Workbench ({SCHEMA_VERSION}).",
                           hint="Update Workbench to open it.")
    while version < SCHEMA_VERSION:
        if version not in MIGRATIONS:
            raise ProjectError(f"{path}: project schema {version} can no longer be read.",
                               hint="Re-create the project from its model.")
        doc = MIGRATIONS[version](doc)
        version = doc["schema_version"]
    try:
        project = Project.model_validate(doc)
    except ValidationError as exc:
        raise _invalid_field(path, doc, exc.errors()) from None
    try:  # what a recipe file may not hold (api.load_recipe: the CLI's --recipe), a project may not either
        project.recipe.check_fits(source=str(path), unapplied=True)
    except RecipeError as exc:
        raise _recipe_field_error(exc) from None
    check_data_section(project.data, path)
    check_evaluation_section(project.evaluation, path)
    resolve_files(project, path)
    if check_model or model_path is not None:
        check_project_model(project, path, model_path)
    return project


def check_data_section(data: dict[str, Any] | None, path: str | Path) -> None:
    """Refuse a ``data`` section a hand edit broke, naming the field: a kind that is none of
    :data:`~workbench.core.data.loader.KINDS`, a key its kind has no option of, no ``path`` (but random data) or
    one that is not a string.
    Such a section was opened as it was: the app's Calibration panel showed no data (``"pth"`` for ``"path"``)
    and said the data was restored.

    Raises
    ------
    ProjectError
        One line naming the field (``P: invalid project field data.pth: unknown field 'pth' (did you mean
        'path'?).``).
    """
    if data is None:
        return

    def refuse(field: str, msg: str) -> ProjectError:
        return ProjectError(f"{path}: invalid project field data.{field}: {msg}.",
                            hint="Fix the field, or choose the calibration data again in the app and re-save.")

    kind = data.get("kind")
    if kind is not None and kind not in KINDS:
        raise refuse("kind", f"unknown kind {kind!r}{did_you_mean(kind, KINDS)}; use one of {', '.join(KINDS)}")
    options = set(OPTIONS[kind]) if kind is not None else {o for names in OPTIONS.values() for o in names}
    for key in data:
        if key != "kind" and key not in options:
            raise refuse(key, f"unknown field {key!r}{did_you_mean(key, sorted(options))}")
    if "path" in data and not isinstance(data["path"], str):
        raise refuse("path", f"must be a string (the calibration data file or folder), not {data['path']!r}")
    if kind != "random" and not data.get("path"):
        raise refuse("path", "missing (the calibration data file or folder)")


#: the keys of a project's ``evaluation`` section (the app's Evaluate panel)
EVALUATION_KEYS = ("data", "metric", "samples")


def check_evaluation_section(evaluation: dict[str, Any] | None, path: str | Path) -> None:
    """Refuse an ``evaluation`` section a hand edit broke, naming the field: a key other than
    :data:`EVALUATION_KEYS`, a ``metric`` that is no built-in metric nor a ``.py`` file. ``"metric": "top-1"``
    opened with the Evaluate panel showing "(none)", and ``"metirc"`` was dropped without a word.

    Raises
    ------
    ProjectError
        One line naming the field.
    """
    if evaluation is None:
        return

    def refuse(field: str, msg: str) -> ProjectError:
        return ProjectError(f"{path}: invalid project field evaluation.{field}: {msg}.",
                            hint="Fix the field, or set it again in the app's Evaluate panel and re-save.")

    for key in evaluation:
        if key not in EVALUATION_KEYS:
            raise refuse(key, f"unknown field {key!r}{did_you_mean(key, EVALUATION_KEYS)}")
    metric = evaluation.get("metric")
    if isinstance(metric, str) and metric and not metric.endswith(".py") and metric not in (*METRICS, "sqnr"):
        raise refuse("metric", f"unknown metric {metric!r}{did_you_mean(metric, METRICS)}; use one of "
                               f"{', '.join(METRICS)}, or the path of a .py file defining metric(outputs, batch)")


def is_project_model(project_path: str | Path, model_path: str | Path) -> bool:
    """Whether the file ``model_path`` has the sha256 the project recorded (a copy of its model), and its
    external data files those recorded (:func:`check_external_data`; else it is a retrained model to retarget).
    A project that recorded none (saved before they were recorded) of a model with external data files is not
    its model here: a replay would use its cached ranges on weights it cannot check, a retarget calibrates them.

    Raises
    ------
    ProjectError
        The project is unreadable (its own model file is not checked).
    """
    project = load_project(project_path, check_model=False)
    if not (Path(model_path).is_file() and sha256_file(model_path) == project.model.sha256):
        return False
    try:
        check_external_data(project, project_path, Path(model_path))
    except ProjectError:
        return False
    return True


def check_project_model(project: Project, path: str | Path, model_path: str | Path | None = None) -> Path:
    """The project's model path, after checking it exists and has the recorded sha256, and its external data
    files the recorded ones (``model.external_data``: retrained weights saved beside the same graph file
    were quantized with the project's stale calibration ranges, 0.67 dB output SQNR on digits_cnn).

    The model is looked for relative to the project, then at the absolute path saved in it
    (:func:`file_candidates`): the first file found must have the recorded sha256 (a changed file is refused,
    never passed over for the other path); the absolute one is put in ``project.model.path``, with a note in
    :attr:`Project.path_notes`. ``model_path``: a copy of the model
    elsewhere (the project was moved, or the user located it); it must have the recorded sha256 and is then
    used instead of the project's own path.

    Raises
    ------
    ProjectError
        No model at any path tried (the message names the project, the field and the paths), or the file
        found has another sha256 (a changed model, or another file of the same name), or one of its
        recorded external data files is missing or has another sha256.
    """
    found = _project_model_file(project, path, model_path)
    check_external_data(project, path, found, unrecorded_ok=True)
    return found


def check_external_data(project: Project, path: str | Path, model_path: Path,
                        identity: list[list[str]] | None = None, *, unrecorded_ok: bool = False) -> None:
    """Check that the external data files of the model file ``model_path`` (which has the sha256 ``project``,
    saved at ``path``, recorded) are those in ``project.model.external_data``, byte for byte (sha256).

    ``identity``: ``[[file name, sha256], ...]`` of the model's external data files
    (:func:`workbench.core.model.external_identity.external_identity` of it loaded) when the caller has it, so
    they are hashed once; None: hashed here (the files the project recorded: the graph file is the recorded
    one, so it names them; none recorded: the files the graph file names).

    None recorded (a project saved before they were recorded) while the model has external data files: nothing
    says whether those weights are the ones calibrated, so this is a mismatch, except with ``unrecorded_ok``.
    Only the plain replay passes it (:func:`check_project_model`): projects without the optional fields open as
    before (module docstring). :func:`is_project_model` and the retarget
    (:func:`workbench.core.pipeline.retarget.retarget_to_model`) do not: a mismatch there only costs a
    calibration of the ranges, never stale ones.

    Raises
    ------
    ProjectError
        A recorded file is missing or has another sha256 (the message names it), the model has external data
        files the project did not record, or (without ``unrecorded_ok``) it recorded none.
    """
    recorded = [[str(n), str(d)] for n, d in project.model.external_data or ()]
    if not recorded and unrecorded_ok:
        return
    if identity is None:
        names = [n for n, _ in recorded] if recorded else external_file_names(model_path)
        identity = files_identity(model_path, names)
    if identity == recorded:
        return
    now_by_name = dict((n, d) for n, d in identity)
    for name, digest in recorded:
        now = now_by_name.get(name, "")
        if now != digest:
            what = f"sha256 {now[:12]}... != {digest[:12]}..." if now else "not found"
            raise ProjectError(f"{path}: the external data file {model_path.parent / name} of the model changed "
                               f"since the project was saved ({what}).", hint=_RETARGET_HINT.format(path=path))
    extra = ", ".join(n for n, _ in identity if n not in dict(recorded))
    raise ProjectError(f"{path}: the model {model_path} reads weights from external data files the project did not "
                       f"record ({extra}): it cannot tell whether they are the weights it was calibrated on.",
                       hint=f"Apply the project to the model (its ranges are calibrated again): workbench-cli quantize "
                            f"{path} --model {model_path} -o OUT.onnx --save-project NEW.wbproj.")


_RETARGET_HINT = ("Restore the original weights file, or apply the project to the new model: workbench-cli quantize "
                  "{path} --model NEW.onnx -o OUT.onnx (File > Apply Project to Model... in the app).")


def _project_model_file(project: Project, path: str | Path, model_path: str | Path | None) -> Path:
    """:func:`check_project_model` without the external data check."""
    if model_path is not None:
        return _check_chosen_model(project, path, Path(os.path.normpath(Path(model_path).resolve())))
    tried = file_candidates(project, path, "model.path")
    found = [p for p in tried if p.is_file()]
    if not found:
        where = (f"{tried[0]} was not found (moved or deleted)" if len(tried) == 1 else
                 f"was not found (moved or deleted): tried {tried[0]} (relative to the project) and {tried[1]} "
                 "(the absolute path saved in it)")
        raise ProjectError(f"{path}: project field model.path: the model {where}.",
                           hint=f"Put the model back, or point the project at it: workbench-cli quantize {path} "
                                "--model PATH -o OUT.onnx --save-project NEW.wbproj (analyze, sweep and report "
                                "then take NEW.wbproj; File > Open model in the app).")
    model_path = found[0]  # a file where the relative path points is the model, changed or not: never skipped
    digest = sha256_file(model_path)
    if digest == project.model.sha256:
        if model_path != project.model_path(path):
            _use_absolute(project, "model.path", tried, "is not there")
        return model_path
    if model_path == tried[0]:
        raise ProjectError(f"{path}: the model {model_path} changed since the project was saved "
                           f"(sha256 {digest[:12]}... != {project.model.sha256[:12]}...).",
                           hint="Restore the original model, or apply the project to the new model: "
                                f"workbench-cli quantize {path} --model NEW.onnx -o OUT.onnx (File > Apply Project "
                                "to Model... in the app).")
    raise ProjectError(f"{path}: project field model.path: nothing at {tried[0]} (relative to the project), and "
                       f"{model_path} (the absolute path saved in it) is another file (sha256 {digest[:12]}... != "
                       f"{project.model.sha256[:12]}...).",
                       hint=f"Put the project's model beside it as model.path says, or point the project at it: "
                            f"workbench-cli quantize {path} --model PATH -o OUT.onnx --save-project NEW.wbproj "
                            "(File > Apply Project to Model... in the app for another model).")


def _check_chosen_model(project: Project, path: str | Path, chosen: Path) -> Path:
    """:func:`check_project_model` of a model file given by the user: used when it has the recorded sha256."""
    if not chosen.is_file():
        raise ProjectError(f"{path}: the model {chosen} was not found (moved or deleted).",
                           hint="Check the path of the model given for the project.")
    digest = sha256_file(chosen)
    if digest != project.model.sha256:
        raise ProjectError(f"{path}: {chosen} is not the project's model (sha256 {digest[:12]}... != "
                           f"{project.model.sha256[:12]}...).",
                           hint="Choose the model the project was saved with, or apply the project to this model: "
                                f"workbench-cli quantize {path} --model NEW.onnx -o OUT.onnx (File > Apply Project "
                                "to Model... in the app).")
    if chosen != project.model_path(path):
        project._notes.append(f"project field model.path: used {chosen} (same sha256) instead of "
                              f"{project.model_path(path)}; save the project to keep it.")
        project.model.path = str(chosen)
    return chosen
