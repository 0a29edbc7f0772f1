"""The summary line (banner, ``inspect``) of a MatMulNBits file at each accuracy_level: onnxruntime's CPU kernel
quantizes the float activation to int8 per block only at level 4 (integer dot products); at 0 (unset), 1 (fp32),
2 (fp16: ARM64 with an fp16 input only) and 3 (bf16: no CPU kernel) it computes float32 on the dequantized weight."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from qdq_helpers import matmul_nbits_model

from workbench.cli import main
from workbench.core.inspection.quant_summary import summarize_quantization


@pytest.mark.parametrize("level", [None, 0, 1, 2, 3, 4])
def test_banner_of_matmul_nbits_follows_its_accuracy_level(tmp_path, capsys, level):
    """At level 4 the banner read 'weight-only: 1 MatMul float/uint4' though onnxruntime runs int8 x uint4 dot
    products; now 'dynamic: 1 MatMul int8/uint4' there, 'weight-only: 1 MatMul float/uint4' at 0 to 3. Checked
    against onnxruntime: its output equals the float32 product x @ W to float rounding at levels unset to 3 and
    carries the error of x quantized to int8 at level 4."""
    m, x, w = matmul_nbits_model(level)
    integer = level == 4
    s = summarize_quantization(m)
    assert s.text() == ("dynamic: 1 MatMul int8/uint4" if integer else "weight-only: 1 MatMul float/uint4")
    assert s.kinds == ({"dynamic": 1} if integer else {"weight_only": 1})
    assert s.kernels == ({"mm": "MatMulNBits"} if integer else {})
    assert s.compute == {"mm": "float/uint4"} and s.families == [("MatMul", 1)]
    y = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    err = float(np.abs(y - x @ w).max() / np.abs(x @ w).max())
    assert (err > 1e-4) if integer else (err < 1e-5), err
    path = tmp_path / "nbits.onnx"
    onnx.save(m, path)
    assert main(["inspect", str(path)]) in (0, None)
    out = capsys.readouterr().out
    assert f"summary:     {s.text()}\n" in out


@pytest.mark.parametrize("level", [0, 4])
def test_compare_says_an_accuracy_level_4_file_is_not_weight_only(tmp_path, capsys, level):
    """``compare`` printed '... is weight-only (float activations): 100% of the output noise comes from the
    weights' for a MatMulNBits file at accuracy_level 4, whose activations onnxruntime quantizes to int8 as it
    runs; that file now reads 'not measured' with the reason, and level 0 keeps the weight-only line."""
    from onnx import TensorProto, helper, numpy_helper

    m, x, w = matmul_nbits_model(level)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
                          [numpy_helper.from_array(w.astype(np.float32), "w")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]), tmp_path / "f.onnx")
    onnx.save(m, tmp_path / "q.onnx")
    np.savez(tmp_path / "d.npz", x=np.stack([x, -x]))
    assert main(["compare", str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"), "--data", str(tmp_path / "d.npz")]) in (0, None)
    out = capsys.readouterr().out
    if level == 4:
        assert ("weights vs activations: not measured (the quantized file's MatMulNBits run at accuracy_level 4: "
                "onnxruntime quantizes their activations to int8 per block as they run, so there is no fixed "
                "activation quantization to take out)\n") in out
    else:
        assert "q.onnx is weight-only (float activations): 100% of the output noise comes from the weights" in out
