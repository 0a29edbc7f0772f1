"""An already-quantized file (ours or onnxruntime's quantize_static QDQ): Save Project, Export and the
Calibration panel's fields are off, each saying why and what to do instead (Ctrl+Shift+D); a float model
opened next turns them on again."""

from __future__ import annotations

import pytest
from bundled_example import EXAMPLE


def _fields(panel):
    return (panel.kind, panel.path, panel.browse, panel.samples, panel.analysis_samples, panel.choose_first,
            panel.images, panel.allow_code, panel.start)


@pytest.mark.parametrize("which", ["ours", "onnxruntime"])
def test_save_export_and_calibration_fields_are_off_then_on_again(window, open_file, example_qdq_file,
                                                                    ort_qdq_file, which):
    win = window
    quantized = example_qdq_file if which == "ours" else ort_qdq_file
    open_file(win, quantized)
    assert win.doc.quant_summary is not None
    panel = win.calibration
    for act in (win.act_save, win.act_save_as, win.act_export, win.act_calibrate):
        assert not act.isEnabled(), act.text()
        assert act.toolTip().startswith(f"Disabled: {quantized.name} is already quantized"), act.toolTip()
        assert "Ctrl+Shift+D" in act.toolTip(), act.toolTip()
    assert "Ctrl+Shift+D" in win.act_save.statusTip()
    for w in _fields(panel):
        assert not w.isEnabled(), w
    assert panel.path.toolTip().startswith(f"Disabled: {quantized.name} is already quantized")
    assert "Ctrl+Shift+D" in panel.samples.toolTip()
    assert panel.status.text().startswith(f"Calibration is off: {quantized.name} is already quantized")

    open_file(win, EXAMPLE / "digits_cnn.onnx")  # a float model: everything applies again
    for act in (win.act_save, win.act_save_as, win.act_export, win.act_calibrate):
        assert act.isEnabled(), act.text()
        assert "Disabled" not in act.toolTip()
    for w in (panel.kind, panel.path, panel.browse, panel.samples, panel.analysis_samples, panel.choose_first,
              panel.start):
        assert w.isEnabled(), w
    assert panel.analysis_samples.toolTip().startswith("Samples used to measure each node unit's error")
    assert "Disabled" not in panel.path.toolTip()
