"""The Cost dock's summary names a model input once: the bundled digits_cnn, whose input is named "input",
read "... from the current recipe's plan. input input: shape 1x1x8x8 from the data." (the kind and the name
ran together, and the sentence began in lower case). The name is quoted, as the cost's error messages quote
it (offscreen)."""

from __future__ import annotations

import pytest
from bundled_example import EXAMPLE

pytest.importorskip("PySide6")



def test_the_summary_names_the_input_once(qtbot, window, open_file):
    window.resize(1024, 700)
    open_file(window, EXAMPLE / "digits_cnn.onnx")
    assert [i.name for i in window.doc.model.proto.graph.input] == ["input"]
    cost = window.docks["Cost"]
    cost.show()
    cost.raise_()
    panel = cost.widget()
    qtbot.waitUntil(lambda: "Total over" in panel.summary.text(), timeout=60_000)
    text = panel.summary.text()
    assert panel.report.notes == ["input 'input': shape 1x1x8x8 from the data"]
    assert text.endswith(" Quantized widths from the current recipe's plan. Input 'input': shape 1x1x8x8 from the data.")
    assert "input input" not in text.lower()
