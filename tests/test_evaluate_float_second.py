"""``evaluate FLOAT OUT`` where OUT is what ``quantize`` wrote with every unit left float (the latency check on a
quiet Intel Xeon: digits_cnn measured 1.05x float quantized, "quantization does not pay at this size"). It
printed "SQNR inf" and equal metrics without a word, as if the quantized model were exact; it now warns that the
second file holds no quantized node and says how to get one."""

from __future__ import annotations

from workbench.cli import main


def test_evaluate_warns_when_the_second_file_is_not_quantized(digits_cnn_written_float, capsys):
    model, out = digits_cnn_written_float
    d = model.parent
    assert main(["evaluate", str(model), str(out), "--data", str(d / "eval.npz"),
                 "--samples", "8"]) == 0
    printed = capsys.readouterr()
    warnings = [line for line in printed.err.splitlines() if line.startswith("warning: ")]
    assert warnings == [
        f"warning: {out} holds no quantized node (no Q/DQ pair or integer kernel; `quantize` writes the float "
        "model when the latency check or the recipe keeps every unit float): the figures below compare two float "
        "models; `workbench-cli quantize --no-latency-check` writes the units the latency check kept float "
        "quantized"]
    assert " inf " in printed.out  # measured as given


def test_evaluate_of_a_quantized_second_file_has_no_such_warning(corpus, tmp_path, capsys, fake_latency):
    d = corpus / "digits_cnn"
    fake_latency.quantized_at(0.5)
    out = tmp_path / "q.onnx"
    assert main(["quantize", str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--samples", "8",
                 "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["evaluate", str(d / "model_opset17.onnx"), str(out), "--data", str(d / "eval.npz"),
                 "--samples", "8"]) == 0
    assert "warning" not in capsys.readouterr().err
