"""View > Compare Float vs Quantized with calibration data that does not fit the model: the comparison failed
as a whole ("Could not compare with cls.nolat.onnx" and an error box); as the README says, the diff opens with
its quantized pane coloured by dtype, and the header says why there is no SQNR."""

from __future__ import annotations

import numpy as np
from bundled_example import EXAMPLE


def test_wrong_calibration_data_gives_the_diff_coloured_by_dtype(qtbot, window, compare_in_app, example_qdq_file,
                                                                 tmp_path, dialogs):
    wrong = tmp_path / "wrongnames.npz"
    np.savez(wrong, image=np.zeros((4, 1, 8, 8), np.float32))
    tab = compare_in_app(window, EXAMPLE / "digits_cnn.onnx", wrong, example_qdq_file, 4)
    assert not dialogs
    assert tab.diff.matches and not tab.diff.sqnr
    why = "no SQNR: the calibration data could not be used (wrongnames.npz has no array for input 'input'"
    assert why in tab.header.text()
    assert "the quantized pane is coloured by dtype" in tab.header.text()
    assert why in window.status_label.text() and window.status_label.text().startswith("Diff with digits_cnn.qdq")
    qtbot.waitUntil(lambda: tab.panes.quant_canvas.color_mode() == "dtype", timeout=60_000)
