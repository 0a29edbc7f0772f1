"""Run > Cancel (Esc) while a model is being opened. The open ran as a background job that Cancel knew
(cancel_running), but the actions were not updated when it started, so Cancel stayed greyed out and
Esc did nothing for the whole read (about 2 s for ppocrv4_rec's 10 MB, 387 nodes); a cancelled open
then left the status line at "Opening ..." for good, and no busy bar showed that anything was running."""

from __future__ import annotations

from workbench.qt.welcome import example_model

MODEL = example_model()


def test_cancel_is_on_while_a_model_opens_and_drops_it(qtbot, window):
    win = window
    win.open_path(MODEL)
    assert win._open_job is not None
    assert win.act_cancel.isEnabled()
    assert not win.act_calibrate.isEnabled()
    assert win.status_label.text() == f"Opening {MODEL}... (Esc cancels)"
    assert win.status_bar_progress.isVisible() and win.status_bar_progress.maximum() == 0  # busy
    win.act_cancel.trigger()
    assert win.status_label.text() == f"Cancelling opening {MODEL.name}..."
    qtbot.waitUntil(lambda: win._open_job is None, timeout=120_000)
    assert win.doc.model is None and win.doc.model_path is None
    assert win.status_label.text() == f"Opening {MODEL.name} cancelled."
    assert not win.act_cancel.isEnabled() and not win.status_bar_progress.isVisible()


def test_an_open_shows_the_busy_bar_until_the_model_is_shown(qtbot, window, open_file):
    win = window
    open_file(win, MODEL)
    assert win.doc.model_path == MODEL and not win.status_bar_progress.isVisible()


def test_a_cancelled_open_keeps_the_open_model(qtbot, window, open_file, tmp_path):
    win = window
    open_file(win, MODEL)
    other = tmp_path / "other.onnx"
    other.write_bytes(MODEL.read_bytes())
    win.open_path(other)
    assert win.act_cancel.isEnabled()
    win.act_cancel.trigger()
    qtbot.waitUntil(lambda: win._open_job is None, timeout=120_000)
    assert win.doc.model_path == MODEL
    assert win.status_label.text() == f"Opening other.onnx cancelled. {MODEL.name} is still open."
    assert win.act_calibrate.isEnabled() and not win.act_cancel.isEnabled()
