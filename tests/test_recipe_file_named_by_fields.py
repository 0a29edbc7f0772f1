"""Whether a CLI line names the --recipe file is decided on the error's / warning's fields (``RecipeError.field``
and ``entry``, ``PlanIssue.recipe_field``), not on its text: a recipe file whose path happens to appear in the
message (a file named like a node or an op type) was not named, as if the message named it already."""

from __future__ import annotations

import json

from workbench.cli import main
from workbench.core.issues import IssueCode
from workbench.core.model.load import load_model
from workbench.core.planning.plan import unmatched_entries
from workbench.core.recipe.recipe import Recipe
from workbench.core.recipe.spec import NodeSettings, Rule

CASE = "24_empty_and_duplicate_node_names"
TAIL = ("name 'dup' matches 2 nodes (dup_0, dup_1): use the unique names. The model had duplicate node names; "
        "the loader renamed them.")


def _errors(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]


def test_a_recipe_file_named_like_a_node_in_the_message_is_named(cases, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dup_0").write_text(json.dumps({"overrides": {"dup": {"exclude": True}}}))
    assert main(["quantize", str(cases / f"{CASE}.onnx"), "--data", str(cases / f"{CASE}.npz"), "--recipe", "dup_0",
                 "-o", "q.onnx", "--no-latency-check"]) == 2
    assert _errors(capsys) == [f"error: dup_0: recipe override: {TAIL}"]  # before: 'error: recipe override: ...'


def test_the_file_s_exclude_is_named_beside_an_other_command_line_exclude(cases, tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"exclude": ["dup"]}))
    assert main(["quantize", str(cases / f"{CASE}.onnx"), "--data", str(cases / f"{CASE}.npz"), "--recipe", str(path),
                 "--exclude", "dup_0", "-o", str(tmp_path / "q.onnx"), "--no-latency-check"]) == 2
    assert _errors(capsys) == [f"error: {path}: recipe exclude: {TAIL}"]


def test_unmatched_entries_say_their_recipe_field(cases):
    model = load_model(str(cases / f"{CASE}.onnx"))
    recipe = Recipe(rules=[Rule(op_type="Cnv", exclude=True)],
                    overrides={"nosuch": NodeSettings(exclude=True)}, exclude=["zz*"], op_types=["Cnv"])
    issues = unmatched_entries(model.proto, recipe)
    assert [(i.code, i.recipe_field) for i in issues] == [(IssueCode.UNMATCHED_RECIPE_ENTRY, f)
                                                          for f in ("rules", "overrides", "exclude", "op_types")]



def test_every_unmatched_entry_of_the_file_names_the_file_and_an_exclude_option_does_not(cases, tmp_path, capsys):
    """A rule, an exclude pattern and an op type of the --recipe file that match nothing are said with the file's
    name, as an override was (before: only the override's line named it); a --exclude pattern is not the file's."""
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"rules": [{"op_type": "Cnv", "exclude": True}], "exclude": ["zz*"],
                                "overrides": {"nosuch": {"exclude": True}}, "op_types": ["Gemm", "Cnv"]}))
    assert main(["cost", str(cases / "06_gemm_bias_2d.onnx"), "--recipe", str(path), "--exclude", "yy*"]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert [line.split(" (")[0].split(";")[0] for line in warned] == [
        f"warning: {path}: recipe rules[0]",
        f"warning: {path}: recipe override 'nosuch' names no node of the model",
        f"warning: {path}: exclude 'zz*' matches no node name of the model, so it keeps nothing float",
        "warning: exclude 'yy*' matches no node name of the model, so it keeps nothing float",
        f"warning: {path}: recipe op_types entry 'Cnv' is not an op type of the model"]
