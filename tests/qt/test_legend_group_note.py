"""The dtype legend of a file quantized elsewhere says that the kernel note is about groups, not node boxes.

onnxruntime's QDQ and QOperator digits_cnn (and QDQ minilm_l6_v2) read "box: the quantized kernels inside (dtypes
activation/weight), coloured by their activation dtype" under node boxes that show no kernels (every group
open at first): "box" read as the node boxes. The note names the group title and the collapsed group's box.
"""

from __future__ import annotations

from test_quant_block_boxes import _open, dynamic_model

from workbench.core.inspection.quant_summary import summarize_quantization
from workbench.qt.canvas.legend import legend_entries


def test_kernel_note_names_groups(qtbot, make_canvas):
    proto = dynamic_model()
    canvas = make_canvas(1200, 900)
    _open(qtbot, canvas, proto, compute=summarize_quantization(proto).compute)
    title, _rows, notes = legend_entries(canvas)
    assert title == "dtype in the file"
    assert "group title: the quantized kernels inside (dtypes activation/weight); a collapsed group's box is " \
           "coloured by their activation dtype as run (a weight-only kernel's: its weight dtype)" in notes
    assert not any(n.startswith("box:") for n in notes)  # was "box: the quantized kernels inside ..."
