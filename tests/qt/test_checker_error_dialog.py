"""Opening a model onnx.checker refuses: the dialog's first line is one line naming the node (not the checker's
dump joined on one line), then what to do, then the checker's whole message under Details."""

from __future__ import annotations

import onnx
from checker_failures import CHECKER_FAILURES


def test_the_dialog_says_one_line_the_hint_and_the_full_text_below(qtbot, window, dialogs, tmp_path):
    model, line = CHECKER_FAILURES["shapes of two nodes"]
    path = tmp_path / "bad.onnx"
    onnx.save(model, str(path))
    window.open_path(path)
    qtbot.waitUntil(lambda: window._open_job is None, timeout=60_000)
    [(kind, title, text)] = dialogs
    dialogs.clear()
    assert (kind, title) == ("critical", "Cannot open bad.onnx")
    message, hint, details = text.split("\n\n", 2)
    assert message == f"{path}: not a valid ONNX model: onnx.checker: {line}"
    assert hint == "Fix the exporter or re-export the model, then check it with onnx.checker."
    assert details.splitlines() == [
        "Details:",
        "[ShapeInferenceError] Inference error(s): (op_type:MatMul, node name: mm): [ShapeInferenceError] "
        "Incompatible dimensions for matrix multiplication",
        "(op_type:Softmax, node name: sm): [TypeInferenceError] Input 0 expected to have type but instead is null"]
    assert window.doc.model is None and window.status_label.text() == (
        "Could not open bad.onnx: not a valid ONNX model: onnx.checker: node 'mm' (MatMul): Incompatible dimensions "
        "for matrix multiplication (and 1 more node); fix the exporter or re-export the model, then check it with "
        "onnx.checker.")
