"""Outputs never land on an input of the job (the replayed project included), and ``--allow-code``
lets ``quantize`` (and a project replay) run a Python data reader, as it does for ``evaluate``."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import onnx
import pytest
from qdq_helpers import save_matmul_model

from workbench.cli import main


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


RNG = np.random.default_rng(7)


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def job(tmp_path, capsys):
    model = save_matmul_model(tmp_path / "m.onnx", RNG)
    data = tmp_path / "calib.npz"
    np.savez(data, X=RNG.standard_normal((8, 4)).astype(np.float32))
    recipe = tmp_path / "r.json"
    recipe.write_text(json.dumps({"preset": "cpu-u8s8"}))
    project = tmp_path / "job.wbproj"
    assert main(["quantize", str(model), "--data", str(data), "--recipe", str(recipe), "-o",
                 str(tmp_path / "out.onnx"), "--save-project", str(project)]) == 0
    capsys.readouterr()
    return {"model": model, "data": data, "recipe": recipe, "project": project}


@pytest.mark.parametrize("target", ["project", "model", "data"])
@pytest.mark.parametrize("flag", ["-o", "--save-project"])
def test_replay_refuses_an_output_onto_any_input_of_the_project(job, capsys, target, flag):
    before = {k: _digest(p) for k, p in job.items()}
    argv = ["quantize", str(job["project"]), "-o", str(job["project"].parent / "again.onnx")]
    if flag == "-o":
        argv[3] = str(job[target])
    else:
        argv += ["--save-project", str(job[target])]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "this is an input file" in err[0] and job[target].name in err[0]
    assert {k: _digest(p) for k, p in job.items()} == before
    assert not (job["project"].parent / "again.onnx").exists()


@pytest.mark.parametrize("target", ["model", "data", "recipe"])
def test_quantize_refuses_an_output_onto_its_model_data_or_recipe(job, capsys, target):
    before = _digest(job[target])
    assert main(["quantize", str(job["model"]), "--data", str(job["data"]), "--recipe", str(job["recipe"]),
                 "-o", str(job[target])]) == 2
    assert "this is an input file" in capsys.readouterr().err
    assert _digest(job[target]) == before


def test_replay_refusal_comes_before_any_work(job, capsys, monkeypatch):
    from workbench.core import api

    def boom(*a, **k):  # the replay must not even start
        raise AssertionError("replay started")

    monkeypatch.setattr(api, "replay_project", boom, raising=False)
    assert main(["quantize", str(job["project"]), "-o", str(job["project"])]) == 2


# -- --allow-code: Python data readers --------------------------------------------------------

@pytest.fixture
def reader(tmp_path):
    model = save_matmul_model(tmp_path / "m.onnx", RNG)
    marker = tmp_path / "reader-ran"
    path = tmp_path / "reader.py"
    path.write_text("import numpy as np, pathlib\n"
                    f"pathlib.Path({str(marker)!r}).write_text('ran')\n"
                    "def samples():\n"
                    "    for i in range(4):\n"
                    "        yield {'X': np.full((1, 4), i - 1.5, np.float32)}\n")
    return model, path, marker


def test_quantize_without_allow_code_refuses_a_python_reader(reader, tmp_path, capsys):
    model, path, marker = reader
    assert main(["quantize", str(model), "--data", str(path), "-o", str(tmp_path / "o.onnx")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "reader.py" in err[0]
    assert not marker.exists() and not (tmp_path / "o.onnx").exists()


def test_quantize_with_allow_code_runs_the_reader_and_its_project_replays_with_it(reader, tmp_path, capsys):
    model, path, marker = reader
    proj = tmp_path / "job.wbproj"
    assert main(["quantize", str(model), "--data", str(path), "--allow-code", "-o", str(tmp_path / "o.onnx"),
                 "--save-project", str(proj)]) == 0
    assert marker.exists()
    onnx.checker.check_model(onnx.load(str(tmp_path / "o.onnx")))
    doc = json.loads(proj.read_text())
    assert doc["data"]["kind"] == "python" and doc["allow_code"] is False
    doc["calibration"] = None  # force the replay to read the data again
    proj.write_text(json.dumps(doc))
    marker.unlink()
    capsys.readouterr()
    # without --allow-code the saved project does not run code by itself
    assert main(["quantize", str(proj), "-o", str(tmp_path / "again.onnx")]) == 2
    assert "allow" in capsys.readouterr().err and not marker.exists()
    # with it, the replay runs the reader and gives the same model
    assert main(["quantize", str(proj), "-o", str(tmp_path / "again.onnx"), "--allow-code"]) == 0
    assert marker.exists()
    assert _digest(tmp_path / "again.onnx") == _digest(tmp_path / "o.onnx")


def test_project_whose_data_spec_says_allow_code_replays_with_allow_code(reader, tmp_path, capsys):
    from workbench.core import api

    model, path, marker = reader
    proj = api.new_project(model, api.make_recipe("cpu-u8s8"))
    proj.data = {"kind": "python", "path": str(path), "allow_code": True}
    api.save_project(proj, tmp_path / "p.wbproj")
    assert main(["quantize", str(tmp_path / "p.wbproj"), "-o", str(tmp_path / "p.onnx"), "--allow-code"]) == 0
    assert marker.exists() and (tmp_path / "p.onnx").is_file()


def test_analyze_replays_a_project_as_report_does(job, capsys):
    """``analyze PROJECT.wbproj`` measures the project's job (its recipe, calibration and data) and prints
    the same per-unit table as ``analyze`` on the model with the same recipe and data; it said 'not a
    readable ONNX model'. A recipe flag beside a project is refused in one line."""
    assert main(["analyze", str(job["model"]), "--data", str(job["data"]), "--recipe", str(job["recipe"])]) == 0
    direct = capsys.readouterr().out
    before = {k: _digest(p) for k, p in job.items()}
    assert main(["analyze", str(job["project"])]) == 0
    replayed = capsys.readouterr().out
    table = [line for line in direct.splitlines() if line.startswith(("node ", "mm"))]
    assert table and table == [line for line in replayed.splitlines() if line.startswith(("node ", "mm"))]
    assert {k: _digest(p) for k, p in job.items()} == before
    assert main(["analyze", str(job["project"]), "--preset", "s8s8"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "a project brings its own recipe" in err[0] and "analyze the .onnx model" in err[0]


def test_sweep_replays_a_project_and_states_what_it_swept(job, capsys):
    """``sweep PROJECT.wbproj`` sweeps the project's job (the one MatMul unit, its data), and its header
    names the quantized model it measured; a recipe flag beside a project is refused in one line."""
    assert main(["sweep", str(job["project"]), "--executor", "inline", "--eval-samples", "4"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("the quantized model (1 unit quantized): ") and "(4 samples;" in out[0]
    assert [line.split()[0] for line in out[2:-1]] == ["mm"]
    assert out[-1] == "(the one unit measured end to end)"
    assert main(["sweep", str(job["project"]), "--recipe", str(job["recipe"])]) == 2
    assert "a project brings its own recipe" in capsys.readouterr().err


@pytest.mark.parametrize("option", [["--preset", "s8s8"], ["--exclude", "mm"], ["--samples", "3"], ["--data", "DATA"],
                                    ["--recipe", "RECIPE"]])
def test_replay_refuses_options_it_would_ignore(job, capsys, option):
    """A replay writes the project's job; a recipe / data / sample option beside it was silently ignored
    (the written bytes equalled the plain replay's). Now one line names the option; nothing is written."""
    value = {"DATA": str(job["data"]), "RECIPE": str(job["recipe"])}.get(option[1], option[1])
    out = job["project"].parent / "again.onnx"
    assert main(["quantize", str(job["project"]), option[0], value, "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{option[0]} does not apply to a replayed project" in err[0]
    assert not out.exists()


def test_a_python_reader_without_allow_code_names_the_flag(job, tmp_path, capsys):
    reader = tmp_path / "reader.py"
    reader.write_text("def samples():\n    return []\n")
    assert main(["quantize", str(job["model"]), "--data", str(reader), "-o", str(tmp_path / "o.onnx")]) == 2
    err = capsys.readouterr().err
    assert "a Python reader must be opened explicitly" in err and "add --allow-code" in err


@pytest.mark.parametrize("verb", ["inspect"])
def test_inspect_names_the_model_of_a_project(job, capsys, verb):
    """It said the project was 'not a readable ONNX model ... Re-export the model' (``cost`` counts a project:
    tests/test_cli_cost_project.py)."""
    assert main([verb, str(job["project"])]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {job['project']} is a project, not a model; {verb} reads a model. Run workbench-cli "
                   f"{verb} {job['model']} (the model the project records)."]
