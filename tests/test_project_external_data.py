"""A project records the sha256 of its model's external data files beside the model file's and checks them on
replay: retrained weights saved beside the same graph file (the .onnx bytes unchanged) were quantized with the
project's stale calibration ranges (digits_cnn, Conv weights x3: 0.67 dB output SQNR, no message)."""

from __future__ import annotations

import hashlib
import json

from external_data_models import save_external

from workbench.cli import main


def _quantize(corpus, tmp_path, model, *more) -> int:
    cnn = corpus / "digits_cnn"
    return main(["quantize", str(model), "--data", str(cnn / "calib.npz"), "--samples", "16", "--no-latency-check",
                 "--no-auto", *more])


def test_replay_refuses_changed_external_weights(corpus, tmp_path, capsys):
    cnn = corpus / "digits_cnn"
    save_external(cnn / "model_opset17.onnx", tmp_path / "a", 1.0)
    save_external(cnn / "model_opset17.onnx", tmp_path / "b", 3.0)
    model, data, project = tmp_path / "a" / "m.onnx", tmp_path / "a" / "m.onnx.data", tmp_path / "p.wbproj"
    assert _quantize(corpus, tmp_path, model, "-o", str(tmp_path / "q.onnx"), "--save-project", str(project)) == 0
    recorded = hashlib.sha256(data.read_bytes()).hexdigest()
    assert json.loads(project.read_text())["model"]["external_data"] == [["m.onnx.data", recorded]]
    assert main(["quantize", str(project), "-o", str(tmp_path / "r0.onnx")]) == 0  # unchanged: replayed
    data.write_bytes((tmp_path / "b" / "m.onnx.data").read_bytes())  # retrained, same graph file
    capsys.readouterr()
    assert main(["quantize", str(project), "-o", str(tmp_path / "r.onnx")]) == 2
    now = hashlib.sha256(data.read_bytes()).hexdigest()
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: {project}: the external data file {data} of the model changed since the project was saved "
        f"(sha256 {now[:12]}... != {recorded[:12]}...). Restore the original weights file, or apply the project "
        f"to the new model: workbench-cli quantize {project} --model NEW.onnx -o OUT.onnx (File > Apply Project "
        "to Model... in the app).")
    assert not (tmp_path / "r.onnx").exists()


def test_a_project_of_a_model_without_external_data_records_none(corpus, tmp_path):
    project = tmp_path / "p.wbproj"
    model = corpus / "digits_cnn" / "model_opset17.onnx"
    assert _quantize(corpus, tmp_path, model, "-o", str(tmp_path / "q.onnx"), "--save-project", str(project)) == 0
    assert sorted(json.loads(project.read_text())["model"]) == ["path", "sha256"]
