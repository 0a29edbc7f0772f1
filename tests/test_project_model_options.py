"""``quantize PROJECT.wbproj --model M.onnx`` with M the project's own model (same sha256): --recipe / --preset /
--exclude were ignored without a word (the replay brings its recipe), and so were --data / --samples (the replay
read the project's data, even when it had moved). The first are refused as on a plain replay; with --data or
--samples the project's recipe is applied to the model with that data, as for a new model."""

from __future__ import annotations

import shutil

import onnx

from workbench.cli import main


def _project(corpus, tmp_path):
    cnn = corpus / "digits_cnn"
    for name in ("model_opset17.onnx", "calib.npz"):
        shutil.copy(cnn / name, tmp_path / name)
    (tmp_path / "r.json").write_text('{"bias_correction": true}')  # its replay reads the data
    project = tmp_path / "p.wbproj"
    assert main(["quantize", str(tmp_path / "model_opset17.onnx"), "--data", str(tmp_path / "calib.npz"),
                 "--samples", "16", "--recipe", str(tmp_path / "r.json"), "--no-latency-check",
                 "-o", str(tmp_path / "q.onnx"), "--save-project", str(project)]) == 0
    return project


def test_a_recipe_option_beside_the_projects_own_model_is_refused(corpus, tmp_path, capsys):
    project = _project(corpus, tmp_path)
    capsys.readouterr()
    argv = ["quantize", str(project), "--model", str(tmp_path / "model_opset17.onnx"),
            "-o", str(tmp_path / "x.onnx")]
    for option in (["--recipe", str(tmp_path / "r.json")], ["--preset", "s8s8"], ["--exclude", "/f/*"]):
        assert main([*argv, *option]) == 2
        assert capsys.readouterr().err.strip().splitlines()[-1] == (
            f"error: {project}: {option[0]} does not apply to a replayed project: a project brings its own recipe. "
            "Drop it to replay the project as saved, or quantize the .onnx model with it.")
    assert not (tmp_path / "x.onnx").exists()


def test_data_beside_the_projects_own_model_is_used(corpus, tmp_path, capsys):
    project = _project(corpus, tmp_path)
    (tmp_path / "calib.npz").rename(tmp_path / "moved.npz")
    out = tmp_path / "x.onnx"
    assert main(["quantize", str(project), "--model", str(tmp_path / "model_opset17.onnx"), "--data",
                 str(tmp_path / "moved.npz"), "-o", str(out)]) == 0
    ops = [n.op_type for n in onnx.load(str(out)).graph.node]
    assert ops.count("QuantizeLinear") >= 4 and ops.count("Conv") == 3


def test_no_latency_check_beside_a_project_is_refused(corpus, tmp_path, capsys):
    """A replay (or a retarget with --model) runs no latency check: --no-latency-check beside a project was
    ignored without a word while --recipe / --preset / --exclude are refused; now refused the same way."""
    project = _project(corpus, tmp_path)
    capsys.readouterr()
    for extra in ([], ["--model", str(tmp_path / "model_opset17.onnx")]):
        assert main(["quantize", str(project), *extra, "--no-latency-check", "-o", str(tmp_path / "x.onnx")]) == 2
        assert capsys.readouterr().err.strip().splitlines() == [
            f"error: {project}: --no-latency-check does not apply to a replayed project: a replay runs no latency "
            "check (the units it kept float when the project was saved stay float, as the project's recipe says). "
            "Drop it to replay the project as saved, or quantize the .onnx model with it to write those units "
            "quantized."]
    assert not (tmp_path / "x.onnx").exists()
