"""``convert`` of a file ``quantize`` wrote with every unit float (the latency check on a quiet Intel Xeon kept
digits_cnn float: "quantization does not pay at this size"). It said "Quantize the float model first (workbench-cli
quantize model.int8.onnx ...)", naming that file as the float model to quantize, which the latency check would
write float again; it now says where the file came from and to pass --no-latency-check."""

from __future__ import annotations

from workbench.cli import main


def test_convert_of_a_file_quantize_wrote_float_says_no_latency_check(digits_cnn_written_float, tmp_path, capsys):
    model, out = digits_cnn_written_float
    assert main(["convert", str(out), str(tmp_path / "q.qonnx.onnx"), "--to", "qonnx"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"error: {out} has no quantization nodes: nothing to convert to qonnx. workbench-cli quantize wrote "
                   "it with every unit float (the latency check or the recipe kept them float); quantize the float "
                   "model with --no-latency-check (workbench-cli quantize FLOAT.onnx --data calib.npz "
                   "--no-latency-check --format qonnx -o OUT.onnx). Nothing written.")
    assert not (tmp_path / "q.qonnx.onnx").exists()
    assert main(["convert", str(model), str(tmp_path / "f.onnx"), "--to", "qonnx"]) == 2
    assert "Quantize the float model first" in capsys.readouterr().err  # a float model of its own: as before
