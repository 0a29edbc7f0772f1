"""Ctrl+C says whether the command's outputs are as they were: "nothing was written" only when every output
(-o, --json, --save-project, ...) has the mtime and size it had before the command ran."""

from __future__ import annotations

from workbench.cli import main
from workbench.core import api


def _argv(corpus, out):
    cnn = corpus / "digits_cnn"
    return ["quantize", str(cnn / "model_opset17.onnx"), "--data", str(cnn / "calib.npz"), "--samples", "8",
            "--no-auto", "--no-latency-check", "-o", str(out)]


def test_an_interrupt_before_any_write_says_nothing_was_written(corpus, tmp_path, monkeypatch, capsys):
    """It printed only 'error: interrupted.': a user could not tell whether q.onnx was the old file or not."""
    out = tmp_path / "q.onnx"
    out.write_bytes(b"an earlier output")

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "quantize", interrupted)
    assert main(_argv(corpus, out)) == 130
    assert capsys.readouterr().err.strip().splitlines() == ["error: interrupted; nothing was written."]
    assert out.read_bytes() == b"an earlier output"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.onnx"]


def test_an_interrupt_after_an_output_changed_does_not_say_so(corpus, tmp_path, monkeypatch, capsys):
    out = tmp_path / "q.onnx"

    def written_then_interrupted(*a, **k):
        out.write_bytes(b"written before the interrupt")
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "quantize", written_then_interrupted)
    assert main(_argv(corpus, out)) == 130
    assert capsys.readouterr().err.strip().splitlines() == ["error: interrupted."]
