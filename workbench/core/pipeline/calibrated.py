"""The model a calibration wrote and analysed, kept so that an export of the same inputs writes its bytes.

The app's calibration quantizes the model as ``workbench-cli quantize`` writes it (latency placement,
placement guard, latency check and fallback included) and analyses that model. :func:`keep_written`
keeps its serialised bytes with the inputs they were made from (the model file's SHA-256, the recipe as
written, the calibration data spec and sample count), its issues and the latency check's result;
:func:`written_changes` names the first of those inputs that changed since; :func:`write_kept` writes
the bytes (onnx.checker on them, then atomically). An export of unchanged inputs so writes the model
analysed, byte for byte, without the quantize pipeline and its latency measurements (ppocrv4_rec, 8
samples: 9-14 s of planning, placement guard and latency check on a loaded 2-core machine). A QONNX export
of unchanged inputs needs the quantize result, not only its bytes: :func:`rebuild_kept` writes the kept
recipe again from the calibration's ranges (no calibration pass, no latency check) and keeps the result only
when it gives the kept bytes again.

A kept model is a plain dict (it travels in job payloads and results, pickled):
``model`` (bytes), ``sha256`` (hex of ``model``), ``inputs`` (see :func:`written_inputs`), ``recipe``
(JSON, the recipe as written), ``issues`` (the quantize's issues, PlanIssue objects), ``latency`` (the
latency check's :class:`~workbench.core.runtime.latency.LatencyComparison` as a dict, None when it did
not measure) and ``units`` (``[quantized, total]`` node units).
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict
from pathlib import Path
from typing import Any

from workbench.core.calibration.calibrate import CalibrationResult
from workbench.core.errors import Cancelled, ExportError, WorkbenchError
from workbench.core.io.atomic import atomic_path, write_pieces
from workbench.core.io.external import has_lazy, is_source
from workbench.core.io.save import EXTERNAL_THRESHOLD, check_bytes, tensor_bytes
from workbench.core.model.load import PreparedModel, sha256_file
from workbench.core.pipeline.export import float_as_given
from workbench.core.pipeline.quantize import QuantizeResult, quantize
from workbench.core.progress import CancelToken
from workbench.core.recipe.recipe import Recipe

#: what :func:`written_changes` compares, in order, and the words for a change of each
_INPUT_WORDS = (("model_sha256", "the model file changed"), ("recipe", "the recipe was edited"),
                ("data", "the calibration data changed"), ("samples", "the calibration sample count changed"))


def written_inputs(model_sha256: str, recipe_json: str, data: Any, samples: int | None) -> dict:
    """The inputs a kept model depends on: the model file's SHA-256 (hex), the recipe JSON as written
    (with the latency check's exclusions), the calibration data spec and sample count (None: all rows)."""
    return {"model_sha256": model_sha256, "recipe": recipe_json, "data": data, "samples": samples}


def keep_written(model: PreparedModel, result: QuantizeResult, inputs: dict, issues: list) -> dict | None:
    """``result``'s model (quantized with the latency check, as ``workbench-cli quantize`` writes it) kept
    for a later export of the same ``inputs`` (:func:`written_inputs`), with ``issues`` (what the export
    reports) and the latency check's result. None when it cannot be kept as one file: a model built in
    memory (no file hash), weights in external data files, or tensors over the 2 GiB protobuf limit. A result that
    quantizes nothing keeps the input file as given (:func:`~workbench.core.pipeline.export.float_as_given`): the
    file's one read for this result, since an export of the same inputs writes the kept bytes (:func:`write_kept`)
    without reading it again; a file changed since is a changed input (:func:`written_changes`: its SHA-256), so
    the export quantizes the new file instead."""
    if (not model.sha256 or model.external_data_files or has_lazy(result.proto)
            or tensor_bytes(result.proto) > EXTERNAL_THRESHOLD):
        return None
    data = _written_bytes(result)
    units = result.plan.units.values()
    return {"model": data, "sha256": hashlib.sha256(data).hexdigest(), "inputs": dict(inputs),
            "recipe": result.recipe.to_json(), "issues": list(issues),
            "latency": asdict(result.latency) if result.latency is not None else None,
            "units": [sum(not u.excluded for u in units), len(units)]}


def _written_bytes(result: QuantizeResult) -> bytes:
    """The bytes an export writes for ``result`` as QDQ: its model, or the input file as given when it
    quantizes nothing (:func:`~workbench.core.pipeline.export.float_as_given`)."""
    given = float_as_given(result)
    return (given if given is not None else result.proto).SerializeToString()


def rebuild_kept(model: PreparedModel, kept: dict, calibration: CalibrationResult | None, data: Any,
                 samples: int | None, cancel: CancelToken | None = None) -> QuantizeResult | None:
    """The quantize result of ``kept`` (:func:`keep_written`), for an export that needs more than its bytes
    (QONNX): ``kept["recipe"]`` (the recipe as written, the latency check's exclusions in it) quantized again
    from ``calibration``'s ranges, re-read for its plan without running the model (no calibration pass, no
    latency check). ``data`` and ``samples`` are read only when the recipe's SmoothQuant or bias correction
    needs them (they run the float model, as the calibration's quantize did).

    Returns
    -------
    QuantizeResult or None
        None when the ranges lack a tensor of the plan, the quantize fails, or its model is not the kept
        bytes (SHA-256): the caller quantizes afresh then.

    Raises
    ------
    Cancelled
        ``cancel`` was set.
    """
    if calibration is None or not isinstance(kept.get("recipe"), str):
        return None
    try:
        recipe = Recipe.model_validate_json(kept["recipe"])
        reads = recipe.smoothquant is not None or recipe.bias_correction
        result = quantize(model, recipe, data=data if reads else None, samples=samples, calibration=calibration,
                          cancel=cancel)
    except Cancelled:
        raise
    except (WorkbenchError, ValueError):
        return None
    return result if hashlib.sha256(_written_bytes(result)).hexdigest() == kept.get("sha256") else None


def current_inputs(model_path: str | Path, recipe_json: str, data: Any, samples: int | None) -> dict:
    """:func:`written_inputs` of a job about to run: the model file hashed now (about 30 ms for 10 MB);
    an unreadable file hashes as "" (a change)."""
    try:
        digest = sha256_file(Path(model_path))
    except OSError:
        digest = ""
    return written_inputs(digest, recipe_json, data, samples)


def written_changes(kept: dict | None, inputs: dict) -> str | None:
    """None when ``kept`` (:func:`keep_written`) was made from ``inputs``; else why it cannot be written
    as it is, in words ("the recipe was edited since the calibration"; "no model kept" when ``kept`` is
    None or damaged)."""
    if not isinstance(kept, dict) or not isinstance(kept.get("inputs"), dict) or not kept.get("model"):
        return "no model kept"
    for key, words in _INPUT_WORDS:
        if kept["inputs"].get(key) != inputs.get(key):
            return f"{words} since the calibration"
    return None


def write_kept(kept: dict, path: str | Path) -> Path:
    """Write the kept model's bytes to ``path`` atomically, after onnx.checker and a check that they are the
    bytes kept (their SHA-256). Returns the path.

    Raises
    ------
    ExportError
        The bytes do not match their hash or fail the checker; ``path`` is an input or an open model's
        external data file, its folder is missing or not writable, or the disk is full.
    """
    data = kept["model"]
    if hashlib.sha256(data).hexdigest() != kept.get("sha256"):
        raise ExportError("The calibrated model kept in memory does not match its hash.",
                          hint="Calibrate again (F5), then export.")
    path = Path(path)
    if is_source(path.parent / (path.name + ".data")) or is_source(path):
        raise ExportError(f"{path}: would replace the external data file an open model reads its weights from.",
                          hint="Choose another file name for the quantized model.")
    check_bytes(data)
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        write_pieces(f, data)
    return path
