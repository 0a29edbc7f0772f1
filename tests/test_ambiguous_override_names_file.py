"""Case 24: a --recipe file whose override names 'dup' (2 nodes of the model) is refused in one line that names the
file, as other errors about a recipe file's fields do ('error: recipe override: name 'dup' matches 2 nodes ...'
named no file). A --exclude typed on the command line is not the file's, so its line names no file."""

from __future__ import annotations

import json

import pytest

from workbench.cli import main

CASE = "24_empty_and_duplicate_node_names"
TAIL = ("name 'dup' matches 2 nodes (dup_0, dup_1): use the unique names. The model had duplicate node names; "
        "the loader renamed them.")


def _errors(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]


@pytest.mark.parametrize(("recipe", "where"), [
    ({"overrides": {"dup": {"exclude": True}}}, "override"),
    ({"exclude": ["dup"]}, "exclude"),
    ({"rules": [{"name": "dup", "activation": {"dtype": "uint16"}}]}, "rule name=dup"),
])
def test_the_line_names_the_recipe_file(cases, tmp_path, capsys, recipe, where):
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(recipe))
    out = tmp_path / "q.onnx"
    assert main(["quantize", str(cases / f"{CASE}.onnx"), "--data", str(cases / f"{CASE}.npz"), "--recipe", str(path),
                 "-o", str(out), "--no-latency-check"]) == 2
    assert _errors(capsys) == [f"error: {path}: recipe {where}: {TAIL}"]
    assert not out.exists()


def test_a_command_line_exclude_names_no_file(cases, tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"preset": "cpu-u8s8"}))
    assert main(["quantize", str(cases / f"{CASE}.onnx"), "--data", str(cases / f"{CASE}.npz"), "--recipe", str(path),
                 "--exclude", "dup", "-o", str(tmp_path / "q.onnx"), "--no-latency-check"]) == 2
    assert _errors(capsys) == [f"error: recipe exclude: {TAIL}"]
