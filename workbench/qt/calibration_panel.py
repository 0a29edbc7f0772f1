"""Calibration panel: the data source, the sample count, Start / Cancel and progress with ETA.

The panel only edits the data spec (the dict :func:`workbench.core.data.loader.open_data` takes) and asks
the window to start or cancel; the window runs the job (:mod:`workbench.qt.workers`).
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from workbench.qt.dialogs import guarded
from workbench.qt.eta import ProgressClock

KINDS = {"file": "Array file (.npz / .npy)", "folder": "Folder of .npz / .npy", "images": "Image folder",
         "python": "Python reader (.py)"}


def _floats(text: str) -> list[float] | None:
    parts = [p for p in text.replace(",", " ").split() if p]
    return [float(p) for p in parts] if parts else None


class CalibrationPanel(QWidget):
    """Emits ``startRequested`` / ``cancelRequested``; :meth:`data_spec` gives the source."""

    startRequested = Signal()
    cancelRequested = Signal()
    specChanged = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._clock = ProgressClock()
        self._held: tuple[str, int, int, int] | None = None  # status, bar min, max, value while another job runs
        lay = QVBoxLayout(self)
        form = QFormLayout()
        self.kind = QComboBox()
        for key, label in KINDS.items():
            self.kind.addItem(label, key)
        form.addRow("Source", self.kind)
        row = QHBoxLayout()
        self.path = QLineEdit()
        self.path.setPlaceholderText("calib.npz, a folder, or a reader.py")
        self.browse = QPushButton("Browse...")
        row.addWidget(self.path, 1)
        row.addWidget(self.browse)
        form.addRow("Path", row)
        self.samples = QSpinBox()
        self.samples.setRange(0, 1_000_000)
        self.samples.setSpecialValueText("all")
        self.samples.setValue(0)
        form.addRow("Samples", self.samples)
        self.analysis_samples = QSpinBox()
        self.analysis_samples.setRange(1, 100_000)
        self.analysis_samples.setValue(32)
        self.analysis_samples.setToolTip("Samples used to measure each node unit's error after calibration "
                                         "(the first N rows of the data, whatever the calibration count; the float and "
                                         "the fake-quantized model both run on each)")
        form.addRow("Analysis samples", self.analysis_samples)
        lay.addLayout(form)
        self.images = self._image_fields()
        lay.addWidget(self.images)
        self.allow_code = QCheckBox("Allow code: run this Python file to read samples")
        lay.addWidget(self.allow_code)
        buttons = QHBoxLayout()
        self.start = QPushButton("Start calibration")
        self.cancel = QPushButton("Cancel")
        self.cancel.setEnabled(False)
        buttons.addWidget(self.start)
        buttons.addWidget(self.cancel)
        lay.addLayout(buttons)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        lay.addWidget(self.progress)
        self.status = QLabel("Idle.")
        self.status.setWordWrap(True)
        lay.addWidget(self.status)
        lay.addStretch(1)
        self.kind.currentIndexChanged.connect(self._on_kind)
        self.browse.clicked.connect(self._on_browse)
        self.start.clicked.connect(self.startRequested)
        self.cancel.clicked.connect(self.cancelRequested)
        for w in (self.path, self.size, self.mean, self.std):
            w.editingFinished.connect(self.specChanged)
        self.samples.valueChanged.connect(self.specChanged)
        for combo in (self.layout_combo, self.channel_order):
            combo.currentIndexChanged.connect(self.specChanged)
        self.scale.valueChanged.connect(self.specChanged)
        self.allow_code.toggled.connect(self.specChanged)
        self._on_kind()

    def _image_fields(self) -> QWidget:
        box = QWidget()
        form = QFormLayout(box)
        form.setContentsMargins(0, 0, 0, 0)
        self.size = QLineEdit("224 224")
        self.layout_combo = QComboBox()
        self.layout_combo.addItems(["NCHW", "NHWC"])
        self.channel_order = QComboBox()
        self.channel_order.addItems(["RGB", "BGR"])
        self.scale = QDoubleSpinBox()
        self.scale.setDecimals(8)
        self.scale.setRange(0.0, 1000.0)
        self.scale.setValue(1 / 255)
        self.mean = QLineEdit("0 0 0")
        self.std = QLineEdit("1 1 1")
        form.addRow("Size (H W)", self.size)
        form.addRow("Layout", self.layout_combo)
        form.addRow("Channels", self.channel_order)
        form.addRow("Scale", self.scale)
        form.addRow("Mean", self.mean)
        form.addRow("Std", self.std)
        return box

    def _on_kind(self, _index: int = 0) -> None:
        kind = self.kind.currentData()
        self.images.setVisible(kind == "images")
        self.allow_code.setVisible(kind == "python")
        self.specChanged.emit()

    @guarded
    def _on_browse(self, *_args) -> None:
        kind = self.kind.currentData()
        if kind in ("folder", "images"):
            path = QFileDialog.getExistingDirectory(self, "Calibration data folder", self.path.text())
        else:
            filt = "Python reader (*.py)" if kind == "python" else "Arrays (*.npz *.npy)"
            path, _ = QFileDialog.getOpenFileName(self, "Calibration data", self.path.text(), filt)
        if path:
            self.path.setText(path)
            self.specChanged.emit()

    # ------------------------------------------------------------------ spec
    def data_spec(self) -> dict | None:
        """The data source as a JSON-safe spec dict (None when no path is set)."""
        path = self.path.text().strip()
        if not path:
            return None
        kind = self.kind.currentData()
        if kind == "file":
            return {"kind": "npy" if path.lower().endswith(".npy") else "npz", "path": path}
        if kind == "folder":
            return {"kind": "folder", "path": path}
        if kind == "python":
            return {"kind": "python", "path": path, "allow_code": self.allow_code.isChecked()}
        spec: dict = {"kind": "images", "path": path, "layout": self.layout_combo.currentText(),
                      "channel_order": self.channel_order.currentText(), "scale": self.scale.value()}
        size = _floats(self.size.text())
        if size:
            spec["size"] = [int(v) for v in size]
        for key, w in (("mean", self.mean), ("std", self.std)):
            values = _floats(w.text())
            if values:
                spec[key] = values
        return spec

    def sample_count(self) -> int | None:
        return self.samples.value() or None

    def set_data_spec(self, spec: dict | None, samples: int | None) -> None:
        spec = dict(spec or {})
        kind = spec.get("kind", "npz")
        key = {"npz": "file", "npy": "file"}.get(kind, kind)
        index = self.kind.findData(key)
        self.kind.setCurrentIndex(max(index, 0))
        self.path.setText(str(spec.get("path", "")))
        if kind == "images":
            if spec.get("size"):
                self.size.setText(" ".join(str(v) for v in spec["size"]))
            self.layout_combo.setCurrentText(spec.get("layout", "NCHW"))
            self.channel_order.setCurrentText(spec.get("channel_order", "RGB"))
            if spec.get("scale") is not None:
                self.scale.setValue(float(spec["scale"]))
            for key_, w in (("mean", self.mean), ("std", self.std)):
                if spec.get(key_):
                    w.setText(" ".join(str(v) for v in spec[key_]))
        self.allow_code.setChecked(bool(spec.get("allow_code")))
        self.samples.setValue(int(samples or 0))

    # ------------------------------------------------------------------ progress
    def set_running(self, running: bool, message: str = "") -> None:
        self._held = None
        self.start.setEnabled(not running)
        self.cancel.setEnabled(running)
        if running:
            self._clock.start()
            self.progress.setRange(0, 0)
        else:
            self.progress.setRange(0, 1)
            self.progress.setValue(1 if message.startswith("Done") else 0)
        if message:
            self.status.setText(message)

    def hold(self, title: str) -> None:
        """Another job (export, report, sweep, evaluation) runs: Start waits, Cancel stops that job, and
        the panel keeps showing the last calibration's result; :meth:`release` restores it."""
        if self._held is None:
            self._held = (self.status.text(), self.progress.minimum(), self.progress.maximum(), self.progress.value())
        self.start.setEnabled(False)
        self.cancel.setEnabled(True)
        self.status.setText(f"{self._held[0]} ({title} is running; Cancel or Esc stops it.)")

    def show_cancelling(self, title: str) -> None:
        """Cancel was asked for the running job ``title``: say so, and grey Cancel until it stops."""
        self.cancel.setEnabled(False)
        message = f"Cancelling {title}..."
        self.status.setText(f"{self._held[0]} ({message})" if self._held is not None else message)

    def release(self) -> None:
        """The other job ended: the panel shows the calibration's own state again."""
        self.start.setEnabled(True)
        self.cancel.setEnabled(False)
        if self._held is not None:
            text, lo, hi, value = self._held
            self._held = None
            self.progress.setRange(lo, hi)
            self.progress.setValue(value)
            self.status.setText(text)

    def show_progress(self, done: int, total: int, message: str) -> None:
        """Update the bar and the text (:class:`workbench.qt.eta.ProgressClock`)."""
        if total > 0:
            self.progress.setRange(0, total)
            self.progress.setValue(min(done, total))
        else:  # a length the job cannot know: a busy bar, and the message says what it does
            self.progress.setRange(0, 0)
        self.status.setText(self._clock.text(done, total, message))
