"""Inspector and Recipe fields: a mouse wheel over a field that has no keyboard focus scrolls the
panel instead of editing the recipe (a wheel turn set the weight axis to -8 on three Convs), and
Ctrl+Z / Ctrl+Shift+Z undo / redo the document's edits while an Inspector field has focus."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication, QScrollArea

CONVS = ["/f/f.0/Conv", "/f/f.3/Conv", "/f/f.7/Conv"]


def _wheel(widget, notches: int = -3) -> bool:
    """A wheel turn over the middle of ``widget`` (negative: towards the user); True when the widget
    took it. (A sent event is not spontaneous, so Qt does not pass an untaken one on to the parents
    as it does for a real wheel turn: the test checks it is left for them.)"""
    pos = QPointF(widget.rect().center())
    event = QWheelEvent(pos, QPointF(widget.mapToGlobal(pos.toPoint())), QPoint(0, 0), QPoint(0, 120 * notches),
                        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(widget, event)
    return event.isAccepted()


def _convs_selected(qtbot, win, open_file, corpus):
    """digits_cnn open in the shown, active window with its three Convs selected."""
    open_file(win, corpus / "digits_cnn" / "model_opset17.onnx")
    qtbot.waitExposed(win)
    win.activateWindow()
    win.canvas.select_nodes(CONVS)
    return win


def test_wheel_over_unfocused_fields_scrolls_instead_of_editing(qtbot, window, open_file, corpus):
    win = _convs_selected(qtbot, window, open_file, corpus)
    weight = win.inspector.roles["weight"]
    before, stack = win.doc.recipe.to_json(), win.doc.undo_stack.count()
    fields = (weight.axis, weight.block_size, weight.dtype, weight.granularity, weight.observer,
              win.recipe_panel.preset, win.recipe_panel.act_dtype)
    for field in fields:
        assert not field.hasFocus()
        assert not _wheel(field)  # left for the panel's scroll area
    assert win.doc.recipe.to_json() == before and win.doc.undo_stack.count() == stack
    assert weight.axis.text() == "auto" and win.recipe_panel.act_dtype.currentIndex() == 0
    # the wheel scrolls the panel itself
    scroll = win.inspector.findChild(QScrollArea)
    win.inspector.resize(300, 250)
    qtbot.wait(10)
    bar = scroll.verticalScrollBar()
    assert bar.maximum() > 0 and bar.value() == 0
    _wheel(scroll.viewport())
    assert bar.value() > 0
    # a field with keyboard focus (clicked or tabbed to) still takes the wheel
    weight.observer.setFocus()
    qtbot.waitUntil(weight.observer.hasFocus)
    assert _wheel(weight.observer, notches=-1) and weight.observer.currentText() != "minmax"
    assert all(win.doc.recipe.overrides[c].weight.observer == weight.observer.currentText() for c in CONVS)


def test_undo_redo_keys_reach_the_document_from_a_focused_field(qtbot, window, open_file, corpus):
    win = _convs_selected(qtbot, window, open_file, corpus)
    spin = win.inspector.roles["weight"].axis
    spin.setValue(0)  # one command: axis 0 on the three Convs
    spin.setFocus()
    qtbot.waitUntil(spin.hasFocus)
    qtbot.keyClick(spin, Qt.Key.Key_Up)
    assert all(win.doc.recipe.overrides[c].weight.axis == 1 for c in CONVS)
    qtbot.keyClick(spin, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert all(win.doc.recipe.overrides[c].weight.axis == 0 for c in CONVS)
    assert spin.text() == "0"  # the field shows the undone value
    qtbot.keyClick(spin, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert all(win.doc.recipe.overrides[c].weight.axis == 1 for c in CONVS)
    qtbot.keyClick(spin, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(spin, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)  # and the first edit
    assert not win.doc.recipe.overrides and spin.text() == "auto"


def test_nothing_selected_shows_no_values(qtbot, window, open_file, corpus):
    """With nothing selected the Inspector showed the last node's settings greyed (int8, per_channel,
    quantize ticked) as if they were someone's; now only the hint is shown, until a node is selected."""
    win = window
    open_file(win, corpus / "digits_cnn" / "model_opset17.onnx")
    inspector = win.inspector
    fields = [inspector.exclude, inspector.reset, *inspector.roles.values()]
    assert all(w.isHidden() for w in fields) and inspector.header.text().startswith("No node selected.")
    win.canvas.select_nodes(CONVS[:1])
    assert not any(w.isHidden() for w in fields)
    assert inspector.roles["weight"].dtype.currentText() == "int8"
    win.canvas.select_nodes([])
    assert all(w.isHidden() for w in fields) and inspector.header.text().startswith("No node selected.")


def test_reset_node_overrides_is_offered_only_for_nodes_that_have_some(qtbot, window, open_file, corpus):
    """"Reset node overrides" was enabled for any selection, also for a node without per-node settings."""
    win = _convs_selected(qtbot, window, open_file, corpus)
    reset = win.inspector.reset
    assert not win.doc.recipe.overrides and not reset.isEnabled()
    assert reset.toolTip().startswith("The selection has no per-node settings")
    win.inspector.exclude.click()  # keep the three Convs float: an override each
    qtbot.waitUntil(lambda: set(win.doc.recipe.overrides) == set(CONVS))
    assert reset.isEnabled() and reset.toolTip().startswith("Remove the per-node settings")
    win.canvas.select_nodes([CONVS[0], "/f/f.1/Relu"])  # one of the two has an override
    qtbot.waitUntil(reset.isEnabled)
    reset.click()
    qtbot.waitUntil(lambda: CONVS[0] not in win.doc.recipe.overrides)
    assert not reset.isEnabled() and set(win.doc.recipe.overrides) == set(CONVS[1:])
