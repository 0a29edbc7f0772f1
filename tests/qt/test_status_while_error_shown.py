"""While an error box is open, the status line already shows the error's one line.

It kept the previous message (here "Saved earlier.") until OK was pressed: the guard of the window's slots set the
error's line only after the box closed, and File > Sweep Executor's refusal never set it."""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox

from workbench.qt import executor_dialog


def _status_at_each_box(monkeypatch, window) -> list:
    seen = []

    def fake(parent, title, text, *args, **kwargs):
        seen.append((title, window.status_label.text()))
        return QMessageBox.StandardButton.Ok
    monkeypatch.setattr(QMessageBox, "critical", staticmethod(fake))
    return seen


def test_a_slots_error_is_on_the_status_line_while_its_box_is_open(qtbot, window, monkeypatch):
    window.set_status("Saved earlier.")
    seen = _status_at_each_box(monkeypatch, window)
    window.start_new_project()  # no model open
    assert seen == [("Workbench", "No model is open.")]
    assert window.status_label.text() == "No model is open."


def test_a_refused_sweep_executor_is_on_the_status_line_while_its_box_is_open(qtbot, window, monkeypatch):
    window.set_status("Saved earlier.")
    seen = _status_at_each_box(monkeypatch, window)
    monkeypatch.setattr(executor_dialog, "ask_executor", lambda *a, **k: "bogus")
    assert window.choose_executor() is None
    assert seen == [("Sweep executor", "Unknown executor 'bogus'.")]
