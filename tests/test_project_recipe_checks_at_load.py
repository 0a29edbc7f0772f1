"""A project's recipe is checked as a recipe file's is (``api.load_recipe``, the CLI's --recipe): activation
settings a static plan does not apply as written, per_block with an observer that computes no per-block ranges
and rules that do not fit together are refused when the project is read, in one line naming the file and the field
and saying what to write. A project holding them was read (the recipe was never checked across its fields), and
the app or ``workbench-cli quantize P.wbproj`` quantized it with the plan's warnings; the same recipe saved as a
recipe file was refused by --recipe."""

from __future__ import annotations

import json

import pytest

from workbench.cli import main
from workbench.core import api
from workbench.core.errors import ProjectError, RecipeError
from workbench.core.pipeline.project import Project, load_project, save_project

_HINT_END = " (see README, 'Recipes')."

RECIPES = [
    ({"rules": [{"op_type": "Conv", "activation": {"granularity": "per_channel"}}]},
     "rules.0.activation.granularity (rule op_type=Conv): per_channel activations do not fuse into integer kernels: "
     "the plan would quantize them per_tensor.", 'Use "granularity": "per_tensor"'),
    ({"overrides": {"conv": {"activation": {"dtype": "mxint8", "granularity": "per_block", "block_size": 32}}}},
     "overrides.conv.activation.dtype (override of node conv): mxint8 is an MX block format, and per_block "
     "activations are not supported by QDQ runtimes (the plan would leave them float).",
     'Use an integer or float8 dtype for activations (e.g. "uint8"), per_tensor; MX formats are for weights'),
    ({"rules": [{"op_type": "Gemm", "weight": {"granularity": "per_block", "block_size": 32, "observer": "entropy"}}]},
     "rules.0.weight.observer (rule op_type=Gemm): the entropy observer computes no per_block ranges (calibration "
     "would use minmax instead).", 'Use "observer": "minmax" for per_block settings, or remove it'),
    ({"rules": [{"op_type": "Gemm", "weight": {"granularity": "per_block", "block_size": 32}},
                {"op_type": "Gemm", "weight": {"granularity": "per_tensor"}}]},
     "rules.1.weight.granularity (rule op_type=Gemm): block_size is only valid with granularity per_block "
     "(block_size 32 comes from rules.0, rule op_type=Gemm).", 'Add "block_size": null next to it, or use '
     '"granularity": "per_block"'),
]


def _project(tmp_path, recipe: dict):
    """A project of a model file that is not read (check_model off) whose recipe is ``recipe``, as an older
    Workbench saved it."""
    model = tmp_path / "m.onnx"
    model.write_bytes(b"not read: check_model is off")
    path = tmp_path / "job.wbproj"
    save_project(Project.model_validate({"model": {"path": str(model), "sha256": "0" * 64}}), path)
    doc = json.loads(path.read_text())
    doc["recipe"] = recipe
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(("recipe", "message", "hint"), RECIPES)
def test_a_project_is_refused_what_a_recipe_file_is(tmp_path, recipe, message, hint):
    path = _project(tmp_path, recipe)
    with pytest.raises(ProjectError) as info:
        load_project(path, check_model=False)
    assert info.value.message == f"{path}: invalid project field recipe.{message}"
    assert info.value.hint == hint + _HINT_END
    as_file = tmp_path / "r.json"  # the same words as the recipe file's refusal, the field named as the project's
    as_file.write_text(json.dumps(recipe))
    with pytest.raises(RecipeError) as file_info:
        api.load_recipe(as_file)
    assert file_info.value.message == f"{as_file}: invalid recipe at {message}"
    assert file_info.value.hint == info.value.hint


def test_the_cli_replay_says_it_in_one_line(tmp_path, capsys):
    recipe, message, hint = RECIPES[0]
    path = _project(tmp_path, recipe)
    assert main(["quantize", str(path), "-o", str(tmp_path / "q.onnx")]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err == [f"error: {path}: invalid project field recipe.{message} {hint}{_HINT_END}"]
    assert not (tmp_path / "q.onnx").exists()


@pytest.mark.parametrize("recipe", [
    {"rules": [{"op_type": "Conv", "activation": {"granularity": "per_tensor", "dtype": "int8"}}]},
    {"rules": [{"op_type": "Gemm", "weight": {"granularity": "per_block", "block_size": 32, "observer": "minmax"}}]},
    {"preset": "w4-block"},
    {"preset": "dynamic-u8", "rules": [{"op_type": "MatMul", "activation": {"granularity": "per_channel"}}]},
])
def test_projects_a_recipe_file_may_hold_load(tmp_path, recipe):
    assert load_project(_project(tmp_path, recipe), check_model=False).recipe.model_dump(exclude_defaults=True)
