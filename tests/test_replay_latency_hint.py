"""The 'no node unit is quantized' warning of a replayed project whose latency_kept units are all its units: a
replay runs no latency check, so ``--no-latency-check`` beside the project changes nothing; the warning names the
.onnx model's quantize instead. Before, it said '--no-latency-check writes the units the latency check kept float
quantized', and ``quantize P.wbproj --no-latency-check`` wrote the same float model."""

from __future__ import annotations

import shutil
import subprocess
import sys

from workbench.core import api


def _all_kept_project(tmp_path, corpus):
    for name in ("model_opset17.onnx", "calib.npz"):
        shutil.copy(corpus / "digits_cnn" / name, tmp_path / name)
    model = api.open_model(tmp_path / "model_opset17.onnx")
    units = list(api.plan(model, api.Recipe()).units)
    recipe = api.Recipe(overrides={u: {"exclude": True} for u in units})
    project = api.new_project(tmp_path / "model_opset17.onnx", recipe, data=str(tmp_path / "calib.npz"), samples=8)
    project.latency_kept = [api.LatencyKept(node=u, ratio=1.3, reason="kept in float") for u in units]
    api.save_project(project, tmp_path / "p.wbproj")
    return tmp_path / "p.wbproj", len(units)


def test_a_replay_with_every_unit_latency_kept_points_at_the_model_not_the_flag(tmp_path, corpus):
    project, n = _all_kept_project(tmp_path, corpus)
    run = subprocess.run([sys.executable, "-m", "workbench.cli", "quantize", str(project), "-o", str(tmp_path / "q.onnx")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    warning = next(line for line in run.stderr.splitlines() if line.startswith("warning: no node unit is quantized"))
    assert f"all {n} were kept float" in warning
    assert "--no-latency-check writes" not in warning
    assert warning.endswith(f"{project}'s recipe excludes the units its latency check kept float (a replay measures "
                            "nothing): quantize the .onnx model itself with --no-latency-check to write them quantized")


def test_analyze_of_such_a_project_says_its_recipe_keeps_them(tmp_path, corpus, capsys):
    """``analyze P.wbproj`` said '--no-latency-check measures every unit the recipe quantizes' of the units the
    project's latency_kept names; with --no-latency-check beside the project the same units stayed float."""
    from workbench.cli import main

    project, n = _all_kept_project(tmp_path, corpus)
    assert main(["analyze", str(project), "--no-latency-check"]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if "measured slower quantized" in line]
    assert notes == [f"note: {n} units measured slower quantized are float here: {project}'s recipe keeps them so, as "
                     "the latency check decided when it was saved (--no-latency-check beside the project changes "
                     "nothing: `workbench-cli analyze` of the .onnx model with it measures them quantized)"]
