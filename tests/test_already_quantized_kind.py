"""The "already quantized" refusal names a file's format as ``inspect`` does: from one definition of how
onnxruntime runs a MatMulNBits (:func:`workbench.core.graph.quantized_ops.nbits_runs_int8`, which the model,
planning and inspection layers all import). It named raw per-op kinds, so a MatMulNBits at accuracy_level 4 read
'(weight_only)' while ``inspect`` said 'dynamic'."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from qdq_helpers import matmul_nbits_model, ort_digits_exports

from workbench.core.errors import AlreadyQuantizedError
from workbench.core.graph.quantized_ops import kinds_as_run
from workbench.core.inspection.already_quantized import ensure_float_model
from workbench.core.inspection.quant_summary import summarize_quantization
from workbench.core.model.load import load_model


def _with_zero_point(m: onnx.ModelProto, dtype: type) -> onnx.ModelProto:
    """``m``'s MatMulNBits with a zero-point input of ``dtype`` (8 blocks of 32 along K = 64, N = 8)."""
    zp = np.full(8 * 2, 8, dtype)
    if dtype is np.uint8:  # 4-bit zero points packed two per byte: [N, ceil(blocks / 2)]
        zp = np.full(8, 0x88, np.uint8)
    m.graph.initializer.append(numpy_helper.from_array(zp, "zp"))
    m.graph.node[0].input.append("zp")
    return m


@pytest.mark.parametrize(("model", "kind"), [
    (lambda: matmul_nbits_model(4)[0], "dynamic"),
    (lambda: matmul_nbits_model(0)[0], "weight_only"),
    (lambda: matmul_nbits_model(None)[0], "weight_only"),
    (lambda: _with_zero_point(matmul_nbits_model(4)[0], np.uint8), "dynamic"),
    # a float zero point: onnxruntime dequantizes B and runs a float GEMM at level 4 too
    (lambda: _with_zero_point(matmul_nbits_model(4)[0], np.float32), "weight_only"),
])
def test_already_quantized_names_the_format_inspect_names(tmp_path, model, kind):
    m = model()
    path = tmp_path / "nbits.onnx"
    onnx.save(m, path)
    with pytest.raises(AlreadyQuantizedError) as info:
        ensure_float_model(load_model(path))
    assert info.value.message == (f"{path} is already quantized ({kind}): 1 quantized node (com.microsoft::MatMulNBits "
                                  "x1); quantizing it again would stack a second rounding on the first.")
    assert summarize_quantization(m).kinds == {kind: 1}  # inspect's summary
    assert kinds_as_run(m) == {kind: 1}


def test_formats_of_two_kinds_are_both_named(tmp_path):
    m = matmul_nbits_model(4)[0]
    m.graph.node.append(helper.make_node("QuantizeLinear", ["y", "qs"], ["yq"], name="q"))
    m.graph.initializer.append(numpy_helper.from_array(np.array(0.1, np.float32), "qs"))
    m.graph.output[0].CopyFrom(helper.make_tensor_value_info("yq", TensorProto.UINT8, [4, 8]))
    path = tmp_path / "nbits.onnx"
    onnx.save(m, path)
    with pytest.raises(AlreadyQuantizedError) as info:
        ensure_float_model(load_model(path))
    assert info.value.message.startswith(f"{path} is already quantized (QDQ/dynamic): 2 quantized nodes ")


@pytest.fixture(scope="module")
def ort_exports(tmp_path_factory):
    """digits_cnn quantized by onnxruntime's quantize_static as QDQ and as QOperator (8 calibration rows)."""
    return ort_digits_exports(tmp_path_factory.mktemp("ort"))


@pytest.mark.parametrize(("fmt", "ops", "holds"), [
    # read '(QDQ/QOperator)' before: the QOperator file's input QuantizeLinear and output DequantizeLinear were
    # counted as QDQ, and the hint said only "Quantize the float model instead"
    ("QOperator", "7 quantized nodes (QLinearConv x3, QuantizeLinear x1, com.microsoft::QLinearAveragePool x1, "
                  "com.microsoft::QGemm x1, DequantizeLinear x1)",
     "integer kernels (QLinearConv, QGemm, QLinearMatMul ...) passing integer tensors to each other (QOperator: "
     "onnxruntime runs them as they are)"),
    ("QDQ", "24 quantized nodes (DequantizeLinear x16, QuantizeLinear x8)",
     "QuantizeLinear / DequantizeLinear pairs around float ops (QDQ: onnxruntime fuses each pair and its op into an "
     "integer kernel as it loads the file)"),
])
def test_qoperator_and_qdq_files_are_named_apart(ort_exports, fmt, ops, holds):
    path = ort_exports[fmt]
    with pytest.raises(AlreadyQuantizedError) as info:
        ensure_float_model(load_model(path))
    assert info.value.message == (f"{path} is already quantized ({fmt}): {ops}; quantizing it again would stack a "
                                  "second rounding on the first.")
    assert info.value.hint == (f"It holds {holds}. Quantize the float model instead (the one this model was made "
                               f"from); to see this file's scales and zero points: workbench-cli inspect {path}; its "
                               f"error against the float model: workbench-cli compare FLOAT.onnx {path} --data "
                               "calib.npz.")
    assert summarize_quantization(onnx.load(path)).kinds == {fmt: int(ops.split()[0])}  # inspect's summary
