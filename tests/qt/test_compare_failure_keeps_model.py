"""A comparison that fails leaves the window as it was: comparing the open quantized file with a float model it
was not made from opened that model first, so after the error the window showed the other model and the
quantized file was closed. The comparison now runs before anything is opened."""

from __future__ import annotations

from bundled_example import EXAMPLE


def _diff_tabs(win) -> list[str]:
    return [win.tabs.tabText(i) for i in range(win.tabs.count()) if win.tabs.tabText(i).startswith("Diff")]


def test_failed_compare_with_float_keeps_the_quantized_file_open(qtbot, window, open_file, example_qdq_file, cases,
                                                                 dialogs):
    win = window
    open_file(win, example_qdq_file)
    assert win.doc.quant_summary is not None
    other = cases / "06_gemm_bias_2d.onnx"  # a float model with other inputs: not the one it was made from
    win.compare_quantized_with_float(other)
    qtbot.waitUntil(lambda: win._open_job is None, timeout=300_000)
    assert win.doc.model_path == example_qdq_file.resolve() and win.doc.quant_summary is not None
    assert win.windowTitle().startswith(example_qdq_file.name)
    assert not _diff_tabs(win)
    [(kind, title, text)] = dialogs
    assert kind == "critical" and title == "Cannot compare with 06_gemm_bias_2d.onnx"
    assert "do not correspond" in text
    dialogs.clear()
    status = win.status_label.text()
    assert status == (f"Could not compare {example_qdq_file.name} with 06_gemm_bias_2d.onnx; {example_qdq_file.name} "
                      "is still open: pick the float model it was quantized from (the message says why).")
    assert win.calibration._held is None  # the panel is released: no job holds it


def test_failed_compare_with_quantized_keeps_the_float_model(qtbot, window, open_file, cases, dialogs):
    win = window
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    win.compare_with(cases / "07_bias_int32_overflow.onnx")  # opens as a model, but not a quantized digits_cnn
    qtbot.waitUntil(lambda: win._open_job is None, timeout=300_000)
    assert win.doc.model_path == (EXAMPLE / "digits_cnn.onnx").resolve()
    assert not _diff_tabs(win)
    assert len(dialogs) == 1 and dialogs[0][1] == "Cannot compare with 07_bias_int32_overflow.onnx"
    dialogs.clear()
    assert win.status_label.text() == ("Could not compare digits_cnn.onnx with 07_bias_int32_overflow.onnx; "
                                       "digits_cnn.onnx is still open: pick a file quantized from it (the message "
                                       "says why).")


def test_files_of_one_name_are_named_by_their_folders(qtbot, window, open_file, example_qdq_file, cases, dialogs,
                                                       tmp_path):
    """Corpus folders all hold a model.onnx: "Could not compare model.onnx with model.onnx" named neither."""
    import shutil

    a, b = tmp_path / "quant" / "model.onnx", tmp_path / "other" / "model.onnx"
    a.parent.mkdir()
    b.parent.mkdir()
    shutil.copy(example_qdq_file, a)
    shutil.copy(cases / "06_gemm_bias_2d.onnx", b)
    win = window
    open_file(win, a)
    win.compare_quantized_with_float(b)
    qtbot.waitUntil(lambda: win._open_job is None, timeout=300_000)
    assert win.status_label.text().startswith(
        "Could not compare quant/model.onnx with other/model.onnx; quant/model.onnx is still open")
    dialogs.clear()
