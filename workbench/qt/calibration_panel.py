"""Calibration panel: the data source, the sample counts, "Choose the recipe first" (the CLI's ``--auto``),
Start / Cancel and progress with ETA.

The panel only edits the data spec (the dict :func:`workbench.core.data.loader.open_data` takes) and asks
the window to start or cancel; the window runs the job (:mod:`workbench.qt.workers`) and makes each
change of the panel an undoable edit.

A spec given to :meth:`CalibrationPanel.set_data_spec` (a project's) comes back from
:meth:`CalibrationPanel.data_spec` exactly as given until the user edits a field: fields the panel has
no widget for (an .npz ``layout``, an image folder's ``resize``, ``pad_value`` and ``input``, a random
source's ``count`` and ``seed``) are kept, a field the project leaves out stays out (the loader's
default applies), and a value is never rounded by its widget (a scale of 1/255 stays 1/255, not the
spin box's 0.00392157). An edited field takes the widget's value; changing the source kind starts a
new spec of that kind.
"""

from __future__ import annotations

import copy
from pathlib import Path

from PySide6.QtCore import QSignalBlocker, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from workbench.core import api
from workbench.core.errors import DataError
from workbench.qt import settings
from workbench.qt.break_marks import breakable, keep_copies_clean
from workbench.qt.dialogs import guarded
from workbench.qt.eta import OVERALL_STEPS, OverallProgress, ProgressClock
from workbench.qt.path_field import PathField
from workbench.qt.runs import ANALYSIS_SAMPLES

KINDS = {"file": "Array file (.npz / .npy)", "folder": "Folder of .npz / .npy", "images": "Image folder",
         "python": "Python reader (.py)", "random": "Random (smoke test)"}
#: the loader's image scale when a spec names none (shown in the Scale box)
DEFAULT_SCALE = 1 / 255
#: image fields the panel edits (each widget shows "left out" as an empty text, "auto" or the loader's default)
IMAGE_FIELDS = ("size", "layout", "channel_order", "scale", "mean", "std")


class _StatusText(QLabel):
    """The panel's status text, whole in its tooltip too: the box beside the Inspector may show two or three lines
    of a long result, which the status bar's "Details: Calibration panel" points to; the window then grows the
    dock to show it whole as far as the Inspector can give (``status_fit``), and the rest scrolls. It wraps at
    the box's width: a long name or path wraps at its dots, underscores and slashes
    (:func:`~workbench.qt.break_marks.breakable`), and the label is never wider than the box (a file name wider
    than it made the box scroll sideways, the line cut at its right edge). :meth:`text` is the text as set.
    ``changed``: the text was set."""

    changed = Signal()

    def __init__(self, text: str = "", parent=None):
        super().__init__(parent)
        self.setMinimumWidth(1)  # its width is the box's: the text wraps, the box never scrolls sideways
        keep_copies_clean()  # a copied path or name holds no break marks
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt's name
        self._plain = text
        super().setText(breakable(text))
        self.setToolTip(text if len(text) > TOOLTIP_FROM else "")
        self.changed.emit()

    def text(self) -> str:
        return getattr(self, "_plain", "")


class _StatusScroll(QScrollArea):
    """The status text's scroll area: where the text is longer than the box, the box shows a whole number of
    its lines (the space under the last one left blank), so no line is cut in half at its bottom edge (it
    read as the end of the text)."""

    def snap(self) -> None:
        label = self.widget()
        if label is None:
            return
        line = label.fontMetrics().lineSpacing()
        height = self.height() - 2 * self.frameWidth()
        width = self.width() - 2 * self.frameWidth() - self.verticalScrollBar().sizeHint().width()
        cut = height % line if label.heightForWidth(max(width, 1)) > height else 0
        self.setViewportMargins(0, 0, 0, cut)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        self.snap()
        super().resizeEvent(event)


#: a status text longer than this many characters is also shown whole in the box's tooltip
TOOLTIP_FROM = 80


#: appended to a failed calibration's line once the data the panel shows (source, path, image fields, samples) is
#: no longer what it failed with (:meth:`CalibrationPanel._mark_failure_stale`)
DATA_CHANGED = "(The calibration data changed since; F5 calibrates on it.)"


def is_failure(text: str) -> bool:
    """Whether ``text`` is a failed job's line ("Calibrate failed: ...", as the window words it)."""
    head, sep, _rest = text.partition(" failed:")
    return bool(sep) and " " not in head.strip()


def _floats(text: str, what: str) -> list[float] | None:
    """Numbers typed in the ``what`` box (spaces or commas between them); None for an empty box."""
    parts = [p for p in text.replace(",", " ").split() if p]
    try:
        return [float(p) for p in parts] if parts else None
    except ValueError:
        raise DataError(f"Calibration panel: {what} {text!r} is not a list of numbers.",
                        hint="Type numbers separated by spaces (e.g. 0.485 0.456 0.406), or clear the box.") from None


def _joined(values) -> str:
    """A spec's list value as the panel's text box shows it."""
    if values is None:
        return ""
    if isinstance(values, (list, tuple)):
        return " ".join(str(v) for v in values)
    return str(values)


def panel_kind(spec: dict) -> str:
    """The Source entry that shows ``spec``: its ``kind`` (npz and npy are one entry), or for a spec with
    only a ``path`` (``workbench-cli quantize --data PATH --save-project``) the kind the loader opens that
    path as (:func:`workbench.core.data.loader.data_kind`)."""
    kind = spec.get("kind")
    if kind is None and isinstance(spec.get("path"), str) and spec["path"]:
        try:
            kind = api.data_kind(spec["path"])
        except OSError:  # an unreadable folder: the job will say so
            kind = "folder"
    return {"npz": "file", "npy": "file", None: "file"}.get(kind, kind)


class CalibrationPanel(QWidget):
    """Emits ``startRequested`` / ``cancelRequested``, and ``specChanged`` when the user changes a field;
    :meth:`data_spec`, :meth:`sample_count` and :meth:`analysis_count` give what it shows."""

    startRequested = Signal()
    cancelRequested = Signal()
    specChanged = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        #: ``refuse_data(spec) -> bool``: the window's check of a file chosen with Browse... against the model's
        #: inputs (True: refused, it said why, and the data shown stays); None: no check. A path typed in Path
        #: and committed (Enter, or the field left) is checked by it too; a path set in code is not
        self.refuse_data = None
        self._taken_path = ""  # the path last taken (shown by set_data_spec, chosen, or sent with specChanged)
        self._clock = ProgressClock()
        self._held: tuple[str, int, int, int] | None = None  # status, bar min, max, value while another job runs
        self._held_title = ""  # the other job's title while it runs
        self._failed_with: dict | None = None  # the data fields a failed job's line shown was about (_source)
        #: the spec last set (set_data_spec) and the widgets' state right after: data_spec() keeps what
        #: the user did not edit as the spec has it
        self._spec: dict | None = None
        self._samples: int | None = None
        self._analysis: int | None = None
        self._shown: dict = {}
        self._off = ""  # why the fields are off ("": on), :meth:`set_off`
        self._tips: dict[QWidget, str] = {}  # each field's own tooltip while the fields are off
        lay = QVBoxLayout(self)
        margins = lay.contentsMargins()  # the dock's title bar is above: thin top and bottom margins keep the
        lay.setContentsMargins(margins.left(), 4, margins.right(), 4)  # panel at its height before the checkbox
        form = QFormLayout()
        self.kind = QComboBox()
        for key, label in KINDS.items():
            self.kind.addItem(label, key)
        form.addRow("Source", self.kind)
        row = QHBoxLayout()
        self.path = PathField()  # a long path shows as "…n_calib.npz" (whole letters) until edited
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
        self.analysis_samples.setValue(ANALYSIS_SAMPLES)
        self.analysis_samples.setToolTip("Samples used to measure each node unit's error after calibration "
                                         "(the first N rows of the data, whatever the calibration count; the float and "
                                         "the fake-quantized model both run on each)")
        form.addRow("Analysis samples", self.analysis_samples)
        lay.addLayout(form)
        # "(as the CLI's --auto)" made the panel, and so the window, 12 px wider than its other rows
        self.choose_first = QCheckBox("Choose the recipe first (CLI --auto)")
        self.choose_first.setChecked(True)
        self.choose_first.setToolTip(
            "On: Start calibration (F5) on a preset, alone or with node overrides (kept as you set them), first "
            "chooses among the preset, MSE ranges and compute-only "
            "quantization (and a few units kept float, or 16-bit with s8s8) by the output SQNR on held-out rows, as "
            "workbench-cli quantize does by default; the chosen recipe is one undoable edit (Ctrl+Z restores the "
            "recipe it started from), calibrated on the choice's own ranges. A recipe with rules or an op-type list, "
            "or one already chosen, is calibrated as it is. Off: the preset as it is (workbench-cli quantize --no-auto). Saved in the project.")
        lay.addWidget(self.choose_first)
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
        self.progress = QProgressBar()  # beside the buttons: a row more for the status text
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setMinimumWidth(1)
        buttons.addWidget(self.progress, 1)
        lay.addLayout(buttons)
        self.status = _StatusText("Idle.")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.status.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        lay.addWidget(self._status_scroll(), 1)
        self.kind.currentIndexChanged.connect(self._on_kind)
        self.browse.clicked.connect(self._on_browse)
        # the field shows a long path's end ("…n_calib.npz"): the whole in the tooltip
        self.path.textChanged.connect(self.path.setToolTip)
        self.start.clicked.connect(self.startRequested)
        self.cancel.clicked.connect(self.cancelRequested)
        self.path.editingFinished.connect(self._on_path_committed)  # the user's typed edit only
        for w in (self.size, self.mean, self.std):
            w.editingFinished.connect(self.specChanged)
        for spin in (self.samples, self.analysis_samples):
            spin.valueChanged.connect(self.specChanged)
        for combo in (self.layout_combo, self.channel_order):
            combo.currentIndexChanged.connect(self.specChanged)
        self.scale.valueChanged.connect(self.specChanged)
        self.allow_code.toggled.connect(self.specChanged)
        self.choose_first.toggled.connect(self.specChanged)
        self.specChanged.connect(self._mark_failure_stale)
        self.specChanged.connect(self._take_path)
        self._on_kind()
        self._shown = self._state()

    def _image_fields(self) -> QWidget:
        box = QWidget()
        form = QFormLayout(box)
        form.setContentsMargins(0, 0, 0, 0)
        self.size = QLineEdit()
        self.size.setPlaceholderText("from the model's input (H W)")
        self.layout_combo = QComboBox()
        self.layout_combo.addItem("auto", "")
        self.layout_combo.setToolTip("auto: NHWC when the model's input has its channels last, else NCHW")
        for layout in ("NCHW", "NHWC"):
            self.layout_combo.addItem(layout, layout)
        self.channel_order = QComboBox()
        self.channel_order.addItems(["RGB", "BGR"])
        self.scale = QDoubleSpinBox()
        self.scale.setDecimals(8)
        self.scale.setRange(0.0, 1000.0)
        self.scale.setValue(DEFAULT_SCALE)
        self.scale.setToolTip("pixel x scale, before mean and std (a project's exact value is kept until you edit it)")
        self.mean = QLineEdit()
        self.mean.setPlaceholderText("0 per channel")
        self.std = QLineEdit()
        self.std.setPlaceholderText("1 per channel")
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
        for w in (self.path, self.browse):
            w.setEnabled(kind != "random" and not self._off)
        self.specChanged.emit()

    def _take_path(self) -> None:
        self._taken_path = self.path.text().strip()

    def _on_path_committed(self) -> None:
        """Enter in Path, or the field left after an edit: Source follows what was typed (a reader.py, a folder);
        a file typed while Source stays "Array file" is checked against the model's inputs as Browse... and a
        drop are (:attr:`refuse_data`). Refused, the path taken before comes back and nothing is emitted; else
        ``specChanged`` is emitted."""
        self._follow_typed_path()  # first: a reader.py or a folder takes its Source, which is not checked here
        typed = self.path.text().strip()
        if typed != self._taken_path and self._refused(typed):
            self.path.setText(self._taken_path)  # equal to the taken path: a second editingFinished checks nothing
            return
        self.specChanged.emit()

    def _refused(self, path: str) -> bool:
        """Whether the window refuses ``path`` as the array file of Source "Array file" (it then said why)."""
        if self.refuse_data is None or self.kind.currentData() != "file" or not path:
            return False
        return self.refuse_data({"kind": "npy" if path.lower().endswith(".npy") else "npz", "path": path})

    def _follow_typed_path(self) -> None:
        """A folder or a .py file typed in Path while Source is "Array file": Source follows what was typed, as
        ``--data PATH`` opens it (the placeholder offers "calib.npz, a folder, or a reader.py"; a folder typed there
        was read as an .npz and calibrating said "FOLDER: no such data file")."""
        path = self.path.text().strip()
        if self.kind.currentData() != "file" or not (path.lower().endswith(".py") or Path(path).is_dir()):
            return
        self.kind.setCurrentIndex(self.kind.findData(panel_kind({"path": path})))

    def _fields(self) -> tuple[QWidget, ...]:
        return (self.kind, self.path, self.browse, self.samples, self.analysis_samples, self.choose_first,
                self.images, self.allow_code)

    def set_off(self, reason: str) -> None:
        """Grey every field and Start, each saying ``reason`` in its tooltip and the status text (an
        already-quantized model: there is nothing to calibrate); ``""`` turns them on again with their
        own tooltips (Start follows the window's :meth:`start` enabling)."""
        if reason and not self._off:
            self._tips = {w: w.toolTip() for w in self._fields()}
        self._off = reason
        for w in self._fields():
            w.setEnabled(not reason)
            w.setToolTip(f"Disabled: {reason}" if reason else self._tips.get(w, w.toolTip()))
        if reason:
            self.start.setEnabled(False)
            self.status.setText(f"Calibration is off: {reason}")
        else:
            self._tips = {}
            for w in (self.path, self.browse):
                w.setEnabled(self.kind.currentData() != "random")

    @guarded
    def _on_browse(self, *_args) -> None:
        kind = self.kind.currentData()
        start = settings.last_folder("data", self.path.text())  # the folder of the last data chosen
        if kind in ("folder", "images"):
            path = QFileDialog.getExistingDirectory(self, "Calibration data folder", start)
        else:
            filt = "Python reader (*.py)" if kind == "python" else "Arrays (*.npz *.npy)"
            path, _ = QFileDialog.getOpenFileName(self, "Calibration data", start, filt)
        if path:
            settings.remember_folder("data", path)
            spec = {"kind": ("npy" if path.lower().endswith(".npy") else "npz") if kind == "file" else kind, "path": path}
            if self.refuse_data is not None and self.refuse_data(spec):
                return  # the window said why; the data shown stays
            self.path.setText(path)
            self.specChanged.emit()

    # ------------------------------------------------------------------ spec
    def _state(self) -> dict:
        """What each widget shows (compared with the state right after :meth:`set_data_spec`)."""
        return {"kind": self.kind.currentData(), "path": self.path.text().strip(), "size": self.size.text().strip(),
                "layout": self.layout_combo.currentData(), "channel_order": self.channel_order.currentText(),
                "scale": self.scale.value(), "mean": self.mean.text().strip(), "std": self.std.text().strip(),
                "allow_code": self.allow_code.isChecked(), "samples": self.samples.value(),
                "analysis_samples": self.analysis_samples.value()}

    def _source(self) -> dict:
        """The fields that say which calibration data is read (:meth:`_state` but the analysis sample count)."""
        return {k: v for k, v in self._state().items() if k != "analysis_samples"}

    def _mark_failure_stale(self) -> None:
        """A failed job's line shown, and the data shown is no longer what it failed with: say so (it read as if the
        new data had failed too)."""
        text = self.status.text()
        if (self._failed_with is None or self._held is not None or self.cancel.isEnabled() or not is_failure(text)
                or DATA_CHANGED in text or self._source() == self._failed_with):
            return
        self.status.setText(f"{text} {DATA_CHANGED}")

    def _edited(self) -> set[str]:
        state = self._state()
        return {key for key, value in state.items() if value != self._shown.get(key)}

    def _image_value(self, field: str):
        """The edited image field ``field`` as the spec holds it (None: left out, the loader decides)."""
        if field == "size":
            size = _floats(self.size.text(), "Size")
            return [int(v) for v in size] if size else None
        if field == "layout":
            return self.layout_combo.currentData() or None
        if field == "channel_order":
            return self.channel_order.currentText()
        if field == "scale":
            return self.scale.value()
        return _floats((self.mean if field == "mean" else self.std).text(), field.capitalize())

    def data_spec(self) -> dict | None:
        """The data source as a JSON-safe spec dict (None when no path is set): the spec last set, with the
        fields the user edited since (see the module docstring)."""
        edited = self._edited() - {"samples", "analysis_samples"}
        if not edited:
            return copy.deepcopy(self._spec)
        kind, path = self.kind.currentData(), self.path.text().strip()
        if kind != "random" and not path:
            return None
        same = "kind" not in edited and self._spec is not None
        spec = copy.deepcopy(self._spec) if same else {}
        if kind == "random":
            spec.pop("path", None)
        elif not same or "path" in edited:
            spec["path"] = path
        if not same:
            spec["kind"] = ("npy" if path.lower().endswith(".npy") else "npz") if kind == "file" else kind
        elif kind == "file" and "path" in edited and spec.get("kind") in ("npz", "npy"):
            spec["kind"] = "npy" if path.lower().endswith(".npy") else "npz"
        if kind == "images":
            for field in IMAGE_FIELDS:
                if field in edited:
                    value = self._image_value(field)
                    if value is None:
                        spec.pop(field, None)
                    else:
                        spec[field] = value
        if kind == "python" and (not same or "allow_code" in edited):
            spec["allow_code"] = self.allow_code.isChecked()
        return spec

    def sample_count(self) -> int | None:
        """Calibration samples (None: all)."""
        if "samples" not in self._edited():
            return self._samples
        return self.samples.value() or None

    def analysis_count(self) -> int | None:
        """Samples of the per-unit analysis (None: the project names none, :data:`ANALYSIS_SAMPLES` are used)."""
        if "analysis_samples" not in self._edited():
            return self._analysis
        return self.analysis_samples.value()

    def set_data_spec(self, spec: dict | None, samples: int | None) -> None:
        """Show ``spec`` and ``samples`` (emits nothing: the caller puts them in the document). Fields the spec
        leaves out show their default, never the previous spec's value."""
        spec = copy.deepcopy(spec) if spec else None
        shown = spec or {}
        images = spec is not None and panel_kind(spec) == "images"
        with QSignalBlocker(self):
            self._spec = spec
            self._samples = samples
            self.kind.setCurrentIndex(max(self.kind.findData(panel_kind(shown)), 0))
            path = shown.get("path")
            self.path.setText("" if path is None else str(path))
            self._taken_path = self.path.text().strip()
            image = shown if images else {}
            self.size.setText(_joined(image.get("size")))
            self.layout_combo.setCurrentIndex(max(self.layout_combo.findData(str(image.get("layout") or "").upper()), 0))
            self.channel_order.setCurrentIndex(max(self.channel_order.findText(str(image.get("channel_order", "RGB"))
                                                                               .upper()), 0))
            try:
                scale = float(image.get("scale", DEFAULT_SCALE))
            except (TypeError, ValueError):
                scale = DEFAULT_SCALE  # the loader reports it
            self.scale.setValue(scale)
            self.mean.setText(_joined(image.get("mean")))
            self.std.setText(_joined(image.get("std")))
            self.allow_code.setChecked(bool(shown.get("allow_code")))
            self.samples.setValue(int(samples or 0))
            self._on_kind()
            # the analysis count is not part of the spec: an edit of it stays an edit
            self._shown = dict(self._state(), analysis_samples=self._shown.get("analysis_samples"))
        self._mark_failure_stale()

    def set_analysis_samples(self, samples: int | None) -> None:
        """Show the analysis sample count (None: :data:`ANALYSIS_SAMPLES`); emits nothing."""
        with QSignalBlocker(self):
            self._analysis = samples
            self.analysis_samples.setValue(int(samples or ANALYSIS_SAMPLES))
            self._shown = dict(self._shown, analysis_samples=self.analysis_samples.value())

    def choose_recipe(self) -> bool:
        """Whether "Choose the recipe first" is ticked (:attr:`workbench.qt.document.Settings.choose_recipe`)."""
        return self.choose_first.isChecked()

    def set_choose_recipe(self, on: bool) -> None:
        """Show "Choose the recipe first" ticked or not; emits nothing."""
        with QSignalBlocker(self):
            self.choose_first.setChecked(bool(on))

    def _status_scroll(self) -> QScrollArea:
        """The status text in a frameless scroll area that takes the panel's spare height: a long result
        (the recipe choice's figures) scrolls instead of being cut off at the dock's bottom edge; it shows
        whole lines (:class:`_StatusScroll`)."""
        scroll = _StatusScroll()
        self.status.changed.connect(scroll.snap)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setMinimumHeight(self.fontMetrics().lineSpacing() + 2)  # one line at least; spare height beyond
        # its size hint stays out of the dock's: the panel asks for its fields, the text takes what is left
        scroll.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Ignored)
        scroll.setWidget(self.status)
        return scroll

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
            self._failed_with = self._source() if not running and is_failure(message) else None

    def hold(self, title: str) -> None:
        """Another job (export, report, sweep, evaluation) runs: Start waits, Cancel stops that job, and
        the panel keeps showing the last calibration's result; :meth:`release` restores it."""
        if self._held is None:
            self._held = (self.status.text(), self.progress.minimum(), self.progress.maximum(), self.progress.value())
        self.start.setEnabled(False)
        self.cancel.setEnabled(True)
        self._held_title = title
        self.show_held_progress(0, 0)

    def show_held_progress(self, done: int, total: int, overall: OverallProgress | None = None) -> None:
        """While another job runs (:meth:`hold`, its title): the bar and the text are that job's progress
        ("Export to m.onnx running (74 %); Cancel or Esc stops it."), as the status bar's; the whole job's with
        ``overall``, else ``done`` of ``total`` (0: a busy bar, no percentage). The panel read "0% Idle." with
        "(Export ... is running)" while the status bar said 74%."""
        if self._held is None or not self.cancel.isEnabled():  # not holding, or cancelling: the text stays
            return
        if overall is not None and overall.known:
            fraction = overall.fraction
        else:
            fraction = min(done, total) / total if total > 0 else None
        title = self._held_title
        if fraction is None:
            self.progress.setRange(0, 0)
            self.status.setText(f"{title} running; Cancel or Esc stops it.")
            return
        self.progress.setRange(0, OVERALL_STEPS)
        self.progress.setValue(round(fraction * OVERALL_STEPS))
        percent = self.progress.value() * 100 // OVERALL_STEPS  # the bar's own percentage (Qt's, rounded down)
        self.status.setText(f"{title} running ({percent} %); Cancel or Esc stops it.")

    def show_cancelling(self, title: str) -> None:
        """Cancel was asked for the running job ``title``: say so, and grey Cancel until it stops."""
        self.cancel.setEnabled(False)
        message = f"Cancelling {title}..."
        self.status.setText(message)  # another job's too: the calibration's result returns when it stopped

    def settle_failure(self, done: str) -> None:
        """A later job succeeded (``done``: its line): a failed job's line the panel shows, or shows again once
        that job is released, is out of date ("Calibrate failed: wrongnames.npz has no array ..." stayed after
        the path was fixed and a sweep and a comparison ran); ``done`` replaces it. Any other line stays."""
        if self._held is not None:
            if is_failure(self._held[0]):
                self._held = (done, 0, 1, 1)  # a full bar with it, as after a calibration that succeeded
        elif is_failure(self.status.text()):
            self.status.setText(done)
            self.progress.setRange(0, 1)
            self.progress.setValue(1)

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

    def show_progress(self, done: int, total: int, message: str, overall: OverallProgress | None = None) -> None:
        """Update the bar and the text (:class:`workbench.qt.eta.ProgressClock`): with ``overall`` (the job's
        phases, :class:`workbench.qt.eta.OverallProgress`) the bar is the whole job in 1/1000 and the ETA the
        whole job's; else the bar is this phase's ``done`` of ``total``."""
        if overall is not None and overall.known:
            self.progress.setRange(0, OVERALL_STEPS)
            self.progress.setValue(round(overall.fraction * OVERALL_STEPS))
        elif total > 0:
            self.progress.setRange(0, total)
            self.progress.setValue(min(done, total))
        else:  # a length the job cannot know: a busy bar, and the message says what it does
            self.progress.setRange(0, 0)
        self.status.setText(self._clock.text(done, total, message, overall))
