"""``analyze`` / ``sweep`` / ``report`` / ``autotune`` / ``render --colour sqnr`` on a QONNX file point to a command that
runs: they said 'run workbench-cli compare FLOAT.onnx q.qonnx.onnx --data ...', which refuses a QONNX file
(onnxruntime cannot run its Quant nodes). Now the hint converts it to QDQ first, and the commands it names run."""

from __future__ import annotations

import re

import pytest

from workbench.cli import main


@pytest.fixture
def qonnx_file(corpus, tmp_path, capsys):
    folder = corpus / "digits_cnn"
    qonnx = tmp_path / "q.qonnx.onnx"
    assert main(["quantize", str(folder / "model_opset17.onnx"), "--data", str(folder / "calib.npz"), "--no-auto",
                 "--no-latency-check", "--format", "qonnx", "-o", str(qonnx)]) == 0
    capsys.readouterr()
    return folder, qonnx


@pytest.mark.parametrize("verb", [["analyze"], ["sweep"], ["report", "-o", "r.html"], ["autotune", "--eval", "EVAL", "-o", "t.onnx"],
                                  ["render", "--colour", "sqnr", "-o", "p.png"]])
def test_the_hint_for_a_qonnx_file_converts_it_first(qonnx_file, tmp_path, capsys, monkeypatch, verb):
    folder, qonnx = qonnx_file
    monkeypatch.chdir(tmp_path)
    data = str(folder / "calib.npz")
    rest = [str(folder / "eval.npz") if a == "EVAL" else a for a in verb[1:]]
    assert main([verb[0], str(qonnx), "--data", data, *rest]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "a QONNX file" in err and "onnxruntime cannot run QONNX" in err, err
    assert f"workbench-cli convert {qonnx} OUT.onnx --to qdq" in err and "compare FLOAT.onnx " + str(qonnx) not in err
    # the commands it names run: convert, then compare (or render --compare) the QDQ file against the float model
    assert main(["convert", str(qonnx), "OUT.onnx", "--to", "qdq"]) == 0
    follow = re.search(r"then run workbench-cli (\S+) FLOAT\.onnx (.*?)(;|$)", err).group(1, 2)
    argv = [follow[0], str(folder / "model_opset17.onnx"), *follow[1].split()]
    if follow[0] == "compare":
        assert argv[2:] == ["OUT.onnx", "--data", str(folder / "eval.npz") if "EVAL" in verb else data]
    else:
        assert argv[2:] == ["--compare", "OUT.onnx", "--data", data, "-o", "p.png"]
        argv[-1] = "p.svg"  # the picture: a smaller check than a PNG, the same command
    assert main(argv) == 0, capsys.readouterr().err
