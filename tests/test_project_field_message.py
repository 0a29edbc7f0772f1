"""A project whose recipe fails one of our validators reads like a recipe file would: the field and our
text, without pydantic's 'Value error, ' prefix or a doubled full stop."""

from __future__ import annotations

import json

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
