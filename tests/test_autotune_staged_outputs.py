"""``autotune`` writes its model, curve and recipe together: an interrupt before the last lands leaves
none of them (it wrote the curve first, then the model, then the recipe)."""

from __future__ import annotations

import json

import onnx

from workbench.cli import main
from workbench.core import api


def _args(corpus, tmp_path) -> tuple[list[str], list]:
    cnn = corpus / "digits_cnn"
    outs = [tmp_path / "tuned.onnx", tmp_path / "curve.json", tmp_path / "recipe.json"]
    argv = ["autotune", str(cnn / "model_opset17.onnx"), "--data", str(cnn / "calib.npz"), "--samples", "8",
            "--eval", str(cnn / "eval.npz"), "--eval-samples", "16", "--metric", "top1", "--max-drop", "0.5",
            "-o", str(outs[0]), "--curve-json", str(outs[1]), "--recipe-out", str(outs[2])]
    return argv, outs


def test_an_interrupt_while_writing_leaves_no_output(corpus, tmp_path, monkeypatch, capsys):
    argv, outs = _args(corpus, tmp_path)

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "export", interrupted)  # the model: the last write
    assert main(argv) == 130
    assert capsys.readouterr().err.strip().splitlines()[-1] == "error: interrupted; nothing was written."
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no output and no temporary file


def test_all_three_land_when_nothing_interrupts(corpus, tmp_path, capsys):
    argv, outs = _args(corpus, tmp_path)
    assert main(argv) in (0, 1)
    onnx.checker.check_model(onnx.load(str(outs[0])))
    assert json.loads(outs[1].read_text())["curve"]
    assert api.Recipe.from_json(outs[2].read_text()).preset
    assert sorted(p.name for p in tmp_path.iterdir()) == ["curve.json", "recipe.json", "tuned.onnx"]
