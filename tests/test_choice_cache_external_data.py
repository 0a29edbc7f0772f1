"""The recipe choice cache names a model by its file's sha256 and by its external data files' : retrained weights
saved beside the same graph file (the .onnx bytes unchanged) reused the old weights' choice and its calibration
ranges (digits_cnn with its Conv weights x3: 0.65 dB output SQNR in ``analyze``, 43.70 dB chosen afresh)."""

from __future__ import annotations

import hashlib

from external_data_models import save_external

from workbench import cli_choice_cache
from workbench.cli import main
from workbench.core import api


def test_new_weights_beside_the_same_graph_file_are_not_the_cached_model(corpus, tmp_path, monkeypatch, capsys):
    cnn = corpus / "digits_cnn"
    save_external(cnn / "model_opset17.onnx", tmp_path / "a", 1.0)
    save_external(cnn / "model_opset17.onnx", tmp_path / "b", 3.0)
    model = tmp_path / "a" / "m.onnx"
    assert model.read_bytes() == (tmp_path / "b" / "m.onnx").read_bytes()  # only the .data files differ
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    common = [str(model), "--data", str(cnn / "calib.npz"), "--samples", "32", "--no-latency-check"]
    assert main(["quantize", *common, "-o", str(tmp_path / "q.onnx")]) == 0
    (tmp_path / "a" / "m.onnx.data").write_bytes((tmp_path / "b" / "m.onnx.data").read_bytes())  # retrained
    capsys.readouterr()
    assert main(["analyze", *common, "--eval-samples", "8"]) == 0
    chose = [line for line in capsys.readouterr().err.splitlines() if line.startswith("recipe choice")]
    assert len(chose) == 1 and "reused from an earlier run" not in chose[0]


def test_the_key_holds_each_external_data_file_digest(corpus, tmp_path):
    cnn = corpus / "digits_cnn"
    save_external(cnn / "model_opset17.onnx", tmp_path / "a", 1.0)
    model = api.open_model(tmp_path / "a" / "m.onnx")
    data = (tmp_path / "a" / "m.onnx.data").read_bytes()
    assert cli_choice_cache.external_digests(model) == [["m.onnx.data", hashlib.sha256(data).hexdigest()]]
    assert cli_choice_cache.external_digests(api.open_model(cnn / "model_opset17.onnx")) == []
    recipe = api.Recipe()
    first = cli_choice_cache.entry_path(model, recipe, str(cnn / "calib.npz"), 8)
    (tmp_path / "a" / "m.onnx.data").write_bytes(data[:-4] + b"\0\0\0\0")
    assert cli_choice_cache.entry_path(model, recipe, str(cnn / "calib.npz"), 8) not in (first, None)
    (tmp_path / "a" / "m.onnx.data").unlink()
    assert cli_choice_cache.entry_path(model, recipe, str(cnn / "calib.npz"), 8) is None  # cannot be read
