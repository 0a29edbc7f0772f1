"""The Inspector's node facts take the colours of a theme chosen while they are shown.

Found by a user pass: with a Conv of digits_cnn selected in the light theme, View > Theme > Dark left its facts in
light-theme colours on the dark panel: the field names in #555555, the tensor links in the light palette's blue,
and the section titles (Attributes, Inputs, Output) in black; the "Node: Conv" button (bold by a style sheet) stayed
light grey."""

from __future__ import annotations

from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QLabel

from workbench.qt.node_facts_view import NodeBox
from workbench.qt.theme import colors_for


def test_node_facts_follow_a_theme_switch(qtbot, window, open_file, corpus):
    win = window
    win.set_theme("light")
    open_file(win, corpus / "digits_cnn/model_opset17.onnx")
    win.focus_node("/f/f.3/Conv")
    box = win.inspector.findChild(NodeBox)
    assert box.facts is not None and box.facts.name == "/f/f.3/Conv"
    light, dark = colors_for("light").muted_text, colors_for("dark").muted_text
    rows = lambda: [label for _section, _key, label in box.rows]  # noqa: E731
    assert rows() and all(light in row.text() for row in rows())

    win.set_theme("dark")
    qtbot.waitUntil(lambda: all(dark in row.text() for row in rows()), timeout=5_000)  # #555555 before
    assert not any(light in row.text() for row in rows())
    assert box.shown("inputs")[0][1].startswith("/f/f.2/Relu_output_0")  # the same facts
    text = QPalette().color(QPalette.ColorRole.WindowText)  # the dark palette's
    def headings() -> list[QLabel]:
        return [label for label in box.findChildren(QLabel) if label.isVisibleTo(box)
                and label.text() in ("Attributes", "Inputs", "Output")]

    qtbot.waitUntil(lambda: len(headings()) == 3, timeout=5_000)  # the new rows shown
    for label in headings():  # drawn in the palette's text colour (black before)
        assert label.palette().color(QPalette.ColorRole.WindowText) == text, label.text()
    drawn = box.toggle.grab().toImage()  # the "Node: Conv" button, drawn on the dark panel (#dbdbdb before)
    assert drawn.pixelColor(3, drawn.height() // 2).lightness() < 100, drawn.pixelColor(3, drawn.height() // 2).name()
    win.set_theme("light")
