"""An output named against what it holds (an ONNX model as out.txt, a project as p.json) is written as
named, with one warning line on stderr; a right name gets none."""

from __future__ import annotations

import onnx
import pytest

from workbench.cli import main


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning:") and "does not end in" in line]


def test_quantize_to_a_txt_name_warns_and_writes_onnx(corpus, tmp_path, capsys):
    mlp = corpus / "digits_mlp"
    model, data = str(mlp / "model_opset17.onnx"), str(mlp / "calib.npz")
    out, proj = tmp_path / "out.txt", tmp_path / "p.json"
    assert main(["quantize", model, "--data", data, "--samples", "8", "--no-auto", "-o", str(out),
                 "--save-project", str(proj)]) == 0
    assert _warnings(capsys.readouterr().err) == [
        f"warning: {out} will hold an ONNX model but its name does not end in .onnx (it is written as named; "
        "other tools may not open it)",
        f"warning: {proj} will hold a Workbench project but its name does not end in .wbproj (it is written as "
        "named; other tools may not open it)"]
    onnx.checker.check_model(onnx.load(str(out)))
    assert proj.is_file()
    good = tmp_path / "OUT.ONNX"
    assert main(["quantize", model, "--data", data, "--samples", "8", "--no-auto", "-o", str(good),
                 "--save-project", str(tmp_path / "p.wbproj")]) == 0
    assert _warnings(capsys.readouterr().err) == []
    qonnx = tmp_path / "q.qonnx"
    assert main(["convert", str(good), str(qonnx), "--to", "qonnx"]) == 0
    assert _warnings(capsys.readouterr().err) == [
        f"warning: {qonnx} will hold an ONNX model but its name does not end in .onnx (it is written as named; "
        "other tools may not open it)"]
    assert onnx.load(str(qonnx)).graph.node
