"""INT marks on onnxruntime's own QDQ file of minilm_l6_v2 (quantize_static, its defaults: int8 activations and
weights, 16 calibration rows).

A report said the weight MatMuls lacked the INT mark while the summary called all 48 MatMuls
'QDQ -> QLinearMatMul'. It does not: the summary counts 48 MatMuls quantized int8/int8 (``compute``), of which
onnxruntime's CPU provider fuses 24 into QLinearMatMul (the 12 attention MatMuls and 12 of the 36 weight MatMuls);
the other 24 run as DequantizeLinear + float MatMul. ``kernels`` (what the INT marks show) names exactly the nodes
onnxruntime fuses, and the canvas marks exactly those.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static
from qdq_helpers import ran_as

from workbench.core.api import summarize_quantization


def _ort_qdq(folder, out):
    calib = np.load(folder / "calib.npz")

    class Rows(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{k: calib[k][i:i + 1] for k in calib.files} for i in range(16)])

        def get_next(self):
            return next(self.it, None)

    quantize_static(str(folder / "model.onnx"), str(out), Rows(), quant_format=QuantFormat.QDQ)
    return out


def _fused_by_onnxruntime(path) -> dict[str, str]:
    """Node name -> op of the integer kernels in onnxruntime's optimized graph (fusions, no layout changes)."""
    return ran_as(path, lambda op: op.startswith("QLinear"))


def test_int_marks_are_the_matmuls_onnxruntime_fuses(qtbot, window, open_file, corpus, tmp_path):
    path = _ort_qdq(corpus / "minilm_l6_v2", tmp_path / "minilm_qdq.onnx")
    summary = summarize_quantization(onnx.load(str(path)))
    assert Counter(summary.compute.values()) == Counter({"int8/int8": 48})  # every MatMul quantized
    fused = _fused_by_onnxruntime(path)
    assert Counter(fused.values()) == Counter({"QLinearMatMul": 24, "QLinearSoftmax": 6, "QLinearAdd": 2})
    assert {n: k.removeprefix("QDQ -> ") for n, k in summary.kernels.items()} == fused
    open_file(window, path)
    state = window.canvas._state
    marked = {state.data.structure.names[i]: k for i, k in state.kernels.items()}
    assert marked == summary.kernels  # 32 marks: the 24 fused MatMuls among them
    assert sum(k == "QDQ -> QLinearMatMul" for k in marked.values()) == 24
