"""``quantize --format qdq`` of a recipe asking for QONNX-only dtypes is refused before any calibration:
one line naming the units and the recipe field, exit 2, nothing written (plain model and replayed project)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from qdq_helpers import cli_model_files

from workbench.cli import main
from workbench.core import api


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


RECIPE = {"preset": "cpu-u8s8", "target": "qonnx", "rules": [{"op_type": "Conv", "activation": {"dtype": "uint6"}}]}


def _model(folder: Path) -> Path:
    path = cli_model_files(folder, "conv", row_axis=True)
    (folder / "r.json").write_text(json.dumps(RECIPE))
    return path


def _no_calibration(monkeypatch) -> None:
    def boom(*_a, **_k):
        raise AssertionError("calibrated or quantized before refusing")

    for name in ("quantize", "calibrate", "replay_project", "choose_recipe"):
        monkeypatch.setattr(api, name, boom)


def _check_refusal(capsys, code: int, field: str) -> None:
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert code == 2
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: A QDQ file cannot hold the QONNX-only dtypes of 1 node unit: conv "
                               "(activation uint6).")
    assert field in lines[0] and "--format qonnx" in lines[0]
    assert captured.out == ""


def test_quantize_qdq_refused_before_calibrating(tmp_path, capsys, monkeypatch):
    model = _model(tmp_path)
    _no_calibration(monkeypatch)
    out = tmp_path / "q.onnx"
    code = main(["quantize", str(model), "--data", str(tmp_path / "calib.npz"), "--recipe", str(tmp_path / "r.json"),
                 "--format", "qdq", "-o", str(out)])
    _check_refusal(capsys, code, f"{tmp_path / 'r.json'} sets them in rules[0].activation.dtype")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calib.npz", "m.onnx", "r.json"]


def test_project_replay_qdq_refused_before_replaying(tmp_path, capsys, monkeypatch):
    model = _model(tmp_path)
    project = tmp_path / "p.wbproj"
    assert main(["quantize", str(model), "--data", str(tmp_path / "calib.npz"), "--recipe", str(tmp_path / "r.json"),
                 "--format", "qonnx", "-o", str(tmp_path / "q6.onnx"), "--save-project", str(project)]) == 0
    capsys.readouterr()
    before = sorted(p.name for p in tmp_path.iterdir())
    _no_calibration(monkeypatch)
    code = main(["quantize", str(project), "--format", "qdq", "-o", str(tmp_path / "q.onnx")])
    _check_refusal(capsys, code, f"{project} sets them in recipe.rules[0].activation.dtype")
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_autotune_refused_before_calibrating(tmp_path, capsys, monkeypatch):
    """autotune writes QDQ only: it ran the whole tuning, then refused with "Export with --format qonnx", an
    option autotune does not have."""
    model = _model(tmp_path)
    rng = np.random.default_rng(1)
    np.savez(tmp_path / "eval.npz", x=rng.random((8, 1, 3, 8, 8)).astype(np.float32), gt_label=np.zeros((8, 1)))
    monkeypatch.setattr(api, "autotune", lambda *_a, **_k: (_ for _ in ()).throw(AssertionError("tuned first")))
    recipe = tmp_path / "r.json"
    code = main(["autotune", str(model), "--data", str(tmp_path / "calib.npz"), "--eval", str(tmp_path / "eval.npz"),
                 "--max-drop", "0.01", "--recipe", str(recipe), "-o", str(tmp_path / "a.onnx")])
    _check_refusal(capsys, code, f"{recipe} sets them in rules[0].activation.dtype: autotune writes QDQ files only: "
                                 "change that dtype to one QDQ holds (int8, uint8, int4, uint4, int16, uint16), or "
                                 f"quantize without tuning (workbench-cli quantize {model} --recipe {recipe} "
                                 "--format qonnx).")
    assert not (tmp_path / "a.onnx").exists()
