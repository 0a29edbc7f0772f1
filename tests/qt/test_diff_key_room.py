"""The diff tab in a 1024 x 700 window (the docks beside it): the key above the panes takes at most
KEY_MAX_SHARE of their height and scrolls beyond it. It wrapped to six lines (about 115 px) of a 725 px wide tab,
and the panes were about 300 px high under it and the header. The quantized file is onnxruntime's QDQ export of
digits_cnn (test_diff_tab_room's)."""

from __future__ import annotations

from test_diff_tab_room import _diff_tab, ort_qdq  # noqa: F401 - the module's fixture, used here

from workbench.qt.diff_panes import KEY_MAX_SHARE


def test_key_leaves_the_panes_room_in_a_small_window(qtbot, window, compare_in_app, ort_qdq):  # noqa: F811
    window.resize(1024, 700)
    tab = _diff_tab(qtbot, window, compare_in_app, ort_qdq)
    panes = tab.panes
    assert tab.width() < 800  # beside the docks
    for canvas in (tab.float_canvas, tab.canvas):
        assert canvas.height() >= 0.6 * tab.height(), (canvas.height(), tab.height())
    area, key = panes.key_area, panes.key
    assert area.height() <= KEY_MAX_SHARE * panes.height() + 1
    assert key.height() > area.height() and area.verticalScrollBar().isVisible()  # the rest of it scrolls
    area.verticalScrollBar().setValue(area.verticalScrollBar().maximum())
    assert "Right</b> colour" in key.text()  # every line is there, scrolled to
    tab.legend_button.click()  # hidden: the panes take its room
    qtbot.waitUntil(lambda: area.isHidden() and not panes.key_visible(), timeout=5_000)
    tab.legend_button.click()
    qtbot.waitUntil(lambda: area.isVisible() and panes.key_visible(), timeout=5_000)
