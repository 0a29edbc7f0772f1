"""A MatMulNBits of a file quantized elsewhere: "INT" only where onnxruntime computes it in int8
(accuracy_level 4); at the default level 0 it is a weight-only node, which the dtype legend explains
(it read "dtype (recipe)" with no word on the uint4 node and no INT mark). Offscreen."""

from __future__ import annotations

import onnx
import pytest
from qdq_helpers import matmul_nbits_model

pytest.importorskip("PySide6")

from workbench.qt.canvas.legend import WEIGHT_ONLY_NOTE, legend_entries  # noqa: E402

INT_NOTE = "INT: integer kernel (or a QDQ unit fused into one)"


@pytest.mark.parametrize("level, integer", [(None, False), (4, True)])
def test_matmul_nbits_mark_and_legend(window, open_file, tmp_path, level, integer):
    path = tmp_path / f"nbits_{level}.onnx"
    onnx.save(matmul_nbits_model(level)[0], path)
    open_file(window, path)
    canvas = window.canvas
    canvas.set_color_mode("dtype")
    title, rows, notes = legend_entries(canvas)
    assert canvas._state.kernels == ({0: "MatMulNBits"} if integer else {})
    assert title == "dtype in the file" and [label for label, _ in rows] == ["uint4"]
    assert (INT_NOTE in notes) == integer and (WEIGHT_ONLY_NOTE in notes) == (not integer)
