"""An interrupt after the model landed but before the job's other outputs did (``quantize --save-project``:
the project; ``autotune``: its curve and recipe) removes what landed: a job that ends in "error: interrupted."
leaves none of its outputs (minilm_l6_v2's model was left without its project by a Ctrl-C 13.3 s in)."""

from __future__ import annotations

import onnx
import pytest

from workbench.cli import main
from workbench.core.io.atomic import StagedWrite

OUTPUTS = ("q.onnx", "job.wbproj", "tuned.onnx", "curve.json", "recipe.json")


def _interrupt_on_commit(monkeypatch, after: int = 0) -> list:
    """StagedWrite.commit raises KeyboardInterrupt from its ``after``-th call on (earlier calls rename)."""
    calls = []
    real = StagedWrite.commit

    def commit(self):
        calls.append(self.path.name)
        if len(calls) > after:
            raise KeyboardInterrupt
        real(self)

    monkeypatch.setattr(StagedWrite, "commit", commit)
    return calls


def _quantize_args(corpus, tmp_path) -> list[str]:
    cnn = corpus / "digits_cnn"
    return ["quantize", str(cnn / "model_opset17.onnx"), "--data", str(cnn / "calib.npz"), "--samples", "8",
            "--no-auto", "--no-latency-check", "-o", str(tmp_path / "q.onnx"), "--save-project",
            str(tmp_path / "job.wbproj")]


def test_quantize_interrupted_before_the_project_landed_leaves_no_model(corpus, tmp_path, monkeypatch, capsys):
    calls = _interrupt_on_commit(monkeypatch)
    assert main(_quantize_args(corpus, tmp_path)) == 130
    assert calls == ["job.wbproj"]  # the model had landed
    assert capsys.readouterr().err.strip().splitlines()[-1] == "error: interrupted; nothing was written."
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no model, no project, no temporary file


def test_quantize_writes_both_when_nothing_interrupts(corpus, tmp_path):
    assert main(_quantize_args(corpus, tmp_path)) == 0
    onnx.checker.check_model(onnx.load(str(tmp_path / "q.onnx")))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.wbproj", "q.onnx"]


@pytest.mark.parametrize("after", [0, 1])
def test_autotune_interrupted_between_its_renames_leaves_none(corpus, tmp_path, monkeypatch, capsys, after):
    cnn = corpus / "digits_cnn"
    calls = _interrupt_on_commit(monkeypatch, after)
    argv = ["autotune", str(cnn / "model_opset17.onnx"), "--data", str(cnn / "calib.npz"), "--samples", "8",
            "--eval", str(cnn / "eval.npz"), "--eval-samples", "16", "--metric", "top1", "--max-drop", "0.5",
            "-o", str(tmp_path / "tuned.onnx"), "--curve-json", str(tmp_path / "curve.json"),
            "--recipe-out", str(tmp_path / "recipe.json")]
    assert main(argv) == 130
    assert calls == ["curve.json", "recipe.json"][:after + 1]
    assert capsys.readouterr().err.strip().splitlines()[-1] == "error: interrupted; nothing was written."
    assert sorted(p.name for p in tmp_path.iterdir()) == []
