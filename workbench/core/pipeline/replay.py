"""Replaying a saved project headless: same model, recipe, data and calibration cache."""

from __future__ import annotations

from pathlib import Path

from workbench.core.calibration.calibrate import CalibrationResult, unserved
from workbench.core.errors import CalibrationError, Cancelled, ProjectError, WorkbenchError
from workbench.core.issues import IssueCode, PlanIssue, Severity
from workbench.core.model.load import PreparedModel
from workbench.core.model.load import load_model as open_model
from workbench.core.pipeline.latency_record import replay_notes
from workbench.core.pipeline.project import check_project_model, load_project
from workbench.core.pipeline.quantize import QuantizeResult, plan, quantize
from workbench.core.progress import CancelToken, ProgressFn


def replay_project(project_path: str | Path, *, progress: ProgressFn | None = None,
                   cancel: CancelToken | None = None, use_cache: bool = True,
                   allow_code: bool = False, model_path: str | Path | None = None,
                   ) -> tuple[PreparedModel, QuantizeResult]:
    """Re-run a saved project headless: same model, recipe, data and calibration cache.

    The units the project's ``latency_kept`` names stay float as its recipe says (no latency check runs); the
    result's issues say so, one ``IssueCode.LATENCY_KEPT_FLOAT`` note per unit
    (:func:`~workbench.core.pipeline.latency_record.replay_notes`).

    ``allow_code`` lets a Python data reader named by the project run even when the project does
    not say ``"allow_code": true`` itself (the CLI's ``--allow-code``). ``model_path``: a copy of the
    project's model elsewhere (same sha256; a moved project), used instead of the recorded path.

    Raises
    ------
    ProjectError
        The project or its model is missing or changed.
    """
    project = load_project(project_path, check_model=model_path is None)
    model = open_model(check_project_model(project, project_path, model_path))
    calib = None
    if use_cache and project.calibration:
        try:
            calib = CalibrationResult.from_json(project.calibration)
        except (CalibrationError, AttributeError, KeyError, TypeError, ValueError, OverflowError) as exc:
            why = exc.message if isinstance(exc, CalibrationError) else f"malformed ({type(exc).__name__}: {exc})"
            raise ProjectError(f"{project_path}: field calibration: {why}",
                               hint="Delete the project's \"calibration\" entry to recalibrate, or re-save the "
                                    "project from Workbench.") from None
    try:
        data = project.data_spec(project_path, allow_code=allow_code)
        return _replay(project, project_path, model, calib, data, progress, cancel)
    except Cancelled:
        raise
    except WorkbenchError as exc:  # name the project: the data or ranges it points to are the cause
        missing = _missing_data_file(data)
        if missing is not None:
            raise ProjectError(f"{project_path}: project field data.path: the calibration data {missing} was not "
                               "found (moved or deleted), and the replay reads it.",
                               hint='Put the data back, set "data": {"path": "NEW.npz"} in the project file (a path '
                                    "relative to it) to where it is now, or give it: workbench-cli quantize "
                                    f"{project_path} --model {model.path} --data NEW.npz -o OUT.onnx.") from None
        if str(project_path) not in exc.message:
            exc.message = f"{project_path}: {exc.message}"
            exc.args = (f"{exc.message} {exc.hint}" if exc.hint else exc.message,)
        raise


def _missing_data_file(data) -> str | None:
    """The path of the project's data spec ``data`` (a dict with ``path``) when nothing is there any more (a
    replay that reads it failed with the loader's "no such data file. Check the path.", which named no field
    and no way out: ``--data`` does not apply to a replay); else None."""
    path = data.get("path") if isinstance(data, dict) else None
    return path if isinstance(path, str) and not Path(path).exists() else None


def _replay(project, project_path, model, calib, data, progress, cancel) -> tuple[PreparedModel, QuantizeResult]:
    dropped = list(calib.dropped) if calib is not None else []
    if dropped and data is None:
        tensor, why = dropped[0]
        raise ProjectError(f"{project_path}: field calibration.observers[{tensor!r}]: the cached range is not "
                           f"valid ({why}) and the project names no data to recalibrate it.",
                           hint="Delete that entry and add calibration data to the project (or re-save it from "
                                "Workbench).")
    if calib is not None and data is not None and project.recipe.smoothquant is None \
            and not project.recipe.bias_correction:  # bias correction reads the data (Conv input means)
        # every tensor cached with statistics that serve its spec: no need to touch the data
        if not unserved(plan(model, project.recipe), calib):
            data = None
    result = quantize(model, project.recipe, data=data, samples=project.samples, calibration=calib,
                      progress=progress, cancel=cancel)
    for tensor, why in dropped:
        result.issues.insert(0, PlanIssue(tensor, Severity.WARNING,
                                          f"{project_path}: the cached range of tensor {tensor!r} was not valid "
                                          f"({why}); dropped and recalibrated from the project's data",
                                          IssueCode.CACHE_DROPPED))
    excluded = [unit.node for unit in result.plan.units.values() if unit.excluded]
    result.issues += replay_notes(project.latency_kept or [], excluded, project_path)
    return model, result


