"""``quantize PROJECT.wbproj --model NEW.onnx --format qdq`` (retarget) of a project whose recipe asks for
QONNX-only dtypes is refused before any calibration, like the plain and replayed cases
(test_cli_qdq_only_early): one line naming the unit and the project's recipe field, exit 2, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main
from workbench.core import api


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


RECIPE = {"preset": "cpu-u8s8", "target": "qonnx", "rules": [{"op_type": "Conv", "activation": {"dtype": "uint6"}}]}


def _conv_model(path: Path, seed: int) -> Path:
    """A one-Conv model (x [N, 3, 8, 8] -> y [N, 4, 8, 8]); ``seed`` picks its weights (a retrained version)."""
    w = numpy_helper.from_array(np.random.default_rng(seed).normal(size=(4, 3, 3, 3)).astype(np.float32), "W")
    node = helper.make_node("Conv", ["x", "W"], ["y"], name="conv", pads=[1, 1, 1, 1])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 8, 8])], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def _project(folder: Path) -> Path:
    model = _conv_model(folder / "m.onnx", seed=0)
    np.savez(folder / "calib.npz", x=np.random.default_rng(2).random((8, 1, 3, 8, 8)).astype(np.float32))
    (folder / "r.json").write_text(json.dumps(RECIPE))
    project = folder / "p.wbproj"
    assert main(["quantize", str(model), "--data", str(folder / "calib.npz"), "--recipe", str(folder / "r.json"),
                 "--format", "qonnx", "-o", str(folder / "q6.onnx"), "--save-project", str(project)]) == 0
    return project


def _no_calibration(monkeypatch) -> None:
    def boom(*_a, **_k):
        raise AssertionError("calibrated or quantized before refusing")

    for name in ("quantize", "calibrate", "replay_project", "retarget_project", "choose_recipe"):
        monkeypatch.setattr(api, name, boom)


def test_retarget_qdq_refused_before_calibrating(tmp_path, capsys, monkeypatch):
    project = _project(tmp_path)
    new = _conv_model(tmp_path / "m_v2.onnx", seed=1)  # retrained: other weights, so a retarget, not a move
    capsys.readouterr()
    before = sorted(p.name for p in tmp_path.iterdir())
    _no_calibration(monkeypatch)
    code = main(["quantize", str(project), "--model", str(new), "--format", "qdq", "-o", str(tmp_path / "q.onnx")])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err.splitlines() == [
        "error: A QDQ file cannot hold the QONNX-only dtypes of 1 node unit: conv (activation uint6). "
        f"{project} sets them in recipe.rules[0].activation.dtype: export with --format qonnx, or change that dtype "
        "to one QDQ holds (int8, uint8, int4, uint4, int16, uint16)."]
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_retarget_qonnx_of_the_same_project_still_runs(tmp_path, capsys):
    """The early refusal is for QDQ only: --format qonnx retargets and writes the file."""
    project = _project(tmp_path)
    new = _conv_model(tmp_path / "m_v2.onnx", seed=1)
    out = tmp_path / "q_v2.onnx"
    assert main(["quantize", str(project), "--model", str(new), "--format", "qonnx", "-o", str(out)]) == 0
    quant = onnx.load(str(out))
    assert sum(n.op_type == "Quant" for n in quant.graph.node) >= 1
