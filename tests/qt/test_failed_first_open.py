"""A first open that fails (a missing model on the command line) leaves a window that says what to
do: the canvas shows the open hint in the legend's place (it showed an empty "Colour: op type" legend)
and the Autotune panel says no eval data is chosen yet (it read "no metric on no eval data")."""

from __future__ import annotations

from workbench.qt.app_window import EMPTY_HINT


def test_failed_first_open_shows_the_open_hint(qtbot, window, dialogs, tmp_path):
    win = window
    missing = tmp_path / "nonexistent.onnx"
    win.open_path(missing)
    qtbot.waitUntil(lambda: bool(dialogs), timeout=60_000)
    assert "no such model file" in dialogs.texts()
    dialogs.clear()
    assert win.doc.model is None
    legend = win.canvas.legend_overlay
    assert legend.text() == EMPTY_HINT and "Colour:" not in legend.label.text()
    assert not legend.isHidden()
    assert "File > Open (Ctrl+O)" in EMPTY_HINT
    uses = win.autotune_panel.uses.text()
    assert "no metric" not in uses and "no eval data" not in uses and "choose the eval data" in uses
