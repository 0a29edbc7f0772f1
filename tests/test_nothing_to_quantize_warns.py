"""quantize of a model where the recipe finds no node unit at all (a Relu-only model; case 17's fp32 model whose
fp16 weights sit behind Cast nodes under dynamic-u8 or w4-block: "Gemm has no constant float weight") wrote a copy
of the input, exit 0, ending "wrote OUT (0 of 0 node units quantized, preset ...)" with no warning; the warning a
model whose units were all kept float gets ("no node unit is quantized") was only given when there were units.
Now one ``warning:`` says the recipe quantizes no node of the model and that the file written computes in float."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from workbench.cli import main


def _relu_model(path) -> None:
    g = helper.make_graph([helper.make_node("Relu", ["X"], ["Y"], name="r")], "g",
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(path))


def _cast_weight_gemm(path) -> None:
    """The Gemm's weight computed in the graph (Cast of the input G16, no constant float weight for a dynamic or
    weight-only preset). A Cast of an fp16 initializer is folded at load since tests/test_fp16_weights_behind_casts.py."""
    nodes = [helper.make_node("Cast", ["G16"], ["G"], name="cast_G", to=TensorProto.FLOAT),
             helper.make_node("Gemm", ["X", "G"], ["Y"], name="fc", transB=1)]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 16]),
                                       helper.make_tensor_value_info("G16", TensorProto.FLOAT16, [10, 16])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 10])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(path))


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("warning:")]


def test_a_model_without_units_warns_that_nothing_is_quantized(tmp_path, capsys):
    model = tmp_path / "relu.onnx"
    _relu_model(model)
    np.savez(tmp_path / "calib.npz", X=np.random.default_rng(0).random((8, 1, 4)).astype(np.float32))
    out = tmp_path / "relu.q.onnx"
    assert main(["quantize", str(model), "--data", str(tmp_path / "calib.npz"), "-o", str(out),
                 "--no-latency-check"]) == 0
    captured = capsys.readouterr()
    assert _warnings(captured.err) == [
        f"warning: no node unit is quantized: the recipe (preset cpu-u8s8) quantizes no node of {model}, so the "
        "written model computes in float like the input; workbench-cli presets lists the other presets"]
    assert "(0 of 0 node units quantized, preset cpu-u8s8)" in captured.out
    assert out.exists()


def test_weights_behind_casts_under_a_dynamic_preset_warn_after_the_notes(tmp_path, capsys):
    model = tmp_path / "cast.onnx"
    _cast_weight_gemm(model)
    assert main(["quantize", str(model), "--preset", "dynamic-u8", "-o", str(tmp_path / "d.onnx"),
                 "--no-latency-check"]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith(("note: fc", "warning:"))]
    assert lines[0].startswith("note: fc: Gemm has no constant float weight")  # the reason, above the warning
    assert lines[1:] == [
        f"warning: no node unit is quantized: the recipe (preset dynamic-u8) quantizes no node of {model} (the reasons "
        "are above), so the written model computes in float like the input; workbench-cli presets lists the other "
        "presets"]
