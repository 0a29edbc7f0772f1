"""onnxruntime's own log lines never reach stderr: a model that fails to run in a session Workbench made is
reported in Workbench's words only (nudenet_320n without --data: its random sample, unknown dims set to 1,
fails in '/model.11/Concat')."""

from __future__ import annotations

import onnx

from workbench.cli import main


def test_quantize_and_analyze_without_data_print_one_error_line(corpus, tmp_path, capfd):
    """onnxruntime printed '[E:onnxruntime:, sequential_executor.cc:677 ExecuteKernel] ... Non concat axis
    dimensions must match' (session log level error) before the one-line refusal."""
    model = corpus / "nudenet_320n" / "model.onnx"
    beside = f"{corpus / 'nudenet_320n' / 'calib.npz'}"
    capfd.readouterr()
    assert main(["quantize", str(model), "-o", str(tmp_path / "q.onnx")]) == 2
    assert capfd.readouterr().err.splitlines() == [
        f"error: Recipe preset 'cpu-u8s8' needs calibration data. No --data given; {beside} is beside the model: "
        f"add --data {beside}."]
    assert main(["analyze", str(model)]) == 2
    err = capfd.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "onnxruntime" not in err[0]
    assert not (tmp_path / "q.onnx").exists()


def test_latency_not_measured_at_unknown_dims_says_why_in_plain_words(corpus, tmp_path, capfd):
    """The note quoted onnxruntime ('[ONNXRuntimeError] : 1 : FAIL : ...') without saying that the random
    sample had the model's unknown dims set to 1, nor what to do."""
    model, out = corpus / "nudenet_320n" / "model.onnx", tmp_path / "dyn.onnx"
    capfd.readouterr()
    assert main(["quantize", str(model), "--preset", "dynamic-u8", "-o", str(out)]) == 0
    err = capfd.readouterr().err.splitlines()
    notes = [line for line in err if "latency not measured" in line]
    assert notes == [
        "note: latency not measured: without --data it runs on a random sample with the model's unknown dims "
        "(batch, height, width) set to 1, and the model cannot run at that size (onnxruntime: Non-zero status "
        "code returned while running Concat node. Name:'/model.11/Concat' Status Message: concatbase.h:135 "
        "PrepareForComputeImpl Non concat axis dimensions must match: Axis 2 has mismatched dimensions of 1 and "
        "2); give --data (samples of the real input size) to measure it"]
    assert not [line for line in err if "[E:onnxruntime" in line or "ONNXRuntimeError" in line]
    assert sum(n.op_type == "DynamicQuantizeLinear" for n in onnx.load(str(out)).graph.node) > 0
