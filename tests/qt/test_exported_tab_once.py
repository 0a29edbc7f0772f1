"""View > Open Exported Model shows the exported file in one tab: run again it brings that tab forward,
and reads the file again when an export wrote it since. It opened a second, identical tab each time."""

from __future__ import annotations

import os
import shutil

import onnx
from bundled_example import EXAMPLE

from workbench.qt.quant_tab import QuantModelTab


def _exported_tabs(win) -> list[QuantModelTab]:
    return [win.tabs.widget(i) for i in range(win.tabs.count()) if isinstance(win.tabs.widget(i), QuantModelTab)]


def test_open_exported_twice_shows_one_tab_and_rereads_a_new_export(qtbot, window, open_file, example_qdq_file,
                                                                     tmp_path):
    open_file(window, EXAMPLE / "digits_cnn.onnx")
    exported = tmp_path / "digits.qdq.onnx"
    shutil.copy(example_qdq_file, exported)
    window._last_export = exported  # as a finished export sets it

    first = window.open_exported()
    qtbot.waitUntil(lambda: first.canvas._state is not None, timeout=300_000)
    window.tabs.setCurrentIndex(0)  # back to the graph; the second run brings the tab forward
    again = window.open_exported()
    assert again is first and _exported_tabs(window) == [first]
    assert window.tabs.currentWidget() is first and window.tabs.count() == 2
    assert "(already open)" in window.status_label.text()

    # an export writes the file again (here: the float model, without Q/DQ): the tab reads it again, in place
    shutil.copy(EXAMPLE / "digits_cnn.onnx", exported)
    os.utime(exported, ns=(first.stamp[0] + 10**9, first.stamp[0] + 10**9))
    window.tabs.setCurrentIndex(0)
    fresh = window.open_exported()
    qtbot.waitUntil(lambda: fresh.canvas._state is not None, timeout=300_000)
    assert fresh is not first and _exported_tabs(window) == [fresh]
    assert window.tabs.indexOf(fresh) == 1 and window.tabs.currentWidget() is fresh
    want = sum(n.op_type == "QuantizeLinear" for n in onnx.load(str(exported)).graph.node)
    assert want == 0 and sum(n.op_type == "QuantizeLinear" for n in fresh.proto.graph.node) == want
    assert "(read again" in window.status_label.text()
