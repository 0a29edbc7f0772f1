"""A project whose recipe fails one of our validators reads like a recipe file would: the field and our
text, without pydantic's 'Value error, ' prefix or a doubled full stop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.core.errors import ProjectError
from workbench.core.pipeline.project import Project, load_project, save_project


def test_recipe_validator_message_in_a_project(tmp_path):
    model = tmp_path / "m.onnx"
    model.write_bytes(b"not read: check_model is off")
    path = tmp_path / "job.wbproj"
    save_project(Project.model_validate({"model": {"path": str(model), "sha256": "0" * 64}}), path)
    doc = json.loads(path.read_text())
    doc["recipe"] = {"rules": [{"match": "*", "activation": {"observer": "percentile",
                                                             "observer_args": {"percentile": 150}}}]}
    path.write_text(json.dumps(doc))
    with pytest.raises(ProjectError) as err:
        load_project(path, check_model=False)
    text = str(err.value)
    assert "invalid project field recipe.rules.0.activation.observer_args.percentile: 150 is out of range" in text
    assert "Value error" not in text and ".." not in text


def _edited(tmp_path, edit) -> Path:
    model = tmp_path / "m.onnx"
    model.write_bytes(b"not read: check_model is off")
    path = tmp_path / "job.wbproj"
    save_project(Project.model_validate({"model": {"path": str(model), "sha256": "0" * 64}}), path)
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(("edit", "message", "hint"), [
    # a hand-edited project's recipe read "invalid project field recipe.activation: Extra inputs are not permitted"
    (lambda d: d["recipe"].update(activation={"dtype": "int16"}),
     "invalid project field recipe.activation: 'activation' is not a field at the top level; it goes in a rule "
     '({"rules": [{"op_type": "Conv", "activation": ...}]}) or in an override ({"overrides": {"NODE": '
     '{"activation": ...}}}).', "Move it there (see README, 'Recipes')."),
    (lambda d: d["recipe"].update(rules=[{"op_type": "Conv", "weight": {"dtpye": "int8"}}]),
     "invalid project field recipe.rules.0.weight.dtpye: unknown field 'dtpye' (did you mean 'dtype'?).",
     "Fix the field name (see README, 'Recipes')."),
    # a misspelt field read "invalid project field model: Field required"
    (lambda d: d.update(modle=d.pop("model")),
     "invalid project field model: missing (the file has 'modle' there, a misspelling?).",
     "Fix the field or re-save the project from Workbench."),
    (lambda d: d["model"].update(sah256=d["model"].pop("sha256")),
     "invalid project field model.sha256: missing (the file has 'sah256' there, a misspelling?).",
     "Fix the field or re-save the project from Workbench."),
    (lambda d: d.pop("model"), "invalid project field model: missing (a project Workbench saves has it).",
     "Fix the field or re-save the project from Workbench."),
    # an unknown name close to an optional field the file leaves out read "unknown field 'input_shape'" with no
    # guess (only the missing fields were candidates)
    (lambda d: d.update(export={"format": "qonnx", "input_shape": {"input": [1, 1, 28, 28]}}),
     "invalid project field export.input_shape: unknown field 'input_shape' (did you mean 'input_shapes'?).",
     "Fix the field or re-save the project from Workbench."),
    (lambda d: d.update(latency_kept=[{"node": "/f/Conv", "rato": 1.5}]),
     "invalid project field latency_kept.0.rato: unknown field 'rato' (did you mean 'ratio'?).",
     "Fix the field or re-save the project from Workbench."),
    # a top-level or model.* unknown field was ignored silently (Project and ModelRef allowed extras)
    (lambda d: d.update(analysis_sample=8),
     "invalid project field analysis_sample: unknown field 'analysis_sample' (did you mean 'analysis_samples'?).",
     "Fix the field or re-save the project from Workbench."),
    (lambda d: d["model"].update(externl_data=[]),
     "invalid project field model.externl_data: unknown field 'externl_data' (did you mean 'external_data'?).",
     "Fix the field or re-save the project from Workbench."),
    (lambda d: d.update(favourite_colour="red"),
     "invalid project field favourite_colour: unknown field 'favourite_colour'.",
     "Fix the field or re-save the project from Workbench."),
    (lambda d: d.update(export={"colour": "red"}),  # nothing close: no guess
     "invalid project field export.colour: unknown field 'colour'.",
     "Fix the field or re-save the project from Workbench."),
])
def test_a_hand_edited_project_names_the_field_and_what_to_do(tmp_path, edit, message, hint):
    path = _edited(tmp_path, edit)
    with pytest.raises(ProjectError) as err:
        load_project(path, check_model=False)
    assert err.value.message == f"{path}: {message}"
    assert err.value.hint == hint
    assert "Extra inputs" not in str(err.value) and "Field required" not in str(err.value)
