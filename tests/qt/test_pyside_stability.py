"""PySide6 6.12.0 on Python 3.11 aborts after ~5,000 calls of void Qt methods; the pinned version must not.

The abort kills the interpreter, so a bad PySide6 shows up as a crashed test run, not a failure.
"""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("PySide6")

from PySide6 import __version__ as pyside_version  # noqa: E402
from PySide6.QtWidgets import QGraphicsRectItem, QGraphicsScene, QWidget  # noqa: E402

CALLS = 20_000


def test_installed_pyside_is_not_the_broken_release():
    if sys.version_info < (3, 12):
        assert pyside_version != "6.12.0", "PySide6 6.12.0 aborts on Python 3.11; pyproject excludes it"


def test_twenty_thousand_void_calls(qtbot):
    scene = QGraphicsScene()
    item = QGraphicsRectItem(0, 0, 10, 10)
    scene.addItem(item)
    widget = QWidget()
    qtbot.addWidget(widget)
    for i in range(CALLS):
        item.setPos(float(i % 97), float(i % 89))  # void QGraphicsItem::setPos
        widget.setToolTip(f"tip {i}")  # void QWidget::setToolTip
    assert item.pos().x() == float((CALLS - 1) % 97)
    assert item.pos().y() == float((CALLS - 1) % 89)
    assert widget.toolTip() == f"tip {CALLS - 1}"
