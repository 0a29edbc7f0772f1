"""Evaluate and Autotune in the window: the slots of their actions and the reactions to their jobs.

:class:`EvaluationController` ties the Evaluate and Autotune panels (:mod:`workbench.qt.evaluate_panel`,
:mod:`workbench.qt.autotune_panel`) to the run controller (:mod:`workbench.qt.runs`): it starts the
jobs with the panels' settings, feeds them progress and the autotune points as they arrive, brings
the panel forward when results come, and applies a clicked curve point as one undoable recipe edit
(:func:`workbench.qt.commands.push_edit`; Ctrl+Z restores the previous recipe).
"""

from __future__ import annotations

from PySide6.QtCore import QObject

from workbench.core.api import fmt_metric
from workbench.core.errors import WorkbenchError
from workbench.core.wording import count
from workbench.qt import docks
from workbench.qt.commands import push_edit
from workbench.qt.dialogs import guarded
from workbench.qt.evaluate_panel import saved_form

KINDS = ("evaluate", "autotune")


class EvaluationController(QObject):
    """Created by the main window after its docks (``window.evaluate_panel``, ``window.autotune_panel``)."""

    def __init__(self, window):
        super().__init__(window)
        self.win = window
        self.doc = window.doc
        self.runs = window.runs
        self._succeeded = False
        self._rows: tuple | None = None  # the calibration (data, samples) of the running evaluation or autotune
        self.evaluate_panel = window.evaluate_panel
        self.autotune_panel = window.autotune_panel
        ev, at = self.evaluate_panel, self.autotune_panel
        ev.runRequested.connect(self.start_evaluate)
        ev.cancelRequested.connect(self.runs.cancel)
        at.runRequested.connect(self.start_autotune)
        at.cancelRequested.connect(self.runs.cancel)
        at.pointClicked.connect(self.apply_point)
        ev.settings.changed.connect(self._describe)
        self.runs.started.connect(self._on_started)
        self.runs.progress.connect(self._on_progress)
        self.runs.partial.connect(self._on_partial)
        self.runs.succeeded.connect(self._on_succeeded)
        self.runs.finished.connect(self._on_finished)
        self._describe()

    # ------------------------------------------------------------------ actions
    @guarded
    def start_evaluate(self) -> None:
        """Run > Evaluate: quantize with the cached ranges, run float and quantized on the eval data."""
        self.win.sync_data_spec()
        self.show_evaluate()
        evaluation = self.evaluate_panel.settings.evaluation()
        self.runs.evaluate(evaluation)
        self._rows = self.doc.rows  # the calibration rows the job quantizes with

    @guarded
    def start_autotune(self) -> None:
        """Run > Autotune: promote the most sensitive units until the target holds; the curve grows."""
        self.win.sync_data_spec()
        self.show_autotune()
        evaluation = self.evaluate_panel.settings.evaluation()
        target = self.autotune_panel.target_fields()
        metric = self.evaluate_panel.settings
        if evaluation["metric"] is None:
            evaluation["metric"] = "cosine"
            metric.set_metric("cosine")
        self.runs.autotune(evaluation, target)
        self._rows = self.doc.rows  # the calibration rows the job quantizes with
        self.autotune_panel.start(metric.metric_label(), target, evaluation)

    @guarded
    def apply_point(self, index: int) -> bool:
        """Make curve point ``index``'s recipe the document's recipe: one undoable edit."""
        panel = self.autotune_panel
        if not 0 <= index < len(panel.points):
            return False
        point = panel.points[index]["point"]
        changed = push_edit(self.doc, panel.recipe_at(index),
                            f"Apply autotune recipe ({count(point['promoted'], 'unit')} promoted)")
        panel.mark_applied(index)
        self.win.set_status(
            f"Applied the autotune recipe with {count(point['promoted'], 'unit')} promoted ({panel.metric_name} "
            f"{fmt_metric(point['metric'])}); Ctrl+Z restores the previous recipe." if changed else
            "That recipe is the current one already.")
        return changed

    def show_evaluate(self) -> None:
        """The Evaluate dock in front, beside the Errors dock's SQNR bars the first time."""
        docks.show_beside(self.win, self.win.docks, "Evaluate", beside="Errors")

    def show_autotune(self) -> None:
        """The Autotune dock in front, as a tab beside Evaluate the first time."""
        if not self.win.docks["Evaluate"].isVisible():
            self.show_evaluate()
        docks.bring_forward(self.win, self.win.docks, "Autotune", beside="Evaluate")

    def done_message(self, kind: str, result: dict) -> str:
        """The status line after a successful evaluate / autotune job."""
        if kind == "evaluate":
            rep = result["report"]
            if rep.metric is None:
                return f"Done: evaluated {count(rep.samples, 'sample')}."
            label = self.evaluate_panel.metric_label()
            return (f"Done: {label} float {fmt_metric(rep.float_metric)}, quantized "
                    f"{fmt_metric(rep.quant_metric)} ({count(rep.samples, 'sample')}).")
        return (f"Done: autotune tried {count(len(result['curve']), 'recipe')}; "
                f"{count(len(result['promoted']), 'unit')} promoted ({'target met' if result['met'] else 'target NOT met'}). Click a point to apply it.")

    # ------------------------------------------------------------------ job reactions
    def _describe(self) -> None:
        settings = self.evaluate_panel.settings
        try:
            evaluation = settings.evaluation()
        except WorkbenchError:  # no eval data yet, a missing file: no run to compare with
            evaluation = None
        self.autotune_panel.set_uses(settings.describe(), evaluation)

    def _on_started(self, _title: str) -> None:
        kind = self.runs.kind
        self._succeeded = False
        if kind == "evaluate":
            self.evaluate_panel.set_running(True, "Evaluation: starting...")

    def _on_progress(self, done: int, total: int, message: str) -> None:
        kind = self.runs.kind
        if kind == "evaluate":
            self.evaluate_panel.show_progress(done, total, message)
        elif kind == "autotune":
            self.autotune_panel.show_progress(done, total, message)

    def _on_partial(self, kind: str, data) -> None:
        if kind == "autotune":
            if not self.autotune_panel.points:
                self.show_autotune()  # the first point brings the curve forward
            self.autotune_panel.add_point(data)

    def _on_succeeded(self, kind: str, result: dict) -> None:
        self._succeeded = True
        if kind == "evaluate":
            self.evaluate_panel.set_result(result, rows=self._rows)
            self.doc.set_evaluated(saved_form(result), data=self._rows)  # saved in the project ...
            self.doc.note_new_results()  # ... so unsaved work until then (not an undoable edit)
            self.show_evaluate()
        elif kind == "autotune":
            self.autotune_panel.set_result(result)
            self.doc.set_autotune(self.autotune_panel.saved_run(), data=self._rows)  # saved in the project ...
            self.doc.note_new_results()  # ... so unsaved work until then (not an undoable edit)
            self.show_autotune()

    def _on_finished(self, kind: str) -> None:
        stopped = not self._succeeded
        if kind == "evaluate":
            self.evaluate_panel.set_running(False)
            if stopped:
                self.evaluate_panel.stopped()
        elif kind == "autotune":
            self.autotune_panel.set_running(False)
            if stopped:
                self._autotune_stopped()

    def _autotune_stopped(self) -> None:
        """The panel keeps a stopped run's points (or none): the project and the report take the same, not the
        curve of an earlier run."""
        panel = self.autotune_panel
        panel.stopped()
        run = panel.saved_run()
        if run is None and self.doc.autotune is None:
            return
        self.doc.set_autotune(run, data=self._rows)  # saved in the project ...
        self.doc.note_new_results()  # ... so unsaved work until then (not an undoable edit)
