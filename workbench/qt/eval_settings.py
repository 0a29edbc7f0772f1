"""What Evaluate and Autotune measure: the eval data (.npz), the task metric and the sample count.

The metric is a built-in of :data:`workbench.core.analysis.metrics.METRICS` (top1 needs ``gt_label``
in the data; cosine, output_sqnr and detection_scores compare with the float model's outputs) or a
Python file defining ``metric(outputs, batch) -> float``. Loading a file runs its code, so it needs
the explicit "Allow code" tick (the CLI's ``--allow-code``). :meth:`EvalSettings.evaluation` gives
the job fields (:func:`workbench.core.jobs.job_evaluate`) or raises a WorkbenchError that says
what to fix.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

from workbench.core.api import METRICS
from workbench.core.errors import DataError
from workbench.qt import settings

#: combo entry that switches to a metric file
FILE_METRIC = "file"
#: combo entry for no task metric (per-output SQNR / cosine only)
NO_METRIC = ""


def default_eval_data(model_path: Path) -> Path | None:
    """``<stem>_eval.npz`` or ``eval.npz`` beside the model (the corpus layout), else None."""
    for name in (f"{model_path.stem}_eval.npz", "eval.npz"):
        candidate = model_path.parent / name
        if candidate.is_file():
            return candidate
    return None


def npz_keys(path: Path) -> list[str]:
    """Array names in an .npz (read from the zip directory only, no array is loaded); [] if unreadable."""
    try:
        with zipfile.ZipFile(path) as z:
            return [n[:-4] if n.endswith(".npy") else n for n in z.namelist()]
    except (OSError, zipfile.BadZipFile):
        return []


def default_metric(eval_path: Path | None) -> str:
    """top1 when the eval data has ``gt_label``, else cosine against the float model."""
    return "top1" if eval_path is not None and "gt_label" in npz_keys(eval_path) else "cosine"


class EvalSettings(QWidget):
    """Eval data, metric (built-in or file, with the allow-code opt-in) and samples; emits ``changed``."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        self.data = QLineEdit()
        self.data.setPlaceholderText("eval.npz (keys: the model's inputs, gt_* labels)")
        self.browse = QPushButton("Browse...")
        self.samples = QSpinBox()
        self.samples.setRange(0, 1_000_000)
        self.samples.setSpecialValueText("all")
        self.samples.setToolTip("Use only the first N eval samples (all: the whole file)")
        grid.addWidget(QLabel("Eval data"), 0, 0)
        grid.addWidget(self.data, 0, 1)
        grid.addWidget(self.browse, 0, 2)
        grid.addWidget(QLabel("Samples"), 0, 3)
        grid.addWidget(self.samples, 0, 4)
        self.metric = QComboBox()
        self.metric.addItem("(none)", NO_METRIC)  # per-output SQNR / cosine only
        for name in METRICS:
            self.metric.addItem(name, name)
        self.metric.addItem("file (.py)", FILE_METRIC)
        self.metric.setToolTip("Task metric computed on the float and on the quantized model (higher is better)")
        self.metric_file = QLineEdit()
        self.metric_file.setPlaceholderText("metric.py defining metric(outputs, batch) -> float")
        self.browse_metric = QPushButton("Browse...")
        self.allow_code = QCheckBox("Allow code")
        self.allow_code.setToolTip("Loading a metric file executes its Python code; tick only for files you trust")
        row = QHBoxLayout()
        row.addWidget(self.metric)
        row.addWidget(self.metric_file, 1)
        grid.addWidget(QLabel("Metric"), 1, 0)
        grid.addLayout(row, 1, 1)
        grid.addWidget(self.browse_metric, 1, 2)
        grid.addWidget(self.allow_code, 1, 3, 1, 2)
        grid.setColumnStretch(1, 1)
        self.browse.clicked.connect(self._on_browse)
        self.browse_metric.clicked.connect(self._on_browse_metric)
        self.metric.currentIndexChanged.connect(self._on_metric)
        for w in (self.data, self.metric_file):
            w.editingFinished.connect(self.changed)
        self.allow_code.toggled.connect(self.changed)
        self.samples.valueChanged.connect(self.changed)
        self._on_metric()

    # ------------------------------------------------------------------ state
    def reset(self, model_path: Path | None) -> None:
        """Defaults for a newly opened model: eval data beside it, the metric it supports, all samples."""
        found = default_eval_data(model_path) if model_path is not None else None
        self.data.setText(str(found) if found else "")
        self.set_metric(default_metric(found))
        self.metric_file.clear()
        self.allow_code.setChecked(False)
        self.samples.setValue(0)
        self.changed.emit()

    def set_metric(self, metric: str) -> None:
        """Choose a built-in metric by name, or a metric file by path (anything ending in .py)."""
        if metric.endswith(".py"):
            self.metric.setCurrentIndex(self.metric.findData(FILE_METRIC))
            self.metric_file.setText(metric)
        else:
            self.metric.setCurrentIndex(max(0, self.metric.findData(metric)))
        self.changed.emit()

    def metric_spec(self) -> str | None:
        """The metric as the jobs take it: a built-in name, a file path, or None."""
        key = self.metric.currentData()
        if key == FILE_METRIC:
            return self.metric_file.text().strip() or None
        return key or None

    def metric_label(self) -> str:
        """Short name for plots and tables: the built-in name or the file's stem."""
        spec = self.metric_spec()
        return "no metric" if spec is None else (Path(spec).stem if spec.endswith(".py") else spec)

    def evaluation(self) -> dict:
        """Job fields ``eval_data``, ``eval_samples``, ``metric``, ``allow_code``.

        Raises
        ------
        DataError
            No eval data, a missing or non-.npz file, a metric file missing, or not allowed to run.
        """
        text = self.data.text().strip()
        if not text:
            raise DataError("No eval data chosen.", hint="Pick an .npz with the model's inputs in the Evaluate panel.")
        path = Path(text).expanduser()
        if not path.is_file():
            raise DataError(f"{path}: eval data not found.", hint="Check the path in the Evaluate panel.")
        if path.suffix.lower() != ".npz":
            raise DataError(f"{path}: eval data must be an .npz file.",
                            hint="Save the eval arrays with numpy.savez (keys: input names, gt_* labels).")
        metric = self.metric_spec()
        if self.metric.currentData() == FILE_METRIC:
            if metric is None:
                raise DataError("No metric file chosen.", hint="Pick a .py file defining metric(outputs, batch).")
            mpath = Path(metric).expanduser()
            if not mpath.is_file() or mpath.suffix != ".py":
                raise DataError(f"{mpath}: metric file not found (or not a .py file).", hint="Check the path.")
            if not self.allow_code.isChecked():
                raise DataError(f"{mpath}: loading a metric file runs its Python code, which is off by default.",
                                hint="Tick 'Allow code' in the Evaluate panel if you trust this file.")
            metric = str(mpath.resolve())
        return {"eval_data": str(path.resolve()), "eval_samples": self.samples.value() or None,
                "metric": metric, "allow_code": self.allow_code.isChecked()}

    def describe(self) -> str:
        """One line: metric, data file and samples (for the Autotune panel); without eval data, that
        it is to be chosen (it read "no metric on no eval data")."""
        data = Path(self.data.text().strip()).name
        if not data:
            return "none chosen yet (choose the eval data there)"
        n = self.samples.value()
        return f"{self.metric_label()} on {data}, {n if n else 'all'} samples"

    # ------------------------------------------------------------------ slots
    def _on_metric(self, *_args) -> None:
        is_file = self.metric.currentData() == FILE_METRIC
        for w in (self.metric_file, self.browse_metric, self.allow_code):
            w.setEnabled(is_file)
        self.changed.emit()

    def _on_browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Eval data", settings.last_folder("data", self.data.text()),
                                              "NumPy archives (*.npz)")
        if path:
            settings.remember_folder("data", path)
            self.data.setText(path)
            if self.metric.currentData() != FILE_METRIC:
                self.set_metric(default_metric(Path(path)))
            self.changed.emit()

    def _on_browse_metric(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Metric file", self.metric_file.text(), "Python (*.py)")
        if path:
            self.metric_file.setText(path)
            self.changed.emit()
