"""The inspector's "Quantization parameters" of a QOperator file list a node's tensors in the op's input order.

ppocr_mobile_v2_cls quantized by onnxruntime's quantize_static (QOperator, 4 rows of its calib.npz), opened as it
is: a QLinearAdd whose A and B are both activations listed B before A ("input Reshape@0_quantized" above
"input conv2d_55.tmp_0_quantized" for Add@1_quant), and QLinearConvs their weight above their input: a tensor
read where it is used came before one read at the node that produces it. Now A, B (x, w, bias), then the output.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

#: the QLinearAdd / QLinearMul inputs that are tensors (a, b), after each one's scale and zero point
PAIR_SLOTS = (0, 3)


class _Rows(CalibrationDataReader):
    def __init__(self, name: str, rows: np.ndarray):
        self._rows = iter([{name: rows[i:i + 1]} for i in range(len(rows))])

    def get_next(self):
        return next(self._rows, None)


def _qoperator_file(corpus, tmp_path):
    model = corpus / "ppocr_mobile_v2_cls"
    with np.load(model / "calib.npz") as data:
        rows = data[data.files[0]][:4]
    name = onnx.load(str(model / "model.onnx")).graph.input[0].name
    out = tmp_path / "ppocr_qop.onnx"
    quantize_static(str(model / "model.onnx"), str(out), _Rows(name, rows), quant_format=QuantFormat.QOperator)
    return out


def _line(role: str, tensor: str, inits: dict) -> str:
    scale, zero = inits[tensor.replace("_quantized", "_scale")], inits[tensor.replace("_quantized", "_zero_point")]
    return f"  {role} {tensor}: {zero.dtype} per_tensor; scale {float(scale):.6g}; zero_point {int(zero)}"


def test_a_qlinearadd_lists_a_then_b_then_its_output(qtbot, window, open_file, corpus, tmp_path):
    path = _qoperator_file(corpus, tmp_path)
    proto = onnx.load(str(path))
    inits = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    open_file(window, path, timeout=120_000)
    box = window.inspector.quant_params
    adds = {n.name: n for n in proto.graph.node if n.op_type == "QLinearAdd"}
    add = adds["Add@1_quant"]
    a, b, out = add.input[0], add.input[3], add.output[0]
    assert (a, b, out) == ("conv2d_55.tmp_0_quantized", "Reshape@0_quantized", "conv2d_55.tmp_1_quantized")
    window.focus_node(add.name)
    qtbot.waitUntil(lambda: box.label.text().startswith(f"{add.name}:"))
    assert box.label.text().splitlines() == [f"{add.name}:", _line("input", a, inits), _line("input", b, inits),
                                             _line("output", out, inits)]
    for node in [*adds.values(), *(n for n in proto.graph.node if n.op_type == "QLinearConv")]:
        window.focus_node(node.name)
        qtbot.waitUntil(lambda name=node.name: box.label.text().startswith(f"{name}:"))
        listed = [line.split(" ", 4)[3].rstrip(":") for line in box.label.text().splitlines()[1:]]
        slots = [node.input[i] for i in (PAIR_SLOTS if node.op_type == "QLinearAdd" else (0, 3))] + [node.output[0]]
        assert listed == slots, node.name
