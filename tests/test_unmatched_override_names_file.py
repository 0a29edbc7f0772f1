"""A --recipe file's override naming no node of the model is warned about in a line that names the file, as the
file's other errors are ('warning: recipe override 'nosuch' names no node ...' named no file). A --exclude typed on
the command line adds no override and its line names no file."""

from __future__ import annotations

import json

from workbench.cli import main

CASE = "01_shared_bias_valueinfo_name"
TAIL = "recipe override 'nosuch' names no node of the model; use a name shown by `workbench-cli inspect`"


def _warnings(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]


def _quantize(cases, tmp_path, *extra: str) -> int:
    return main(["quantize", str(cases / f"{CASE}.onnx"), "--data", str(cases / f"{CASE}.npz"), *extra,
                 "-o", str(tmp_path / "q.onnx"), "--no-latency-check", "--no-auto"])


def test_the_override_warning_names_the_recipe_file(cases, tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"overrides": {"nosuch": {"exclude": True}}}))
    assert _quantize(cases, tmp_path, "--recipe", str(path)) == 0
    assert _warnings(capsys) == [f"warning: {path}: {TAIL}"]
    assert (tmp_path / "q.onnx").exists()


def test_a_command_line_exclude_names_no_file(cases, tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"preset": "cpu-u8s8"}))
    assert _quantize(cases, tmp_path, "--recipe", str(path), "--exclude", "zz") == 0
    warnings = _warnings(capsys)
    assert len(warnings) == 1 and warnings[0].startswith("warning: exclude 'zz' matches no node name of the model")
