"""A sweep's job stamp names the model's external data files by their sha256 as well as the model file:
``report --sweep-json`` took a sweep of other weights saved beside the same graph file (the .onnx bytes
unchanged) as a sweep of its own job."""

from __future__ import annotations

import hashlib
import json

from external_data_models import save_external

from workbench.cli import main
from workbench.core import api


def test_report_refuses_a_sweep_of_other_external_weights(corpus, tmp_path, monkeypatch, capsys):
    cnn = corpus / "digits_cnn"
    save_external(cnn / "model_opset17.onnx", tmp_path / "a", 1.0)
    save_external(cnn / "model_opset17.onnx", tmp_path / "b", 3.0)
    model, data = tmp_path / "a" / "m.onnx", tmp_path / "a" / "m.onnx.data"
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    common = [str(model), "--data", str(cnn / "calib.npz"), "--samples", "16", "--no-latency-check", "--no-auto"]
    sweep = tmp_path / "sweep.json"
    assert main(["sweep", *common, "--eval-samples", "4", "--json", str(sweep)]) == 0
    stamp = json.loads(sweep.read_text())["job"]
    assert stamp["external_data"] == [["m.onnx.data", hashlib.sha256(data.read_bytes()).hexdigest()]]
    data.write_bytes((tmp_path / "b" / "m.onnx.data").read_bytes())  # retrained weights, same graph file
    capsys.readouterr()
    out = tmp_path / "r.html"
    assert main(["report", *common, "--eval", str(cnn / "eval.npz"), "--eval-samples", "4", "--sweep-json",
                 str(sweep), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"error: {sweep}: the sweep was measured on another job than this report's: the model's "
                          "external data files (its weights) differ (another sha256).")
    assert not out.exists()


def test_a_model_without_external_data_keeps_its_stamp(corpus):
    model = api.open_model(corpus / "digits_cnn" / "model_opset17.onnx")
    stamp = api.sweep_job_stamp(model, api.Recipe(), None, 8)
    assert sorted(stamp) == ["data", "model", "recipe", "samples"]
    assert api.external_identity(model) == []
