"""A tab named after a file holding '&' shows the name as it is.

Found by a user pass: QTabBar reads a single '&' as a mnemonic marker, so "Exported: R&D.qdq.onnx" was drawn as
"Exported: RD.qdq.onnx" with the D underlined (and Alt+D jumped to it); the Diff tab the same. The status line's tab name read the title back with every '&'
dropped."""

from __future__ import annotations

import shutil

from bundled_example import EXAMPLE


def test_exported_and_diff_tabs_draw_an_ampersand(qtbot, window, tmp_path, example_qdq_file, compare_in_app):
    quantized = tmp_path / "R&D.qdq.onnx"
    shutil.copy(example_qdq_file, quantized)
    diff = compare_in_app(window, EXAMPLE / "digits_cnn.onnx", EXAMPLE / "digits_cnn_calib.npz", quantized, 4)
    assert window.tabs.tabText(window.tabs.indexOf(diff)) == "Diff: R&&D.qdq.onnx"  # '&&' draws one '&'

    tab, done = window.tabs.show_exported(quantized)
    assert done == "opened"
    assert window.tabs.tabText(window.tabs.indexOf(tab)) == "Exported: R&&D.qdq.onnx"
    qtbot.waitUntil(lambda: bool(tab.canvas.node_names()), timeout=60_000)
    window.search.setText("Conv")
    window.run_search()  # the status names the tab as drawn (its '&&' read back as one '&')
    assert "in the Exported: R&D.qdq.onnx tab" in window.status_label.text(), window.status_label.text()
