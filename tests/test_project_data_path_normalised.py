"""A project's relative data path is resolved against its folder and normalised: a replay with --model on
another model printed the data as '.../out/../../../../../work/...'."""

from __future__ import annotations

import os

from workbench.cli import main
from workbench.core import api


def test_a_replay_names_the_project_data_by_its_normalised_path(corpus, tmp_path, capsys):
    cnn, mlp = corpus / "digits_cnn", corpus / "digits_mlp" / "model_opset17.onnx"
    out = tmp_path / "out"
    out.mkdir()
    proj = out / "p.wbproj"
    assert main(["quantize", str(cnn / "model_opset17.onnx"), "--data", str(cnn / "calib.npz"), "--samples", "8",
                 "--no-latency-check", "-o", str(out / "q.onnx"), "--save-project", str(proj)]) == 0
    saved = api.load_project(proj, check_model=False)
    assert saved.data["path"].startswith("..")  # saved relative to the project's folder
    data = os.path.realpath(cnn / "calib.npz")
    assert saved.data_spec(proj)["path"] == data
    assert [str(p) for p in saved.input_paths(proj)][2] == data
    capsys.readouterr()
    assert main(["quantize", str(proj), "--model", str(mlp), "-o", str(out / "q2.onnx")]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert len(err) == 1 and err[0].startswith(f"error: {data}: array 'input' for input 'input' has shape ")
