"""The welcome page: what the centre of the window shows while no model is open.

Open Model..., Open Project... and Open Example are buttons for the window's own actions (their
shortcuts shown beside them, disabled when the actions are), the recent files are buttons that open
them (:func:`workbench.qt.settings.recent_files`, re-read each time the page is shown), and one line
says that a model or project can be dropped on the window.
"""

from __future__ import annotations

import html
from importlib import resources
from pathlib import Path

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from workbench.qt import settings
from workbench.qt.theme import mute

#: the one line on what to do
DROP_HINT = "Drag an ONNX model (.onnx) or a Workbench project (.wbproj) onto this window to open it."
NO_RECENT = "No recent files yet: the models and projects you open are listed here."
#: after the path of a recent file that no longer exists (File > Open Recent and the welcome page's Recent list)
RECENT_NOT_FOUND = "  (not found)"
#: the tip of a recent file that no longer exists
RECENT_MISSING_TIP = "This file no longer exists: choose it to remove it from the list"


def example_model() -> Path:
    """The bundled example model (``workbench/resources/example/digits_cnn.onnx``, with its calibration and
    evaluation data beside it)."""
    return Path(str(resources.files("workbench.resources") / "example" / "digits_cnn.onnx"))


def is_bundled_example(path: str | Path) -> bool:
    """Whether ``path`` is in the bundled example's folder (opened at a launch without a model and by File > Open
    Example: it is not one of the user's recent files, nor where their Open dialog starts)."""
    try:
        return Path(path).resolve().parent == example_model().resolve().parent
    except OSError:
        return False


def recent_entry_text(path: str) -> str:
    """How a recent file is listed: ``path`` as stored, or "PATH  (not found)" (:data:`RECENT_NOT_FOUND`) when it
    no longer exists."""
    return path if Path(path).exists() else f"{path}{RECENT_NOT_FOUND}"


def _shortcut_text(action: QAction) -> str:
    keys = action.shortcut()
    return keys.toString(QKeySequence.SequenceFormat.NativeText) if not keys.isEmpty() else ""


class _ActionButton(QPushButton):
    """A large button that triggers ``action``, enabled with it; its shortcut on the right."""

    def __init__(self, action: QAction, text: str, detail: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.action = action
        self.setObjectName("welcome-action")
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setMinimumHeight(44)
        row = QHBoxLayout(self)
        row.setContentsMargins(14, 6, 14, 6)
        words = QVBoxLayout()
        words.setSpacing(1)
        title, note, keys = _passive(QLabel(f"<b>{text}</b>")), _passive(mute(QLabel(detail))), _passive(
            mute(QLabel(_shortcut_text(action))))
        # the detail line wraps (it was cut off beside the shortcut in a 1000 px window) and the button grows to
        # hold its lines: the button's height for a width is its layout's
        note.setWordWrap(True)
        words.addWidget(title)
        words.addWidget(note)
        row.addLayout(words, 1)
        row.addWidget(keys)
        self.title, self.note, self.keys = title, note, keys
        policy = self.sizePolicy()
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)
        self.setToolTip(action.statusTip() or "")
        self.clicked.connect(action.trigger)
        action.changed.connect(self._follow)
        self._follow()

    def hasHeightForWidth(self) -> bool:  # noqa: N802 - Qt override
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802 - Qt override
        return self.layout().totalHeightForWidth(width)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return self.layout().totalSizeHint()

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return self.layout().totalMinimumSize()

    def _follow(self) -> None:
        self.setEnabled(self.action.isEnabled())


class WelcomePage(QWidget):
    """The no-model page. ``recentChosen(path)`` when a recent file is clicked.

    ``actions`` maps "open", "open_project" and "open_example" to the window's QActions."""

    recentChosen = Signal(str)

    def __init__(self, actions: dict[str, QAction], parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("welcome")
        self.setAutoFillBackground(True)
        self.buttons = {
            "open": _ActionButton(actions["open"], "Open Model...", "An ONNX model (.onnx)"),
            "open_project": _ActionButton(actions["open_project"], "Open Project...",
                                          "A saved .wbproj: recipe, data and results"),
            "open_example": _ActionButton(actions["open_example"], "Open Example",
                                          f"{example_model().name}, a small CNN, with its data"),
        }
        self.recent_buttons: list[QPushButton] = []
        self.drop_hint = QLabel(DROP_HINT)
        self.drop_hint.setWordWrap(True)
        self.recent_box = QVBoxLayout()
        self.recent_box.setSpacing(2)
        self._build()
        self.refresh()

    def _build(self) -> None:
        title = QLabel("<span style='font-size:20pt; font-weight:600'>Workbench</span>")
        subtitle = QLabel("Post-training quantization of ONNX models: calibrate, see each node's error, export QDQ.")
        subtitle.setWordWrap(True)
        start = QVBoxLayout()
        start.setSpacing(8)
        start.addWidget(_heading("Start"))
        for button in self.buttons.values():
            start.addWidget(button)
        start.addStretch(1)
        recent = QVBoxLayout()
        recent.addWidget(_heading("Recent"))
        recent.addLayout(self.recent_box)
        recent.addStretch(1)
        columns = QGridLayout()
        columns.setHorizontalSpacing(32)
        columns.addLayout(start, 0, 0)
        columns.addLayout(recent, 0, 1)
        columns.setColumnStretch(0, 1)
        columns.setColumnStretch(1, 1)
        columns.setColumnMinimumWidth(0, 300)
        panel = QWidget()
        panel.setMaximumWidth(980)
        body = QVBoxLayout(panel)
        body.setContentsMargins(40, 32, 40, 32)
        body.setSpacing(12)
        body.addWidget(title)
        body.addWidget(subtitle)
        body.addWidget(_rule())
        body.addLayout(columns)
        body.addSpacing(8)
        body.addWidget(self.drop_hint)
        body.addStretch(1)
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        holder = QWidget()
        centre = QHBoxLayout(holder)
        centre.addStretch(1)
        centre.addWidget(panel, 100)
        centre.addStretch(1)
        scroll.setWidget(holder)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scroll)

    def refresh(self) -> None:
        """List the recent files again (most recent first, each file's name then its folder; a file gone since as
        "NAME  (not found)" and its folder, which the window removes from the list when chosen)."""
        for button in self.recent_buttons:
            self.recent_box.removeWidget(button)
            button.deleteLater()
        self.recent_buttons = []
        while self.recent_box.count():
            item = self.recent_box.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        files = settings.recent_files(existing=False)
        for path in files:
            self.recent_box.addWidget(self._recent_button(path))
        if not files:
            empty = QLabel(NO_RECENT)
            empty.setWordWrap(True)
            empty.setEnabled(False)
            self.recent_box.addWidget(empty)

    def _recent_button(self, path: str) -> QPushButton:
        p = Path(path)
        button = QPushButton()
        button.setObjectName("welcome-recent")
        button.setFlat(True)
        button.setCursor(Qt.CursorShape.PointingHandCursor)
        text = recent_entry_text(path)
        if text == path:
            button.setToolTip(f"Open {path}")
            label = _passive(QLabel(f"<b>{html.escape(p.name)}</b>"))
            folder = _passive(mute(QLabel(str(p.parent))))
        else:  # "NAME  (not found)" then the folder it was in, as a found file's name and folder: the whole path
            # first (as File > Open Recent lists it) was cut off before "(not found)" in a narrow window
            button.setToolTip(f"{path}\n{RECENT_MISSING_TIP}")
            label = _passive(mute(QLabel(f"{p.name}{RECENT_NOT_FOUND}")))
            label.setTextFormat(Qt.TextFormat.PlainText)
            folder = _passive(mute(QLabel(str(p.parent))))
        row = QHBoxLayout(button)
        row.setContentsMargins(8, 2, 8, 2)
        row.setSpacing(12)
        # the name (and "(not found)") keeps its width; the folder takes what is left, cut off first when narrow
        label.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Preferred)
        folder.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        row.addWidget(label)
        row.addWidget(folder, 1)
        button.setMinimumHeight(label.sizeHint().height() + 10)
        button.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        button.path, button.label, button.folder = path, label, folder
        button.clicked.connect(lambda _checked=False, f=path: self.recentChosen.emit(f))
        self.recent_buttons.append(button)
        return button

    def recent_paths(self) -> list[str]:
        """The paths the page lists, in order."""
        return [b.path for b in self.recent_buttons]

    def showEvent(self, event) -> None:  # noqa: N802 - Qt override
        self.refresh()
        super().showEvent(event)


def _passive(label: QLabel) -> QLabel:
    """``label`` inside a button: the clicks go to the button."""
    label.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
    return label


def _heading(text: str) -> QLabel:
    label = QLabel(f"<b>{text}</b>")
    label.setContentsMargins(0, 4, 0, 2)
    return label


def _rule() -> QFrame:
    line = QFrame()
    line.setFrameShape(QFrame.Shape.HLine)
    line.setFrameShadow(QFrame.Shadow.Sunken)
    return line
