"""The inspector shows the quantization parameters recovered from an already-quantized model."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper


@pytest.mark.slow
def test_ddddocr_convinteger_scale_in_the_inspector(qtbot, window, open_file, corpus):
    path = corpus / "ddddocr_common_old_int8" / "model.onnx"
    if not path.is_file():
        pytest.skip("ddddocr model not in the corpus")
    win = window
    box = win.inspector.quant_params
    open_file(win, path)
    assert box.isHidden()  # nothing selected
    inits = {i.name: i for i in onnx.load(str(path)).graph.initializer}
    scale = float(numpy_helper.to_array(inits["394_scale"]))
    zp = int(numpy_helper.to_array(inits["394_zero_point"]))
    assert win.doc.op_type("Conv_3_quant") == "ConvInteger"
    with qtbot.waitSignal(win.canvas.selectionChangedNames, timeout=300_000):  # as a click on the node
        win.canvas.select_nodes(["Conv_3_quant"], center=True)
    assert win.inspector.nodes == ["Conv_3_quant"]
    text = box.label.text()
    assert not box.isHidden()
    assert f"weight 394_quantized: uint8 per_tensor; scale {scale:.6g}; zero_point {zp}" in text
    assert "input 140_quantized: uint8" in text and "run time" in text
    assert np.isclose(scale, 0.00527488, rtol=1e-5)
    win.inspector.set_nodes([])
    assert box.isHidden()
