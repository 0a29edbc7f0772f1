"""One rule for a project's external .data files (``check_external_data``): the retarget and ``is_project_model``
share it, so a project that recorded none (saved before they were recorded) of a model with external data is
not taken as its model by either (is_project_model accepted it, the retarget did not); and retargeting onto the
project's own model file hashes each .data file once (twice before: the old model, then the new project)."""

from __future__ import annotations

import hashlib
import json

from external_data_models import save_external

from workbench import cli
from workbench.core import api
from workbench.core.model import external_identity as identity_module


def _project(corpus, tmp_path):
    cnn = corpus / "digits_cnn"
    save_external(cnn / "model_opset17.onnx", tmp_path / "m", 1.0)
    model, proj = tmp_path / "m" / "m.onnx", tmp_path / "job.wbproj"
    assert cli.main(["quantize", str(model), "--data", str(cnn / "calib.npz"), "--samples", "32", "-o",
                     str(tmp_path / "a.onnx"), "--save-project", str(proj), "--no-auto", "--no-latency-check"]) == 0
    return model, proj


def test_retarget_onto_the_own_model_hashes_each_data_file_once(corpus, tmp_path, capsys, monkeypatch):
    model, proj = _project(corpus, tmp_path)
    hashed: list[str] = []
    real = identity_module.sha256_file
    monkeypatch.setattr(identity_module, "sha256_file", lambda p: hashed.append(p.name) or real(p))
    capsys.readouterr()
    assert cli.main(["quantize", str(proj), "--model", str(model), "--data", str(corpus / "digits_cnn" / "calib.npz"),
                     "--samples", "32", "-o", str(tmp_path / "r.onnx"), "--save-project", str(tmp_path / "r.wbproj")]) == 0
    assert hashed == ["m.onnx.data"]
    assert "5 ranges kept (same tensor), 0 dropped" in capsys.readouterr().out
    digest = hashlib.sha256((tmp_path / "m" / "m.onnx.data").read_bytes()).hexdigest()
    assert json.loads((tmp_path / "r.wbproj").read_text())["model"]["external_data"] == [["m.onnx.data", digest]]


def _unrecorded(proj):
    """``proj`` as a Workbench that recorded no external data files saved it."""
    doc = json.loads(proj.read_text())
    del doc["model"]["external_data"]
    proj.write_text(json.dumps(doc))


def test_a_project_that_recorded_no_external_data_is_not_taken_as_its_model(corpus, tmp_path, capsys):
    model, proj = _project(corpus, tmp_path)
    assert api.is_project_model(proj, model)
    _unrecorded(proj)
    assert not api.is_project_model(proj, model)  # True before: a replay then used ranges of unchecked weights
    rt, _ = api.retarget_to_model(proj, api.open_model(model))
    assert (len(rt.kept_ranges), len(rt.dropped_ranges), rt.structure) == (0, 5, False)
    capsys.readouterr()
    # --model on such a project retargets (the ranges calibrated again from the project's data) ...
    assert cli.main(["quantize", str(proj), "--model", str(model), "-o", str(tmp_path / "r.onnx")]) == 0
    assert "0 ranges kept (same tensor), 5 dropped" in capsys.readouterr().out
    # ... and its plain replay still runs, as projects without the optional fields always did
    assert cli.main(["quantize", str(proj), "-o", str(tmp_path / "p.onnx")]) == 0
    assert (tmp_path / "p.onnx").read_bytes() == (tmp_path / "r.onnx").read_bytes() == (tmp_path / "a.onnx").read_bytes()


def test_a_model_without_external_data_matches_a_project_that_recorded_none(corpus, tmp_path, capsys):
    cnn = corpus / "digits_cnn"
    proj = tmp_path / "job.wbproj"
    assert cli.main(["quantize", str(cnn / "model_opset17.onnx"), "--data", str(cnn / "calib.npz"), "--samples", "16",
                     "-o", str(tmp_path / "a.onnx"), "--save-project", str(proj), "--no-auto",
                     "--no-latency-check"]) == 0
    assert "external_data" not in json.loads(proj.read_text())["model"]
    assert api.is_project_model(proj, cnn / "model_opset17.onnx")
    rt, _ = api.retarget_to_model(proj, api.open_model(cnn / "model_opset17.onnx"))
    assert rt.structure and len(rt.kept_ranges) == 5 and rt.dropped_ranges == []
