"""The CLI's on-disk cache of recipe choices: ``quantize``, ``analyze``, ``sweep``, ``report`` and ``render``
make the same choice on the same model, data and recipe (``analyze`` of nudenet_320n spent 51.6 s of 93 s in
it), so a choice is kept and reused, with the ranges of its calibration pass over every row.

An entry is JSON under ``$WORKBENCH_CACHE_DIR/recipe_choice`` (else ``<platformdirs user cache>/workbench/
recipe_choice``, beside the latency measurements), named by the sha256 of: the model file's sha256 (and its
external data files'), the data file's sha256, the sample count, the recipe as given, the Workbench and
onnxruntime versions. Only data in one
file (.npz / .npy) is cached (a folder or a Python reader may change without its name changing). A cache
that cannot be read or written only means choosing again.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from workbench import __version__
from workbench.core import api
from workbench.core.errors import WorkbenchError

log = logging.getLogger(__name__)

#: Bumped when an entry's content or the key changes (old entries are then ignored).
CACHE_VERSION = 1


@dataclass
class CachedChoice:
    """A reused choice: the recipe chosen, the ranges of its calibration pass (None when it had none), its
    summary line and label as first printed, and the entry's file."""

    recipe: object
    calibration: object
    summary: str
    label: str
    path: Path


def earlier_run(cached: CachedChoice) -> tuple[str, str]:
    """``(line, when)``: the summary line ``cached`` was first printed with, without its ``; took N s (...)``
    (the cost of that earlier run, not of this one), and ``chosen YYYY-MM-DD HH:MM UTC in N s (N.Nx its
    calibration pass)``: when it was chosen (the entry file's time) and what it cost then ("" for what is
    not known)."""
    line, took, cost = cached.summary.rpartition("; took ")
    if not took:
        line, cost = cached.summary, ""
    try:
        stamp = datetime.fromtimestamp(cached.path.stat().st_mtime, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
    except OSError:
        stamp = ""
    when = " ".join(part for part in ("chosen", stamp, f"in {cost}" if cost else "") if part)
    return line, "" if when == "chosen" else when


def cache_dir() -> Path:
    """``$WORKBENCH_CACHE_DIR/recipe_choice`` when set, else ``<platformdirs user cache>/workbench/recipe_choice``."""
    return api.cache_dir("recipe_choice")


def data_digest(data) -> str | None:
    """The sha256 (64 hex digits) of calibration data in one file (``data``: its path), None for data that is not
    one file or cannot be read (the job's loader says why, in its own words). A job that needs it twice (the
    cache key and :func:`workbench.core.api.sweep_job_stamp`) hashes the file once and passes it on."""
    if not (isinstance(data, (str, os.PathLike)) and os.path.isfile(data)):
        return None
    try:
        return api.sha256_file(Path(data))
    except OSError:
        return None


def entry_path(model, recipe, data, samples: int | None, digest: str | None = None) -> Path | None:
    """The cache file of this choice, or None when it is not cached (data not in one .npz / .npy file, a
    model without a file digest). ``digest``: the data file's :func:`data_digest` when the caller has it."""
    if not (isinstance(data, str) and data.lower().endswith((".npz", ".npy")) and os.path.isfile(data)):
        return None
    if not getattr(model, "sha256", ""):
        return None
    import onnxruntime  # here, not at import: ``--help`` loads no model library

    digest = digest or data_digest(data)
    weights = external_digests(model)
    if digest is None or weights is None:
        return None
    fields = {"version": CACHE_VERSION, "workbench": __version__, "onnxruntime": onnxruntime.__version__,
              "model": model.sha256, "data": digest, "samples": samples, "recipe": recipe.to_json()}
    if weights:  # only then: the keys of models without external data stay as they were
        fields["external_data"] = weights
    key = json.dumps(fields, sort_keys=True)
    # the short key by the interpreter's own SHA-256 (api.sha256): hashlib would load OpenSSL (about 3.4 MiB)
    return cache_dir() / f"{api.sha256(key.encode()).hexdigest()}.json"


def external_digests(model) -> list[list[str]] | None:
    """``[[file name, sha256], ...]`` of the external data files ``model`` (a PreparedModel) read its weights from,
    in its order (:func:`workbench.core.api.external_identity`, as the sweep job stamp records them); ``[]``
    without any; None when one cannot be read (nothing is then cached). The model file's sha256 covers none of
    their bytes: weights retrained and saved beside the same graph file reused the old weights' choice and
    calibration ranges (digits_cnn with its Conv weights x3 in its .data file: 0.65 dB output SQNR in
    ``analyze``, 43.70 dB chosen afresh)."""
    weights = api.external_identity(model)
    return None if any(not digest for _, digest in weights) else weights


def load(path: Path | None) -> CachedChoice | None:
    """The choice cached at ``path``; None when there is none or it cannot be read."""
    if path is None or not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        recipe = api.Recipe.from_json(doc["recipe"], source=str(path))
        calibration = api.CalibrationResult.from_json(doc["calibration"]) if doc.get("calibration") else None
        return CachedChoice(recipe, calibration, str(doc["summary"]), str(doc["label"]), path)
    except (OSError, ValueError, KeyError, TypeError, WorkbenchError) as exc:
        log.info("recipe choice cache not read (%s): %s", path, exc)
        return None


def store(path: Path | None, choice) -> None:
    """Keep ``choice`` (a :func:`workbench.core.api.choose_recipe` report that chose) at ``path``."""
    if path is None or choice.skipped or choice.calibration is None:
        return
    doc = {"recipe": choice.recipe.to_json(), "calibration": choice.calibration.to_json(),
           "summary": choice.summary(), "label": choice.label}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        api.atomic_write_bytes(path, json.dumps(doc).encode())  # ours alone: NaN states read back as written
    except (OSError, WorkbenchError) as exc:  # a read-only cache only means choosing again next time
        log.info("recipe choice cache not written (%s): %s", path, exc)
