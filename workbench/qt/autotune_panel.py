"""Autotune panel: the target, Run / Cancel, and the curve of metric against size as it grows.

Autotune (:func:`workbench.core.tuning.autotune.autotune`) keeps the most sensitive units out of
8 bits until the task metric reaches the target (``float metric - max drop``, or a minimum score).
Every recipe it tries is one point: x is its weight size (Conv/MatMul/Gemm weights at the plan's
bits, biases at 32, in KiB) or its bit operations (``sum MACs * b_w * b_a``, GBOPs; see
:mod:`workbench.core.analysis.cost`), y the metric on the eval data of the Evaluate panel. Points
arrive while the job runs (:meth:`add_point`); clicking one emits :attr:`pointClicked` with its
index and the window applies that recipe as one undoable edit.
"""

from __future__ import annotations

import math
from pathlib import PurePath

import pyqtgraph as pg
from PySide6.QtCore import QPointF, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from workbench.core.api import Recipe, fmt_metric
from workbench.core.wording import count
from workbench.qt.wrapped_height import WrappedHeight

#: x axis key -> (axis title, units shown, CurvePoint field, divisor)
X_AXES = {"weight": ("weight size", "KiB", "weight_bytes", 1024.0),
          "bops": ("bit operations", "GBOPs", "bops", 1e9)}
PASS_COLOR = "#2e9e44"
FAIL_COLOR = "#d0342c"
APPLIED_COLOR = "#1f4fd1"
TARGET_COLOR = "#888888"
FLOAT_COLOR = "#3b78c2"
PROMOTE_TO = ("float", "int16", "uint16", "int16,float")
#: the least height (pixels) of the curve: its five legend entries (about 125 px) and the x axis with its title
#: under a view box of about 80 px; a 1024 x 700 window left it 115 px, the last entry cut and no axis title
MIN_PLOT_HEIGHT = 160


def _name(path: str | None) -> str:
    return PurePath(path).name if path else ""


def _eval_key(evaluation: dict) -> tuple:
    """What the metrics of a run depend on: the eval file, the samples, the metric (files by name: a project
    moved with its files still reads them)."""
    return _name(evaluation.get("eval_data")), evaluation.get("eval_samples") or None, _name(evaluation.get("metric"))


class AutotunePanel(QWidget):
    """Emits ``runRequested``, ``cancelRequested`` and ``pointClicked(index)`` (into :attr:`points`)."""

    runRequested = Signal()
    cancelRequested = Signal()
    pointClicked = Signal(int)

    def __init__(self, document, parent: QWidget | None = None):
        super().__init__(parent)
        self.doc = document
        self.points: list[dict] = []  # {"point": CurvePoint JSON, "recipe": JSON, "metric_float": float}
        self.metric_float: float | None = None
        self.target_value: float | None = None
        self.final: dict | None = None
        self.metric_name = ""
        self._target: dict = {}
        self._promoted_to = "float"
        self._evaluation: dict = {}  # the eval settings of the last run (for the report)
        self._current_evaluation: dict | None = None  # the Evaluate panel's settings now (set_uses)
        lay = QVBoxLayout(self)
        top = QHBoxLayout()
        self.target_kind = QComboBox()
        self.target_kind.addItem("Max drop from float", "max_drop")
        self.target_kind.addItem("Min score", "min_score")
        self.target = QDoubleSpinBox()
        self.target.setDecimals(6)  # a cosine max-drop of 5e-05 was rounded to 1e-04
        self.target.setRange(-1e6, 1e6)
        self.target.setSingleStep(0.001)
        self.target.setValue(0.01)
        self.target.setToolTip("Allowed drop of the metric below the float model's (or the lowest score accepted)")
        self.promote_to = QComboBox()
        self.promote_to.addItems(list(PROMOTE_TO))
        self.promote_to.setToolTip("What a promoted unit becomes: float (excluded), wider activations, or "
                                   "int16,float: int16 tried first, float where int16 does not hold")
        self.x_axis = QComboBox()
        for key, (title, unit, _f, _d) in X_AXES.items():
            self.x_axis.addItem(f"{title} ({unit})", key)
        self.run_button = QPushButton("Autotune")
        self.run_button.setToolTip("Promote the most sensitive units until the target holds (Shift+F9)")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        # three short rows, not one long one: the dock shares its row with the Errors dock, and the
        # sum of their minimum widths must fit the window (one 700 px row widened it to 1591 px)
        top.addWidget(QLabel("Target:"))
        top.addWidget(self.target_kind)
        top.addWidget(self.target)
        top.addStretch(1)
        top.addWidget(self.run_button)
        top.addWidget(self.cancel_button)
        lay.addLayout(top)
        second = QHBoxLayout()
        for label, w in (("Promote to:", self.promote_to), ("Plot against:", self.x_axis)):
            second.addWidget(QLabel(label))
            second.addWidget(w)
        second.addStretch(1)
        lay.addLayout(second)
        self.uses = QLabel()
        self.uses.setWordWrap(True)
        lay.addWidget(self.uses)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        lay.addWidget(self.progress)
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        lay.addWidget(self.summary)
        # the plot and, right of it (never over the points), its legend
        self.plot = pg.GraphicsLayoutWidget()
        self.plot_item = self.plot.addPlot(row=0, col=0)
        self.plot_item.showGrid(x=True, y=True, alpha=0.3)
        self.plot_item.setMenuEnabled(False)
        for side in ("left", "bottom"):  # top1 0.986-0.996 read "top1 (x0.001)" with ticks 986-996
            self.plot_item.getAxis(side).enableAutoSIPrefix(False)
        self.legend = pg.LegendItem()
        self.plot.addItem(self.legend, row=0, col=1)
        self.plot.setMinimumHeight(MIN_PLOT_HEIGHT)
        lay.addWidget(self.plot, 1)
        lay.addStretch(0)  # holds the room of the hidden plot: the controls stay on top
        self.wrapped_height = WrappedHeight(self)  # the dock makes room for the wrapped lines, not the plot
        self.scatter = pg.ScatterPlotItem(size=11, hoverable=True, tip=self._tip)
        self.scatter.sigClicked.connect(self._on_clicked)
        self.applied: int | None = None
        self.run_button.clicked.connect(self.runRequested)
        self.cancel_button.clicked.connect(self.cancelRequested)
        self.x_axis.currentIndexChanged.connect(lambda _i: self._redraw())
        document.modelChanged.connect(self.clear)  # a cancelled run's points too (no finished run to compare)
        document.autotuneChanged.connect(self._on_autotune)
        document.dataChanged.connect(self._say_final)
        document.recipeChanged.connect(self._on_recipe)
        self.clear()

    # ------------------------------------------------------------------ inputs
    def target_fields(self) -> dict:
        """``max_drop`` or ``min_score``, and ``promote_to``, as :func:`workbench.core.jobs.job_autotune` takes them."""
        return {self.target_kind.currentData(): self.target.value(), "promote_to": self.promote_to.currentText()}

    def set_uses(self, text: str, evaluation: dict | None = None) -> None:
        """The Evaluate panel's settings the next run uses: ``text`` describes them, ``evaluation`` holds them
        as the job takes them (None: they do not make a run yet); the finished curve says when it was
        measured with others."""
        self.uses.setText(f"Metric and eval data from the Evaluate panel: {text}.")
        self._current_evaluation = evaluation
        self._say_final()

    # ------------------------------------------------------------------ run state
    def clear(self) -> None:
        """No curve (a new model, or a new run starting)."""
        self.points, self.final, self.applied = [], None, None
        self.cancelled = False  # the shown points are those of a run stopped before its end
        self.metric_float = self.target_value = None
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self._redraw()
        self.summary.setText("No autotune yet: set a target, then Run > Autotune (Shift+F9).")

    def start(self, metric_name: str, target: dict, evaluation: dict | None = None) -> None:
        self.clear()
        self.metric_name = metric_name
        self._evaluation = dict(evaluation or {})  # eval data and samples the curve is measured on
        self._target = dict(target)
        self._promoted_to = target.get("promote_to", "float")
        self.set_running(True, "Autotune: calibrating...")

    def set_running(self, running: bool, message: str = "") -> None:
        """Cancel enabled while this panel's job runs (the window enables the run button)."""
        self.cancel_button.setEnabled(running)
        if running:
            self.progress.setRange(0, 0)
        else:
            self.progress.setRange(0, 1)
            self.progress.setValue(1 if self.final is not None else 0)
        if message:
            self.summary.setText(message)

    def stopped(self) -> None:
        """The run ended without its result: its points, if any, stay as a partial (cancelled) curve."""
        self.cancelled = bool(self.points)
        self.summary.setText(self._cancelled_text() if self.points else
                             "Autotune stopped before any recipe was measured: nothing to apply.")

    def _cancelled_text(self) -> str:
        return (f"Autotune cancelled after {count(len(self.points), 'recipe')}: a partial curve; "
                "the points stay clickable.")

    def show_progress(self, _done: int, _total: int, message: str) -> None:
        """Autotune cannot know how many recipes it will try: the bar stays busy, the text says what it does."""
        self.summary.setText(message)

    def _set_target_value(self) -> None:
        """The target line: the minimum score, or the float model's metric less the allowed drop."""
        target = self._target
        if "min_score" in target:
            self.target_value = target["min_score"]
        elif self.metric_float is not None and "max_drop" in target:
            self.target_value = self.metric_float - target["max_drop"]

    def add_point(self, entry: dict) -> None:
        """One measured recipe (``{"point", "recipe", "metric_float"}``), drawn at once."""
        self.metric_float = entry.get("metric_float", self.metric_float)
        self._set_target_value()
        self.points.append(entry)
        self._redraw()
        self.summary.setText(f"{count(len(self.points), 'recipe')} tried; last: "
                             f"{count(entry['point']['promoted'], 'unit')} promoted, {self.metric_name} {fmt_metric(entry['point']['metric'])}.")

    def set_result(self, result: dict) -> None:
        """The finished job: the sorted curve and the chosen recipe."""
        self.final = result
        self.points = list(result["curve"])
        self.metric_float = result["metric_float"]
        self._set_target_value()  # also when no point came before the result (a run of one recipe)
        self.set_running(False)
        self._redraw()
        self.summary.setText(self._final_text())

    def saved_run(self) -> dict | None:
        """The finished run as a project saves it (:func:`workbench.qt.document.check_autotune_run`): the job's
        result, the metric's label, the target and the eval settings; a cancelled run's points marked
        ``cancelled`` (no target met or not); None before a run ends."""
        if self.final is None:
            if not self.cancelled:
                return None
            return {"result": {"curve": list(self.points), "metric_float": self.metric_float}, "cancelled": True,
                    "metric": self.metric_name, "target": dict(self._target), "evaluation": dict(self._evaluation)}
        result = {k: v for k, v in self.final.items() if k != "started_recipe"}
        return {"result": result, "metric": self.metric_name, "target": dict(self._target),
                "evaluation": dict(self._evaluation)}

    def show_run(self, run: dict | None) -> None:
        """Show a finished run (:meth:`saved_run`; a project's, or None: no curve) unless it is the one shown."""
        if run == self.saved_run():
            return
        self.clear()
        if run is None:
            return
        self.metric_name = run["metric"]
        self._target, self._evaluation = dict(run["target"]), dict(run["evaluation"])
        self._promoted_to = self._target.get("promote_to", "float")
        self.metric_float = run["result"]["metric_float"]
        self._set_target_value()
        if run.get("cancelled"):
            self.points, self.cancelled = list(run["result"]["curve"]), True
            self._redraw()
            self.summary.setText(self._cancelled_text())
        else:
            self.set_result(dict(run["result"]))
        self.mark_applied(self._matching_point())

    def _on_autotune(self) -> None:
        self.show_run(self.doc.autotune)
        self._say_final()  # the document knows the rows the run was measured on only now

    def _say_final(self) -> None:
        """The finished run's summary again (the calibration rows changed, or the run was adopted)."""
        if self.final is not None:
            self.summary.setText(self._final_text())

    def _measured_elsewhere(self) -> str:
        """The line's note when the run's eval data, samples or metric are not the Evaluate panel's now."""
        run, now = self._evaluation, self._current_evaluation
        if not run.get("eval_data") or now is None or _eval_key(run) == _eval_key(now):
            return ""
        samples = run.get("eval_samples")
        return (f" Measured with {self.metric_name} on {_name(run['eval_data'])}, {samples or 'all'} samples; the "
                "Evaluate panel's settings changed since: autotune again (Shift+F9).")

    def curve_doc(self) -> dict | None:
        """The finished curve as ``autotune --curve-json`` writes it (for the report), a cancelled run's points
        marked ``cancelled``; None before a run ends and while it is out of date (:meth:`out_of_date`)."""
        if (self.final is None and not self.cancelled) or not self.points or self.out_of_date():
            return None
        ev = self._evaluation
        return {**({"cancelled": True} if self.final is None else {}),"metric": self.metric_name, "metric_float": self.metric_float, "promote_to": self._promoted_to,
                "eval": ev.get("eval_data"), "eval_samples": ev.get("eval_samples"),
                "curve": [e["point"] for e in self.points],
                "front": [e["point"]["trial"] for e in self.points if e["point"].get("pareto")]}

    def out_of_date(self) -> bool:
        """True when the shown run was measured on other calibration rows, or from another recipe: the current one
        is none of its points' (its first point is the recipe it started from; the others, ones it applies)."""
        current = self.doc.recipe.to_json()
        return not self.doc.autotune_current or all(e["recipe"] != current for e in self.points)

    def recipe_at(self, index: int) -> Recipe:
        return Recipe.model_validate_json(self.points[index]["recipe"])

    def mark_applied(self, index: int | None) -> None:
        self.applied = index
        self._redraw()

    def _on_recipe(self) -> None:
        """Keep the "applied" mark only while the recipe is that point's."""
        if self.applied is not None and self.applied < len(self.points):
            if self.points[self.applied]["recipe"] != self.doc.recipe.to_json():
                self.mark_applied(self._matching_point())
        elif self.points:
            match = self._matching_point()
            if match is not None:
                self.mark_applied(match)

    def _matching_point(self) -> int | None:
        current = self.doc.recipe.to_json()
        for i, e in enumerate(self.points):
            if e["recipe"] == current:
                return i
        return None

    # ------------------------------------------------------------------ drawing
    def _x(self, point: dict) -> float:
        _t, _u, field, div = X_AXES[self.x_axis.currentData()]
        value = point.get(field)
        return math.nan if value is None else value / div

    def _passes(self, metric: float) -> bool:
        return self.target_value is None or metric >= self.target_value

    def _redraw(self) -> None:
        plot = self.plot_item
        plot.clear()
        self.legend.clear()
        title, unit, _f, _d = X_AXES[self.x_axis.currentData()]
        plot.setLabel("bottom", f"{title} ({unit})")
        plot.setLabel("left", self.metric_name or "metric")
        self.plot.setVisible(bool(self.points))  # no empty axes: the summary line says what to do
        if not self.points:
            self.scatter.clear()  # no stale points (they would still answer clicks)
            return
        spots = []
        for i, e in enumerate(self.points):
            p = e["point"]
            color = APPLIED_COLOR if i == self.applied else (PASS_COLOR if self._passes(p["metric"]) else FAIL_COLOR)
            spots.append({"pos": (self._x(p), p["metric"]), "data": i, "brush": pg.mkBrush(color),
                          "symbol": "star" if i == self.applied else "o", "size": 16 if i == self.applied else 11})
        self.scatter.setData(spots)
        plot.addItem(self.scatter)
        # the legend: one sample item per colour
        for color, symbol, label in ((PASS_COLOR, "o", "meets the target"), (FAIL_COLOR, "o", "below the target"),
                                     (APPLIED_COLOR, "star", "applied (click a point to apply it)")):
            self.legend.addItem(pg.ScatterPlotItem(brush=pg.mkBrush(color), symbol=symbol, size=10), label)
        if self.target_value is not None and math.isfinite(self.target_value):
            line = pg.InfiniteLine(pos=self.target_value, angle=0,
                                   pen=pg.mkPen(TARGET_COLOR, width=1.5, style=pg.QtCore.Qt.PenStyle.DashLine))
            plot.addItem(line)
            self.legend.addItem(pg.PlotDataItem(pen=line.pen), f"target {fmt_metric(self.target_value)}")
        if self.metric_float is not None and math.isfinite(self.metric_float):
            line = pg.InfiniteLine(pos=self.metric_float, angle=0, pen=pg.mkPen(FLOAT_COLOR, width=1.5))
            plot.addItem(line)
            self.legend.addItem(pg.PlotDataItem(pen=line.pen), f"float model {fmt_metric(self.metric_float)}")

    def _tip(self, x, y, data) -> str:
        p = self.points[int(data)]["point"]
        return (f"{count(p['promoted'], 'unit')} promoted, {self.metric_name} {fmt_metric(p['metric'])}, "
                f"{p['fraction_int8']:.0%} of units in 8 bits\nclick: apply this recipe")

    def _on_clicked(self, _item, spots, *_args) -> None:
        """Apply the clicked point; where points are drawn on top of each other (the same metric and
        size), the one with the fewest units promoted, then the earliest tried."""
        if len(spots):
            indices = [int(s.data()) for s in spots]
            self.pointClicked.emit(min(indices, key=lambda i: (self.points[i]["point"]["promoted"], i)))

    def point_position(self, index: int) -> QPointF:
        """Where point ``index`` is drawn, in the plot widget's viewport coordinates (for tests and scripts)."""
        p = self.points[index]["point"]
        scene = self.plot_item.vb.mapViewToScene(QPointF(self._x(p), p["metric"]))
        return QPointF(self.plot.mapFromScene(scene))

    def _final_text(self) -> str:
        res = self.final
        if res is None:
            return ""
        met = "target met" if res["met"] else "target NOT met"
        lifted = len(res.get("latency_lifted") or [])
        lifted_text = (f" The {count(lifted, 'unit')} the latency check kept float (slower quantized on this machine) "
                       "are quantized from the start here; an export keeps them float again while they measure "
                       "slower.") if lifted else ""
        stale = "" if self.doc.autotune_current else \
            " The calibration data changed since: autotune again (Shift+F9)."
        return (f"{self.metric_name}: float {fmt_metric(res['metric_float'])}, all quantized "
                f"{fmt_metric(res['metric_before'])}, tuned {fmt_metric(res['metric_after'])} with "
                f"{count(len(res['promoted']), 'unit')} promoted to {self._promoted_to} ({met}); "
                f"{count(len(self.points), 'recipe')} tried. Click a point to apply its recipe (Ctrl+Z undoes)."
                f"{lifted_text}{stale}{self._measured_elsewhere()}")
