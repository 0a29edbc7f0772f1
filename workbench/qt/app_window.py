"""The main window: graph tabs in the centre (:mod:`workbench.qt.tabs`), docks around it.

The actions, menus and toolbar are declared in :mod:`workbench.qt.actions`, the docks (inspector,
recipe, calibration, errors, problems, sensitivity, cost, evaluate, autotune) in :mod:`workbench.qt.docks`
(Evaluate and Autotune are driven by :mod:`workbench.qt.evaluation`); this class
holds the slots they call and the reactions to the document and the jobs. Unsaved edits are never
lost silently: quitting or opening another model asks to save, discard or cancel. Drop an .onnx or
.wbproj file on the window to open it.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from weakref import WeakKeyDictionary

import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QDesktopServices, QPalette
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.core import api
from workbench.core.api import PROJECT_SUFFIX, QParams, load_project, new_project, save_project
from workbench.core.api import data_beside as default_data_for  # the rule the CLI names in its message
from workbench.core.errors import WorkbenchError
from workbench.core.issues import IssueCode
from workbench.core.jobs import refuse_output_onto_inputs
from workbench.core.progress import COMPARE_PHASES
from workbench.core.wording import count
from workbench.qt import actions, autosave, data_open, dialogs, docks, executor_dialog, help_menu, settings
from workbench.qt.actions import COLOR_MODES, canvas_mode
from workbench.qt.apply_project import ApplyProjectDialog
from workbench.qt.cancel_text import (
    WRITERS,
    cancelled_text,
    cancelling_text,
    killed_after_write_text,
    phase_of,
    too_late,
)
from workbench.qt.canvas.view import GraphCanvas
from workbench.qt.choice_text import choice_short
from workbench.qt.clip_note import no_clip_reason, rows_note
from workbench.qt.commands import (
    SettingsCommand,
    describe_settings_edit,
    push_edit,
    set_exclude,
)
from workbench.qt.compare_job import compare_or_diff, unmeasured_text
from workbench.qt.dialogs import (
    DISCARD,
    SAVE,
    STOP,
    about_text,
    ask_save_changes,
    ask_stop_job,
    guarded,
    show_error,
)
from workbench.qt.diff_errors import ErrorsView, bar_canvas, outlined_in_view, shown_view
from workbench.qt.diff_view import DiffTab
from workbench.qt.document import Document, Settings, describe_quantization
from workbench.qt.done_line import UNDONE_DONE, done_line_after_step
from workbench.qt.error_rank import (
    DEFAULT_RANK,
    LOCAL_LABEL,
    canvas_local,
    canvas_sqnr,
    input_only_nodes,
    local_notes,
    sqnr_notes,
    unit_spread,
)
from workbench.qt.error_view import INF_SQNR_DB
from workbench.qt.eta import OVERALL_STEPS, OverallProgress, ProgressClock, job_phases
from workbench.qt.eval_settings import NO_METRIC
from workbench.qt.evaluation import KINDS as EVALUATION_KINDS
from workbench.qt.evaluation import EvaluationController
from workbench.qt.export_stale import ExportedWith, changed_since, exported_with, stale_note
from workbench.qt.focus_return import FocusReturn
from workbench.qt.gui_gc import GuiThreadCollector
from workbench.qt.netron_view import NetronView
from workbench.qt.node_facts_view import NodeBox
from workbench.qt.not_opened import gone_recent_line, not_opened_line
from workbench.qt.nothing_quantized import (
    no_figures_status,
    nothing_quantized,
    nothing_quantized_status,
    nothing_quantized_text,
)
from workbench.qt.problems_panel import link_text
from workbench.qt.quant_banner import QuantBanner
from workbench.qt.quant_tab import QuantModelTab, quant_info
from workbench.qt.quantize_anyway import (
    SHOW_QUANTIZED,
    QuantizedShelf,
    can_show_quantized,
    latency_kept_entries,
    latency_kept_units,
)
from workbench.qt.restored_line import restored_done_line
from workbench.qt.reused_latency import reused_latency_note, reused_slowdown_short
from workbench.qt.runs import (
    ANALYSIS_SAMPLES,
    ExportSectionCommand,
    RunController,
    check_output_path,
    project_format,
)
from workbench.qt.status_line import StatusLine
from workbench.qt.tables import follow_selection
from workbench.qt.tabs import ModelTabs, drawn_as_is, shown_text
from workbench.qt.theme import apply_theme, colors_for, notifier, restyle_muted, shown_theme, style_plot
from workbench.qt.welcome import (
    RECENT_MISSING_TIP,
    WelcomePage,
    example_model,
    is_bundled_example,
    recent_entry_text,
)
from workbench.qt.window_title import file_stem, shown_name, window_title
from workbench.qt.workers import ThreadJob

log = logging.getLogger(__name__)

#: the View actions a diff tab takes (both panes), of the actions of the shown graph
DIFF_VIEW_ACTIONS = ("fit", "zoom_in", "zoom_out")
#: what Analyze (F6) says when the figures shown are of the same model, recipe, data, calibration and samples
ANALYSIS_CURRENT = ("Not analysed again: the figures shown were measured on this model, recipe, data, calibration "
                    "and analysis samples, and would come out the same. F5 calibrates afresh.")
#: how often (ms) the running job's "m:ss elapsed" is worded again between its progress reports
ELAPSED_TICK_MS = 1000

#: the last entry of File > Open Recent
CLEAR_RECENT = "Clear Recent Files"
#: how many File > Open Recent entries have a number key (&1 .. &9); the ones after show their number only
RECENT_NUMBERED = 9
MODEL_FILTER = "ONNX models and Workbench projects (*.onnx *.wbproj);;ONNX models (*.onnx);;Projects (*.wbproj)"
#: what gives figures for an already-quantized file (F5 / F7 are off for it)
QUANTIZED_FIGURES_HINT = ("compare it with its float model (View > Compare Float vs Quantized, Ctrl+Shift+D) "
                          "for per-edge SQNR.")

#: ends the histogram's title when the clip range of the shown results is not the current recipe's or data's
STALE_CLIP_NOTE = ("clip range not shown: the recipe or the calibration data changed since the last calibration "
                   "(F5 measures again).")

#: export format -> the file type of the Export dialog that picks it
EXPORT_FILTERS = {"qdq": "QDQ ONNX (*.onnx)", "qonnx": "QONNX (*.onnx)"}

__all__ = ["MainWindow", "about_text", "default_data_for"]


def _absolute_data_spec(project, project_file: Path) -> dict | None:
    """The project's data source as the project has it, with an absolute, normalised path (a project stores
    it relative to itself; an autosave's folder made it read ``../../../..`` in the Calibration panel; symbolic
    links are kept, so the path saved back is the one read). A Python reader runs only if the project allows
    code, whatever its data spec says (:meth:`Project.data_spec`); a spec that does not say is left so."""
    spec = project.data_spec(project_file)
    if spec is None:
        return None
    if "allow_code" in spec and "allow_code" not in project.data and not spec["allow_code"]:
        del spec["allow_code"]  # not said = not allowed: the project's spec stays as written
    if isinstance(spec.get("path"), str) and spec["path"]:
        spec["path"] = os.path.normpath(spec["path"])
    return spec


#: what the main canvas shows while no model is open (a first start whose model failed to open)
EMPTY_HINT = ("No model open. Open an ONNX model or a .wbproj project: File > Open (Ctrl+O), or File > Open "
              "Recent.")

#: added to a failed calibration's line once the recipe changes
STALE_FAILURE = "(The recipe changed since; F5 calibrates it.)"


#: the Calibration panel's line for a failed calibration whose edit was undone (:meth:`MainWindow._failure_line_after_step`)
UNDONE_FAILURE = "The last calibration failed with an edit now undone"


class MainWindow(QMainWindow):
    """Signals for scripting and tests: ``modelOpened(path)`` (once the open has ended: a handler may start a job,
    e.g. :meth:`compare_with`), ``projectSaved(path)``."""

    modelOpened = Signal(str)
    projectSaved = Signal(str)
    diffReady = Signal(object)  # the DiffTab of a finished comparison

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Workbench")
        self.resize(1400, 900)
        self.setAcceptDrops(True)
        #: cyclic garbage (Qt objects among it) is collected on this thread, never in a worker's
        self._collector = GuiThreadCollector(self)
        self._collector.start()
        self.doc = Document(self)
        self.runs = RunController(self.doc, self)
        self._job_clock = ProgressClock()  # the status bar's ETA for jobs other than calibration
        #: the main job's last progress report (done, total, message), worded again each second by
        #: :attr:`_elapsed_tick` so "m:ss elapsed" counts on between reports (None: no report, or cancelling)
        self._last_progress: tuple[int, int, str] | None = None
        self._elapsed_tick = QTimer(self)
        self._elapsed_tick.setInterval(ELAPSED_TICK_MS)
        self._elapsed_tick.timeout.connect(self._tick_elapsed)
        self._compare_overall = OverallProgress([])  # the running comparison across its phases (one bar)
        self._open_job: ThreadJob | None = None
        self._opened_path: str | None = None  # modelOpened to emit once the open job has ended (_on_open_finished)
        self._autosaves_mentioned = False  # autosaves of other models named once per session
        #: the Evaluate panel's settings as last shown (opened or undone to) and the document's value then:
        #: unedited, they stay that value (None: the panel's defaults for the model); and as last seen
        self._eval_shown: dict = {}
        self._eval_original: dict | None = None
        self._eval_last: dict = {}
        self._showing_eval = False
        self.canvas = GraphCanvas(self)
        self.canvas.empty_hint = EMPTY_HINT  # in the legend's place while no graph is shown
        self.canvas.legend_overlay.refresh()
        self.tabs = ModelTabs(self.canvas, self)
        self.banner = QuantBanner(self)  # "already quantized - QDQ: ..." above the graph
        central = QWidget(self)
        column = QVBoxLayout(central)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        column.addWidget(self.banner)
        self.centre = QStackedWidget(central)  # the welcome page while no model is open, then the tabs
        self.centre.addWidget(self.tabs)
        column.addWidget(self.centre, 1)
        self.setCentralWidget(central)
        self._last_export: Path | None = None
        self._exported_with: dict[Path, ExportedWith] = {}  # exported file (resolved) -> what it was quantized with
        self._qdq_nodes = False  # the model's graph draws Q/DQ as nodes (View > Show Q/DQ as Nodes on its tab)
        self._search_canvas: GraphCanvas | None = None  # the graph the Search Hits dock lists nodes of
        self._remeasure_after = ""  # why the figures are measured again (an export kept units float)
        self.docks = docks.build_docks(self, self.doc)  # inspector, recipe_panel, calibration, errors, ...
        self.evaluation = EvaluationController(self)  # Run > Evaluate / Autotune
        self._hist_timer = QTimer(self, singleShot=True, interval=300)
        # a diff, exported-file or subgraph tab -> the model it was opened for (the diff tab's float model)
        self._tab_models: WeakKeyDictionary = WeakKeyDictionary()
        self._hist_failed = False  # the histogram view shows a failed histogram's line
        self._hist_names: list[str] = []  # the shown tab's selection the histogram was asked for
        self._actions = actions.build_actions(self, self.doc.undo_stack)  # also self.act_<name>
        actions.build_menus(self, self._actions, self.docks, settings.theme())
        actions.build_toolbar(self, self._actions)  # also self.search, self.color_mode
        self.welcome = WelcomePage(self._actions, self)  # Open Model / Project / Example, recent files
        self.welcome.recentChosen.connect(self.open_recent)
        self.centre.addWidget(self.welcome)
        self._show_welcome_or_tabs()
        self._build_status()
        self._connect()
        self.act_show_qdq.setCheckable(True)
        self.act_legend.setCheckable(True)
        self.act_legend.setChecked(True)
        self._update_actions()
        self._restore_layout()
        self.autosaver = autosave.Autosaver(self)
        self._focus_return = FocusReturn(self)  # shortcuts work again after a dialog closes (no window manager)
        notifier().changed.connect(self.apply_view_theme)
        self.apply_view_theme(shown_theme())

    # ------------------------------------------------------------------ construction
    def _build_status(self) -> None:
        self._status_serial = 0  # set_status calls, so Undo / Redo can tell whether the step reported itself
        self.status_label = StatusLine("Ready.")  # a long message cut at a word, whole in its tooltip
        self.status_bar_progress = QProgressBar()
        self.status_bar_progress.setMaximumWidth(200)
        self.status_bar_progress.setVisible(False)
        self.problems_link = QLabel("")
        self.problems_link.setToolTip("Show the Problems dock")
        self._problem_counts = (0, 0, 0)  # (errors, warnings, notes) the link shows
        self.statusBar().addWidget(self.status_label, 1)
        self.statusBar().addPermanentWidget(self.problems_link)
        # "Show the quantized model's errors" while the latency check keeps every unit float (the Errors panel's button)
        self.show_quantized_link = QLabel(f'<a href="#quantized">{SHOW_QUANTIZED}</a>')
        self.show_quantized_link.setToolTip("Undo the latency check's edit and analyse the recipe as it is (F6)")
        self.show_quantized_link.setVisible(False)
        self.statusBar().addPermanentWidget(self.show_quantized_link)
        self.statusBar().addPermanentWidget(self.status_bar_progress)

    def _connect(self) -> None:
        self.search.returnPressed.connect(self.run_search)
        self.color_mode.currentTextChanged.connect(self._on_color_mode)
        self.canvas.colorsChanged.connect(self._name_error_colours)
        self.canvas.selectionChangedNames.connect(self._on_selection)
        self.canvas.edgeSelected.connect(self._on_edge_selected)
        self.canvas.nodeActivated.connect(self.open_subgraphs)
        self.canvas.layoutFailed.connect(lambda msg: self.set_status(f"Layout failed: {msg}"))
        self.tabs.currentChanged.connect(self._on_tab_changed)
        self.errors.nodeClicked.connect(self.focus_in_shown_tab)
        self.errors.colorBySqnr.connect(self._colour_as_ranked)
        self.errors.exportNodeData.connect(self.export_node_data_dialog)
        self.errors.compareRequested.connect(self.compare_with_float_dialog)
        # a row of these docks selects in the shown tab when it draws the node, as a bar of the Errors dock does
        self.sensitivity.nodeClicked.connect(self.focus_in_shown_tab)
        self.cost.nodeClicked.connect(self.focus_in_shown_tab)
        self.problems.nodeClicked.connect(self.focus_in_shown_tab)
        self.recipe_panel.nodeClicked.connect(self.focus_in_shown_tab)
        self.inspector.nodeClicked.connect(self.focus_node)  # a tensor's name in its Node section
        self.search_hits.nodeClicked.connect(self.focus_hit)
        self.problems.countChanged.connect(self._on_problem_count)
        self.problems_link.linkActivated.connect(lambda _href: self.show_problems())
        self.quantized_shelf = QuantizedShelf(self.doc)
        self.doc.modelChanged.connect(self.quantized_shelf.forget)
        self.runs.succeeded.connect(self.quantized_shelf.job_done)
        self.errors.showQuantized.connect(self.show_quantized_errors)
        self.show_quantized_link.linkActivated.connect(lambda _href: self.show_quantized_errors())
        for act, redo in ((self.act_undo, False), (self.act_redo, True)):
            act.triggered.disconnect()  # the stack's own slot: _undo_redo calls it, then reports
            act.triggered.connect(lambda _checked=False, r=redo: self._undo_redo(r))
        self.sensitivity.figureChanged.connect(lambda _f: self.color_by_sensitivity())
        self.sensitivity.runRequested.connect(self.start_sensitivity)
        self.sensitivity.applyRequested.connect(self.apply_suggestion)
        self.doc.sensitivityChanged.connect(self._on_sensitivity)
        self.calibration.startRequested.connect(self.start_calibration)
        self.calibration.cancelRequested.connect(self.cancel_running)  # a run, or the comparison
        self.calibration.specChanged.connect(self._on_spec_changed)
        self.calibration.refuse_data = self._refuse_data  # Browse...: checked against the inputs as a drop is
        self.doc.modelChanged.connect(self._reset_settings)
        self.doc.modelChanged.connect(self._show_welcome_or_tabs)
        self.tabs.currentChanged.connect(self._show_welcome_or_tabs)  # a tab opened or closed
        self.evaluate_panel.settings.changed.connect(self._on_eval_changed)
        self.doc.recipeChanged.connect(self._on_recipe_changed)
        self.doc.recipeChanged.connect(self._mark_exported_tabs)
        self.doc.dataChanged.connect(self._mark_exported_tabs)
        self.doc.resultsChanged.connect(self._on_results)
        self.doc.resultsChanged.connect(self._update_actions)  # the actions on the figures follow them
        self.doc.dataChanged.connect(self._mark_stale_results)
        self.doc.dataChanged.connect(self._mark_stale_sweep)
        self.doc.dataChanged.connect(self._update_actions)
        self.doc.dataChanged.connect(lambda: (self.errors.hist is not None or self._hist_failed)
                                     and self._hist_timer.start())  # other rows
        self.doc.modifiedChanged.connect(self._update_title)
        self.doc.modifiedChanged.connect(lambda: self.doc.modified or self.autosaver.discard())
        self.runs.started.connect(self._on_run_started)
        self.runs.progress.connect(self._on_run_progress)
        self.runs.succeeded.connect(self._on_run_succeeded)
        self.runs.failed.connect(self._on_run_failed)
        self.runs.cancelled.connect(self._on_run_cancelled)
        self.runs.cancelling.connect(self._on_cancelling)
        self.runs.finished.connect(self._update_actions)
        self.runs.histogramReady.connect(self._on_histogram)
        self.runs.histogramFailed.connect(self._on_histogram_failed)
        self._hist_timer.timeout.connect(self._request_histogram)

    # ------------------------------------------------------------------ opening
    @guarded
    def open_dialog(self) -> None:
        self._need_idle("another model")
        if not self.keep_or_drop_changes("opening another model"):
            return
        path, _ = QFileDialog.getOpenFileName(self, "Open model or project", settings.last_folder("model"), MODEL_FILTER)
        if path:
            settings.remember_folder("project" if path.lower().endswith(PROJECT_SUFFIX) else "model", path)
            self.open_path(path, ask=False)

    @guarded
    def open_project_dialog(self) -> None:
        """File > Open Project... (Ctrl+Shift+O): a .wbproj, the dialog in the folder of the last project."""
        self._need_idle("a project")
        if not self.keep_or_drop_changes("opening a project"):
            return
        path, _ = QFileDialog.getOpenFileName(self, "Open project", settings.last_folder("project"),
                                              "Workbench projects (*.wbproj)")
        if path:
            settings.remember_folder("project", path)
            self.open_path(path, ask=False)

    @guarded
    def open_example(self) -> None:
        """File > Open Example: the bundled digits CNN (its calibration data beside it is chosen)."""
        self.open_path(example_model())

    def _show_welcome_or_tabs(self, *_args) -> None:
        """The welcome page while no model is open and no other tab (an exported model, a diff, Netron)
        was opened beside the empty graph, else the tabs."""
        alone = self.doc.model is None and self.tabs.count() <= 1
        self.centre.setCurrentWidget(self.welcome if alone else self.tabs)

    @guarded
    def open_path(self, path: str | Path, *, ask: bool = True) -> None:
        """Open an ONNX model or a ``.wbproj`` project (errors go to a dialog).

        With unsaved edits the user is first asked to save, discard or cancel (``ask=False``: the
        caller has asked already)."""
        path = Path(path)
        if data_open.is_data_file(path):  # calibration data where a model goes: the open model's data
            self.take_data_file(path)
            return
        self._need_idle(path.name)  # before asking to save or discard: a refused open drops nothing
        if ask and not self.keep_or_drop_changes(self._opening_words(path)):
            return
        baseline = self._edit_state()  # the work as the user saved or dropped it (it may be edited while loading)
        if path.suffix.lower() == PROJECT_SUFFIX:
            self.open_project(path)
        else:
            self.open_model(path)
        if self._open_job is not None:
            self._open_job.edit_baseline = baseline

    def take_data_file(self, path: Path) -> None:
        """A .npz / .npy file opened or dropped: with a float model open and no job running, its calibration
        data (one undoable edit, the status line says so); else an error dialog saying what to open first."""
        if self.doc.model is None or self.doc.quant_summary is not None:
            open_model = self.doc.model_path.name if self.doc.model is not None else None
            self._say_not_opened(path)
            show_error(self, f"Cannot open {path.name}", data_open.not_a_model(path, open_model))
            return
        self._need_idle(path.name)
        spec = data_open.data_spec(path)
        if self._refuse_data(spec):
            return
        self.calibration.set_data_spec(spec, self.doc.settings.samples)
        self._on_spec_changed()
        self.set_status(data_open.taken_words(path, self.doc.model_path.name))

    def _refuse_data(self, spec: dict | None) -> bool:
        """Whether ``spec``'s array file does not fit the open model's inputs (:func:`data_open.data_mismatch`);
        then the status line and a dialog say why and what to do, and the caller keeps the previous data."""
        exc = data_open.data_mismatch(spec, self.doc.model)
        if exc is None:
            return False
        path = Path(spec["path"])
        self.set_status(data_open.refused_words(path, exc))
        show_error(self, f"Cannot calibrate on {path.name}", exc)
        return True

    def _opening_words(self, path: Path) -> str:
        """What opening ``path`` does, as the unsaved-changes prompt ends ("Save them to a project before ...?"):
        "opening b.wbproj"; the open project's own file "reopening b.wbproj as it was saved", the open model's
        (no project) "reopening digits_cnn.onnx anew (the default recipe, no results)": the prompt read "b.wbproj
        has unsaved edits. Save them to a project before opening b.wbproj?" as if it were another file."""
        try:
            same = path.resolve()
        except OSError:
            return f"opening {path.name}"
        if self.doc.project_path is not None and same == self.doc.project_path.resolve():
            return f"reopening {path.name} as it was saved"
        if self.doc.project_path is None and self.doc.model_path is not None and same == self.doc.model_path:
            return f"reopening {path.name} anew (the default recipe, no results)"
        return f"opening {path.name}"

    def _edit_state(self) -> tuple:
        """What an edit changes (recipe, data, samples): compared before a loaded model replaces the work."""
        return self.doc.recipe.to_json(), self.doc.rows

    def _edited_while_loading(self, path: Path) -> bool:
        """Whether the work was edited while ``path`` loaded (after open_path's prompt) and the user now
        keeps it: asks Save / Discard / Cancel again; True when the load must not replace it (Cancel, or a
        save that did not happen)."""
        baseline = getattr(self._open_job, "edit_baseline", None)
        if baseline is None:
            return False
        self.sync_data_spec()
        if not self.doc.modified or self._edit_state() == baseline:
            return False
        if self.keep_or_drop_changes(f"opening {path.name} (it finished loading after these edits)"):
            return False
        name = Path(self.doc.project_path or self.doc.model_path).name
        self.set_status(f"{path.name} was not opened: {name} was edited while it loaded, and those edits are kept.")
        return True

    def keep_or_drop_changes(self, doing: str) -> bool:
        """True when the caller may replace the open work: nothing unsaved, or the user saved it
        (and the save succeeded) or chose to discard it. False when the user cancelled."""
        self.sync_data_spec()  # a path typed without Enter counts
        if not self.doc.modified:
            return True
        answer = ask_save_changes(self, shown_name(self.doc.project_path or self.doc.model_path), doing)
        if answer == SAVE:
            return self.save_project() is not None
        if answer == DISCARD:  # the autosave goes when the edits do (a new model shown, or the quit)
            return True
        return False

    @guarded
    def start_new_project(self) -> None:
        """File > New Project: the open model with the default recipe, no data, results or project
        file (asks first when there are unsaved edits)."""
        self._need_model()
        if not self.keep_or_drop_changes("starting a new project"):
            return
        quantization = (self.doc.quant_summary, list(self.doc.quant_params.values()))
        self._on_model_loaded(self.doc.model, quantization, self.doc.model_path, external_data=self.doc.external_data)

    def open_model(self, path: str | Path, *, on_loaded=None) -> None:
        """Load the model in a worker thread; the document and canvas switch when it is ready."""
        path = Path(path)
        self._need_idle(path.name)

        def load(progress, cancel):  # cancel is honoured between the steps (progress.OPEN_STEPS), and after the last
            model = api.open_model(path, progress=progress, cancel=cancel)
            # quantized files and external data (hashed for a saved project): read here, not on the GUI thread
            cancel.check()
            quantization = describe_quantization(model)
            cancel.check()
            return model, quantization, api.external_identity(model)

        job = ThreadJob(load, title=f"Opening {path.name}", parent=self)
        self._open_job = job
        job.progress.connect(lambda _done, _total, step: self._on_open_progress(job, path, step))
        job.succeeded.connect(lambda loaded: self._on_model_loaded(*loaded[:2], path, on_loaded, external_data=loaded[2]))
        job.failed.connect(lambda err: self._on_open_failed(path, err))
        job.cancelled.connect(lambda: self._say_not_opened(path, f"Opening {path.name} cancelled."))
        job.finished.connect(self._on_open_finished)
        self.set_status(f"Opening {path}... (Esc cancels)")
        job.start()
        self.status_bar_progress.setRange(0, 0)  # busy: the read reports no steps
        self.status_bar_progress.setVisible(True)
        self._update_actions()  # Run > Cancel (Esc) on while it loads; the model's actions off

    def _on_open_progress(self, job: ThreadJob, path: Path, step: str) -> None:
        """The status line names the open's step ("Opening m.onnx: Checking... (Esc cancels)") until Cancel."""
        if job is self._open_job and not job.token.cancelled:
            self.set_status(f"Opening {path}: {step}... (Esc cancels)")

    def _need_idle(self, name: str) -> None:
        """Raise when a model is being opened or compared, or a job runs: ``name`` cannot open now."""
        if self._open_job is not None:
            raise WorkbenchError(f"{self._open_job.title} is still running; {name} was not opened.",
                                 hint="Wait until it ends or cancel it (Esc).")
        if self.runs.busy:
            raise WorkbenchError(f"{self.runs.job.title} is running; {name} was not opened.",
                                 hint="Wait until it ends or cancel it (Run > Cancel, Esc).")

    def _on_open_failed(self, path: Path, err) -> None:
        self._say_not_opened(path, not_opened_line(path, err))
        show_error(self, f"Cannot open {path.name}", err)

    def _say_not_opened(self, path: Path, line: str | None = None) -> None:
        """The status line says ``path`` was not opened (``line``, else "Could not open NAME.") and what stays open."""
        still = f" {self.doc.model_path.name} is still open." if self.doc.model_path is not None else ""
        self.set_status((line or f"Could not open {path.name}.") + still)

    def _on_open_finished(self) -> None:
        job, self._open_job = self._open_job, None
        self.status_bar_progress.setVisible(False)
        if job is not None:
            job.deleteLater()
        self._update_actions()
        opened, self._opened_path = self._opened_path, None
        if opened is not None:
            self.modelOpened.emit(opened)

    @guarded
    def _on_model_loaded(self, model, quantization, path: Path, on_loaded=None, *, external_data=None) -> None:
        if self._edited_while_loading(path):  # asked again: the edits made meanwhile were never offered to save
            return
        self.autosaver.discard()  # the edits shown until now were saved or dropped at the prompt
        self.doc.project_path = None
        self.doc.set_model(model, path, quantization=quantization, external_data=external_data)
        data = default_data_for(path)
        self.calibration.set_data_spec({"kind": "npz", "path": str(data)} if data else None, None)
        self._on_spec_changed()
        self.doc.mark_saved()  # a model just opened, with the data beside it, has no unsaved edits
        extra = on_loaded(model) if on_loaded is not None else None  # a note for the status line
        self._reset_views()
        restored = restored_done_line(self.doc)
        if restored:  # a project's saved results shown: not "Idle." at 0 %
            self.calibration.set_running(False, restored)
            self._done_at = (self.doc.undo_stack.index(), restored)
        self._show_quantization()
        self.canvas.set_model(model.proto, collapse_qdq=self._collapse_qdq())
        self._restore_colour_mode()
        if self.doc.project_path or not is_bundled_example(path):  # the example: File > Open Example, not mine
            settings.add_recent_file(self.doc.project_path or path)
            settings.set_last_dir(path)
        self._update_title()
        self._update_actions()
        issues = link_text(*self._problem_counts)  # the figure the Problems link beside it shows
        notes = f" ({issues}, see Problems)" if issues else ""
        quantized = " Already quantized: Calibrate, Analyze and Export are off." if self.doc.quant_summary else ""
        self.set_status(f"Opened {path.name}: {count(len(model.graph.node), 'node')}{notes}.{quantized}"
                        + (f" {extra}" if extra else ""))
        self._offer_autosave()
        self._announce_opened(path)

    def _announce_opened(self, path: Path) -> None:
        """Emit ``modelOpened`` once the window is idle: now, or when the open (or comparison) job that loaded
        the model has ended (:meth:`_on_open_finished`). Emitted from the job's success handler, a handler that
        started a job (``compare_with``) failed with "Another job is running" while the open was still ending."""
        if self._open_job is not None:
            self._opened_path = str(path)
        else:
            self.modelOpened.emit(str(path))

    def _offer_autosave(self) -> None:
        """An autosave left for this model by a session that did not exit cleanly: ask Restore / Discard."""
        files = (autosave.to_offer(self.doc.model_path, self.autosaver)  # never one another open window writes
                 or autosave.adopt_moved(self.doc.model_path, self.doc.model.sha256))  # made before the file moved
        if files is None:
            self._mention_other_autosaves()
            return
        note = files.read_note()
        name = Path(note.get("project_path") or self.doc.model_path).name
        if autosave.ask_restore(self, name, note.get("saved_at")) != autosave.RESTORE:
            files.remove()
            self.set_status(f"Discarded the autosaved edits of {name}.")
            return
        try:
            project = load_project(files.project)
        except WorkbenchError:  # the model changed since the autosave (or the file is damaged): never deleted
            self._restore_autosave_onto_changed_model(files, note, name)
            return
        notes = self._adopt_autosave(project, files.project, note)
        self.autosaver.adopt(files)
        self.set_status(" ".join([f"Restored the autosaved edits of {name} (Ctrl+Z undoes; save them with Ctrl+S).",
                                  *notes]))

    def _restore_autosave_onto_changed_model(self, files, note: dict, name: str) -> None:
        """Restore an autosave whose model file changed since it was written: its recipe matched to the
        open model (File > Apply Project's matching; cached ranges of the old file dropped). Overrides of
        nodes the model no longer has are dropped from the restored recipe, so the autosave as written is
        kept aside first; an autosave that cannot be read at all is kept aside and named in the error."""
        try:
            rt, project = api.retarget_to_model(files.project, self.doc.model)
        except WorkbenchError as exc:
            kept = autosave.keep_aside(files, move=True)
            self.set_status(f"Autosaved edits of {name} not restored; kept in {kept}.")  # while the box is open
            show_error(self, "Autosave not restored", WorkbenchError(
                f"The autosaved edits of {name} cannot be read: {exc.message}",
                hint=f"They are kept in {kept}; nothing was deleted. Once fixed, File > Apply Project to Model "
                     "applies it to this model."))
            return
        kept = autosave.keep_aside(files, move=False) if rt.missing else None
        project.recipe = rt.recipe
        project.calibration = rt.calibration.to_json() if rt.calibration is not None else None
        project.results = None  # measured on the model file as it was
        project.latency_kept = rt.latency_kept or None  # under the open model's names
        self._adopt_autosave(project, files.project, note)
        self.autosaver.adopt(files)
        dropped = (f"; {count(len(rt.missing), 'override')} of nodes it no longer has dropped "
                   f"({', '.join(r.old for r in rt.missing[:3])}{' ...' if len(rt.missing) > 3 else ''}), the "
                   f"autosave as written is kept in {kept}") if kept is not None else ""
        self.set_status(f"Restored the autosaved edits of {name} onto {self.doc.model_path.name}, which changed since "
                        f"they were autosaved: the recipe matched to it by node name{dropped}; calibrate again (F5). "
                        "Ctrl+Z undoes; save them with Ctrl+S.")

    def _mention_other_autosaves(self) -> None:
        """Once per session: autosaves of other models left by a session that did not exit cleanly, and where
        the kept-aside ones are (:func:`autosave.others_text`)."""
        if self._autosaves_mentioned:
            return
        self._autosaves_mentioned = True
        said = autosave.others_text(self.autosaver.owned, self.doc.model_path)
        if said:
            self.set_status(f"{self.status_label.text()} {said}")

    def _adopt_autosave(self, project, project_file: Path, note: dict) -> list[str]:
        """Every field of an autosave (:class:`autosave.RestoreCommand`) and its project file (where Ctrl+S
        saves), as one undoable edit; returns notes on saved parts that were unreadable and skipped."""
        origin = note.get("project_path")
        # the autosave's own cache (None after a data change): the opened project's may be of other rows
        after = Settings(_absolute_data_spec(project, project_file), project.samples, project.analysis_samples,
                         project.evaluation_spec(project_file), project.choose_recipe)
        stack = self.doc.undo_stack
        stack.beginMacro("Restore autosaved edits")  # one edit: undo also points Ctrl+S back at what was open
        if origin and Path(origin).is_file() and Path(origin) != self.doc.project_path:
            stack.push(autosave.ProjectPathCommand(self.doc, Path(origin), self._update_title))
        restore = autosave.RestoreCommand(self.doc, self._show_settings, project, after)
        stack.push(restore)
        stack.endMacro()
        self._update_title()
        return restore.notes

    def _reset_views(self) -> None:
        """Forget every view of the previous model: subgraph tabs, Netron's target, the panels'
        messages, the selection, the histogram, the search text and a colour mode that would
        mean nothing for the new model."""
        self._hist_timer.stop()
        self._last_export = None
        self._exported_with.clear()
        note = self.tabs.follow_model(self.doc.model_path)  # an open Netron tab follows the new model
        if note:
            self.set_status(note)
        self.calibration.set_running(False, "Idle.")
        self.inspector.set_nodes([])
        self.errors.clear_histogram()
        self._hist_failed = False
        self.search.clear()
        self.search_hits.set_hits([])
        self.canvas.set_node_values(errors={}, error_label="SQNR (dB)")  # no sweep title from the last model
        mode = COLOR_MODES[self.color_mode.currentIndex()]
        # the last model's file dtypes (a quantized model's; set again for one) or SQNR without results
        if (mode == "dtype" and getattr(self, "_file_dtypes", False)) or (mode == "error" and not self.doc.errors) \
                or (mode == "own noise" and not canvas_local(self.doc.local, INF_SQNR_DB, self._plan_units())):
            self.color_mode.setCurrentText("op")

    def _colour_to_keep(self) -> str:
        """The colour mode a saved project reopens with: the colour box's entry, or ``"sensitivity:<figure>"``
        while the sweep's figure colours the graph (the "error" entry then reads "sensitivity"; kept as
        "error", the project reopened coloured by SQNR, or by op type with no per-unit results)."""
        mode = COLOR_MODES[self.color_mode.currentIndex()]
        if mode == "error" and self.canvas.error_label().startswith("Sensitivity"):
            return f"sensitivity:{self.sensitivity.current_figure()}"
        return mode

    def _restore_colour_mode(self) -> None:
        """An opened project's colour mode as it was saved in this app: SQNR when its results were restored,
        the sweep's figure (the one it showed) when its sweep was, own noise, the recipe's dtypes; "op"
        otherwise (not the mode the last model was shown in). A model opened alone keeps the mode it is in."""
        if self.doc.project_path is None:
            return
        mode = settings.project_colour(self.doc.project_path) or ""
        self.errors.set_rank(settings.project_rank(self.doc.project_path) or DEFAULT_RANK)
        if mode.startswith("sensitivity:") and self.sensitivity.canvas_values():
            figure = self.sensitivity.figure.findData(mode.partition(":")[2])
            if figure >= 0:
                self.sensitivity.figure.setCurrentIndex(figure)
            self.color_by_sensitivity()
        elif mode == "error" and self.doc.errors:
            self.color_by_sqnr()
        elif mode == "own noise" and canvas_local(self.doc.local, INF_SQNR_DB, self._plan_units()):
            self.color_by_local()
        else:
            self.color_mode.setCurrentText("dtype" if mode == "dtype" else "op")

    def _collapse_qdq(self) -> bool:
        """Q/DQ pairs are edge badges unless View > Show Q/DQ as Nodes is checked."""
        return not self._qdq_nodes

    def _show_quantization(self) -> None:
        """Banner, canvas marks and tooltips, dtype colours and the Calibrate reason of the open model."""
        doc = self.doc
        self._file_dtypes = doc.quant_summary is not None  # the dtype colours are the file's, not a recipe's
        self.banner.show_summary(doc.quant_summary, doc.model_path.name if doc.model_path else "")
        if doc.quant_summary is None:
            self.canvas.set_quant_info({}, {})
        else:
            self.canvas.set_quant_info(*quant_info(doc.quant_summary, list(doc.quant_params.values()), doc.model.proto),
                                       compute=doc.quant_summary.compute)
            self.color_mode.setCurrentText("dtype")
        self.errors.set_quantized(doc.model_path.name if doc.quant_summary is not None else "")
        reason = doc.quantized_reason
        if reason:  # what to do instead
            reason = f"{reason[:-1]}, or compare it with its float model (Ctrl+Shift+D)."
        for act in (self.act_calibrate, self.act_analyze, self.act_sensitivity, self.act_export, self.act_export_qonnx,
                    self.act_export_report):
            act.setToolTip(f"Disabled: {reason}" if reason else act.statusTip())
        self.act_diff.setToolTip(f"{self.doc.model_path.name} is already quantized: pick the float model it was made "
                                 "from; it opens and is compared with this file" if reason else self.act_diff.statusTip())
        self.calibration.start.setToolTip(f"Disabled: {reason}" if reason else "Calibrate (F5)")
        name = doc.model_path.name if doc.model_path else ""
        off = (f"{name} is already quantized: there is no recipe or calibration to save or run; compare it with its "
               "float model (View > Compare Float vs Quantized, Ctrl+Shift+D), or open the float model." if reason else "")
        self.calibration.set_off(off)
        for act in (self.act_save, self.act_save_as):
            act.setToolTip(f"Disabled: {off}" if off else "")
            act.setStatusTip(f"Disabled: {off}" if off else "")

    @guarded
    def toggle_qdq_nodes(self) -> None:
        """Redraw the shown graph (the open model's, or an exported file's tab) with Q/DQ pairs as nodes or as
        edge badges (View > Show Q/DQ as Nodes); each tab keeps its own choice."""
        self._need_model()
        nodes, shown = self.act_show_qdq.isChecked(), self.tabs.currentWidget()
        if isinstance(shown, QuantModelTab):
            shown.show_qdq_nodes(nodes)
        elif shown is self.canvas:
            self._qdq_nodes = nodes
            self.canvas.set_model(self.doc.model.proto, collapse_qdq=self._collapse_qdq(), keep_view=True)
        else:
            self._sync_qdq_check()
            raise WorkbenchError(f"The {self._tab_name()} tab has no Q/DQ drawing to change.",
                                 hint="Switch to the Graph tab or an Exported tab first.")
        self.set_status("Q/DQ drawn as nodes." if nodes else "Q/DQ pairs folded into edge badges.")

    def _sync_qdq_check(self) -> None:
        """View > Show Q/DQ as Nodes shows the choice of the shown tab."""
        shown = self.tabs.currentWidget()
        self.act_show_qdq.setChecked(shown.qdq_nodes if isinstance(shown, QuantModelTab) else self._qdq_nodes)

    def _tab_name(self) -> str:
        return shown_text(self.tabs.tabText(self.tabs.currentIndex()))

    @guarded
    def _on_tab_changed(self, _index: int) -> None:
        """Another tab is shown: the View / Edit actions follow its graph (off where it has none), its legend
        follows View > Legend, the Errors dock its selection."""
        shown = self.tabs.currentWidget()
        if shown is not None:
            canvases = [shown] if isinstance(shown, GraphCanvas) else shown.findChildren(GraphCanvas)
            for canvas in canvases:
                canvas.legend_overlay.setVisible(self.act_legend.isChecked())
        self._sync_qdq_check()
        self._update_actions()
        self._errors_follow_selection()  # the shown tab's selection, not the last one made
        self._inspector_follow_tab()
        if self._shown_view().selected != self._hist_names:  # its histogram too
            self._hist_timer.start()

    def shown_canvas(self) -> GraphCanvas:
        """The graph of the shown tab (:meth:`ModelTabs.shown_canvas`). Raises WorkbenchError when the tab
        has none (a diff or the Netron tab)."""
        canvas = self.tabs.shown_canvas()
        if canvas is None:
            raise WorkbenchError(f"The {self._tab_name()} tab shows no single graph.",
                                 hint="Switch to the Graph tab, a subgraph or an Exported tab first.")
        return canvas

    @guarded
    def on_shown_canvas(self, method: str, *args) -> None:
        """View > Fit / Zoom / Expand / Collapse / Open Groups to Depth: call ``method`` of the shown graph
        (a diff tab fits and zooms both its panes)."""
        shown = self.tabs.currentWidget()
        if isinstance(shown, DiffTab) and method in DIFF_VIEW_ACTIONS:
            getattr(shown, method)(*args)
            return
        getattr(self.shown_canvas(), method)(*args)

    def _show_main_graph(self) -> None:
        """Bring the open model's graph forward (a dock names its nodes: they are shown there)."""
        if self.tabs.currentWidget() is not self.canvas:
            self.tabs.setCurrentWidget(self.canvas)

    def toggle_legend(self) -> None:
        """View > Legend: show or hide the colour legend of every graph (main, exported, diff tabs)."""
        for canvas in self.findChildren(GraphCanvas):
            canvas.legend_overlay.setVisible(self.act_legend.isChecked())

    @guarded
    def _on_edge_selected(self, tensor: str) -> None:
        if tensor or self.canvas.selected_edge() is not None:
            self.inspector.set_edge(tensor or "")

    @guarded
    def open_exported(self) -> QuantModelTab | None:
        """Show the last exported model as it is (banner, dtype colours, Q/DQ badges) in a tab; the tab of
        that file when one is open (read again when the file was written since)."""
        path = self._last_export
        if path is None or not path.exists():
            self.set_status("Nothing exported yet: File > Export (Ctrl+E) first.")
            return None
        tab, done = self.tabs.show_exported(path)
        self._mark_exported_tabs()
        if done != "shown":  # a new tab: its selection outlines its unit in the Errors dock (the float nodes' names)
            self._follow_tab(tab, tab.canvas)
        again = {"shown": " (already open)", "reloaded": " (read again: it was written since)"}.get(done, "")
        self.set_status(f"Showing {path.name} as exported{again}: {tab.summary.text()}.")
        return tab

    def _reread_exported(self, path: Path) -> None:
        """An export wrote ``path``: its open tab reads it again in place (the tab in front stays in front)."""
        try:
            tab = self.tabs.reread_exported(path)
        except WorkbenchError as exc:  # the old tab stays; the status line says why it was not read again
            self.set_status(str(exc))
            return
        if tab is not None:
            self._follow_tab(tab, tab.canvas)
        self._mark_exported_tabs()

    def _mark_exported_tabs(self) -> None:
        """Each exported file's tab says when the recipe or the calibration data changed since that export."""
        self.tabs.mark_stale(lambda tab: stale_note(changed_since(self._exported_with.get(tab.path.resolve()), self.doc)))

    @guarded
    def diff_dialog(self) -> None:
        """Pick the quantized file of the open float model and compare them (Ctrl+Shift+D); with an
        already-quantized file open, pick its float model instead (the Errors dock's button)."""
        self._need_model()
        if self.doc.quant_summary is not None:
            self.compare_with_float_dialog()
            return
        start = str(self._last_export or settings.last_folder("export", self.doc.model_path.parent))
        path, _ = QFileDialog.getOpenFileName(self, "Quantized model to compare with", start, "ONNX models (*.onnx)")
        if path:
            self.compare_with(path)

    @guarded
    def compare_with_float_dialog(self) -> None:
        """Errors dock, "Compare with its float model..." (an already-quantized file is open): pick
        the float model it was made from; it opens and the quantized file is compared with it."""
        self._need_model()
        path, _ = QFileDialog.getOpenFileName(self, f"Float model of {self.doc.model_path.name}",
                                              str(self.doc.model_path.parent), "ONNX models (*.onnx)")
        if path:
            self.compare_quantized_with_float(path)

    def compare_quantized_with_float(self, float_path: str | Path) -> None:
        """Compare the open, already-quantized file with ``float_path`` in a worker (the float model read there
        with the calibration data beside it); only when that succeeds does the window open ``float_path`` and
        show the diff tab (:attr:`diffReady`). A comparison that fails or is cancelled leaves the quantized
        file open, the status line saying what to do. Raises WorkbenchError when the open model is a float
        model or is ``float_path`` itself; with unsaved edits the user is asked first."""
        self._need_model()
        quantized, float_path = self.doc.model_path, Path(float_path).resolve()
        if self.doc.quant_summary is None:
            raise WorkbenchError(f"{quantized.name} is a float model; there is no float model to compare it with.",
                                 hint="Use View > Compare Float vs Quantized (Ctrl+Shift+D) to pick its quantized file.")
        if float_path == quantized:
            raise WorkbenchError(f"{float_path.name} is the open quantized file, not its float model.",
                                 hint="Pick the float .onnx file it was quantized from.")
        self._need_idle(float_path.name)
        if not self.keep_or_drop_changes(f"opening {float_path.name}"):
            return
        beside = default_data_for(float_path)
        data = {"kind": "npz", "path": str(beside)} if beside else None
        samples = self.runs.analysis_samples

        def work(progress, cancel):
            model = api.open_model(float_path)
            proto = api.open_model(quantized).proto
            diff = compare_or_diff(model, proto, data, samples=samples, progress=progress, cancel=cancel)
            return model, describe_quantization(model), diff, diff.quant_proto or proto

        self.set_status(f"Comparing {quantized.name} with {float_path.name}... (Esc cancels; {quantized.name} stays "
                        "open unless they match)")
        baseline = self._edit_state()  # edits made while it compares are offered to save before the float model opens
        self._start_compare(work, f"Comparing {quantized.name} with {float_path.name}", float_path,
                            lambda got: self._open_compared(float_path, quantized, *got))
        self._open_job.edit_baseline = baseline

    @guarded
    def _open_compared(self, float_path: Path, quantized: Path, model, quantization, diff, proto) -> None:
        """The comparison of ``quantized`` with ``float_path`` succeeded: open the float model, then its diff tab."""
        self._on_model_loaded(model, quantization, float_path)
        if self.doc.model_path == float_path:  # not refused (edits made meanwhile, kept)
            self._show_diff(diff, proto, quantized)

    def _compare_failed(self, other: Path, err) -> None:
        """A comparison failed: the window keeps what it showed; the status line says why and what to do."""
        path = self.doc.model_path
        shown, named = (path.name, other.name) if path is not None else ("the open model", other.name)
        if path is not None and path.name == other.name:  # corpus folders all hold a model.onnx: name the folders
            shown, named = f"{path.parent.name}/{path.name}", f"{other.parent.name}/{other.name}"
        what = ("pick the float model it was quantized from" if self.doc.quant_summary is not None
                else "pick a file quantized from it")
        self.set_status(f"Could not compare {shown} with {named}; {shown} is still open: {what} "
                        "(the message says why).")
        show_error(self, f"Cannot compare with {other.name}", err)

    def _start_compare(self, work, title: str, other: Path, done) -> None:
        """Start ``work(progress, cancel)`` as the comparison job ``title`` (with ``other``, the file compared);
        ``done(result)`` when it succeeds. A failure or a cancel leaves the window as it was."""
        job = ThreadJob(work, title=title, parent=self)
        self._open_job = job
        job.succeeded.connect(done)
        job.cancelled.connect(lambda: self.set_status(f"Comparison with {other.name} cancelled."))
        job.progress.connect(self._on_compare_progress)
        job.finished.connect(lambda: (self.status_bar_progress.setVisible(False), self.calibration.release()))
        job.failed.connect(lambda err: self._compare_failed(other, err))
        job.finished.connect(self._on_open_finished)
        self.calibration.hold(title)  # where the other jobs show they run
        self._job_clock.start()
        self._compare_overall = OverallProgress(job_phases("compare"))
        job.start()
        self._update_actions()

    def compare_with(self, path: str | Path) -> None:
        """Match ``path`` (a quantized file) to the open float model and measure per-edge SQNR on the
        calibration data (when chosen) in a worker; the diff opens in a tab (:attr:`diffReady`)."""
        self._need_model()
        path = Path(path)
        if self.doc.quant_summary is not None:
            raise WorkbenchError(f"{self.doc.model_path.name} is already quantized; the comparison needs its "
                                 "float model.", hint="Open the float model first, then compare.")
        if self._open_job is not None or self.runs.busy:
            raise WorkbenchError(f"Another job is running; {path.name} was not compared.",
                                 hint="Wait until it ends or cancel it (Run > Cancel).")
        proto = api.open_model(path).proto  # the loader's one-line refusals (a project, an .npz, an empty file)
        # the SQNR is measured on the per-unit analysis's samples (Calibration panel, Analysis samples), not all
        model, data, samples = self.doc.model, self.doc.data, self.runs.analysis_samples

        def work(progress, cancel):  # data that does not fit: the diff alone, coloured by dtype (README)
            return compare_or_diff(model, proto, data, samples=samples, progress=progress, cancel=cancel)

        on = f" on up to {count(samples, 'sample')} (Analysis samples)" if data is not None else ""
        self.set_status(f"Comparing {self.doc.model_path.name} with {path.name}{on}... (Esc cancels)")
        # the panes draw the graph the diff names (unnamed nodes named as the canvas names them)
        self._start_compare(work, f"Comparing with {path.name}", path,
                            lambda diff: self._show_diff(diff, diff.quant_proto or proto, path))

    def cancel_running(self) -> None:
        """Run > Cancel (Esc): the running calibration / analysis / sweep / export / report / evaluate /
        autotune, or the comparison."""
        if self.runs.busy:
            self.runs.cancel()
        elif self._open_job is not None:  # the open stops at its next step (a step itself is not interrupted)
            title = self._open_job.title
            self._open_job.cancel()
            self.set_status(f"Cancelling {title[:1].lower()}{title[1:]}...")

    def _on_cancelling(self, title: str) -> None:
        """Cancel was asked: say so at once (the job stops at its next check, within seconds)."""
        title = cancelling_text(title, getattr(self, "_run_phase", ""))  # "Calibration (while analysing)"
        self._last_progress = None  # the "Cancelling ..." line stays
        for button in (self.evaluate_panel.cancel_button, self.autotune_panel.cancel_button):
            button.setEnabled(False)
        self.calibration.show_cancelling(title)
        self.set_status(f"Cancelling {title}...")

    def _on_compare_progress(self, done: int, total: int, message: str) -> None:
        """One bar across the comparison's phases (matching, loading, comparing samples) and one ETA."""
        overall = self._compare_overall
        overall.update(done, total, message)
        self.status_bar_progress.setVisible(True)
        self.status_bar_progress.setRange(0, OVERALL_STEPS)
        self.status_bar_progress.setValue(round(overall.fraction * OVERALL_STEPS))
        self.calibration.show_held_progress(done, total, overall)  # its bar and percentage, not a busy bar
        if message.startswith(COMPARE_PHASES[-1][0]):
            message += ", samples"  # the only phase counting samples
        self.set_status(f"{self._job_clock.text(done, total, message, overall)} (Esc cancels)")

    @guarded
    def _show_diff(self, diff, proto, path: Path) -> None:
        tab = DiffTab(diff, proto, path, self.doc.model_path.name, self.tabs)
        # the float pane's selection (a row, either pane) outlines its unit in the Errors dock, as the graph's does
        self._tab_models[tab] = self.doc.model
        tab.float_canvas.selectionChangedNames.connect(self._on_tab_selection)
        self.tabs.setCurrentIndex(self.tabs.addTab(tab, drawn_as_is(f"Diff: {path.name}")))
        unmeasured = f"; {unmeasured_text(diff.no_sqnr)}" if getattr(diff, "no_sqnr", "") else ""
        self.set_status(f"Diff with {path.name}: {diff.summary()}{unmeasured}.")
        self.calibration.settle_failure(f"Done: compared with {path.name} (the diff tab).")
        self.diffReady.emit(tab)

    def open_project(self, path: str | Path) -> None:
        path = Path(path).resolve()
        try:
            # a model not found: Locate Model... (its sha256 checked; the stored path then changed: unsaved)
            project, located = dialogs.load_project_locating(self, path)
            if project is None:
                return self._say_not_opened(path)
            model_path = project.model_path(path)
            evaluation = project.evaluation_spec(path)
        except WorkbenchError:
            self._say_not_opened(path)
            raise

        def restore(_model) -> str | None:
            self.doc.project_path = path
            self.doc.allow_code = project.allow_code
            self.doc.export = project.export
            self.doc.undo_stack.clear()
            self.doc.open_latency_kept(project.latency_kept)  # before the recipe: its views show them as such
            self.doc.set_recipe(project.recipe)
            self._show_settings(Settings(_absolute_data_spec(project, path), project.samples,
                                         project.analysis_samples, evaluation, project.choose_recipe))
            self.doc.calibration = project.calibration
            if project.calibration is not None:  # calibrated before: F5 takes its recipe as it is, as the replay does
                self.runs.settle(project.recipe)
            results = dict(project.results or {})
            sweep = results.pop("sensitivity", None)
            run = results.pop("autotune", None)
            evaluated = results.pop("evaluation", None)
            notes = [self._restore_results(results, project.calibration) if results else None,
                     self._restore_sensitivity(sweep) if sweep else None,
                     self.doc.restore_autotune(run) if run else None,
                     self.doc.restore_evaluated(evaluated) if evaluated else None]
            self.doc.mark_saved()
            if located:  # the project now names the located model: saving it is asked for (title "*", quit prompt)
                self.doc.note_model_moved()
            # per-unit results: rows, or a calibration that quantized nothing (its recipe and issues, no row)
            shown = bool(self.doc.errors) or self.doc.result_recipe is not None
            restored = [what for what, ok in (("per-unit results", bool(results) and shown),
                                              ("sensitivity sweep", sweep is not None and self.doc.sensitivity
                                               is not None),
                                              ("autotune curve", self.doc.autotune is not None),
                                              ("evaluation", self.doc.evaluated is not None),
                                              ("calibration cache", project.calibration is not None)) if ok]
            saved = bool(results) or any(part is not None for part in (sweep, run, evaluated))  # unreadable: below
            said = f"Project {path.name}: " + (f"{', '.join(restored)} restored." if restored
                                                 else "recipe and data restored." if saved
                                                 else "recipe and data restored (no saved results).")
            missing = missing_data_note(self.doc.data)
            return " ".join([said, *(n for n in notes if n), *project.path_notes, *([missing] if missing else [])])

        self.open_model(model_path, on_loaded=restore)

    def _restore_results(self, results: dict, calibration) -> str | None:
        """Show the per-unit results saved in the project; damaged ones are skipped and described in
        the returned note (the project still opens)."""
        try:
            self.doc.set_results({**results, "calibration": calibration}, data=self.doc.saved_rows(results))
        except Exception as exc:  # noqa: BLE001 - a damaged project section must not stop the project opening
            log.warning("Saved results not restored: %s", exc)
            return (f"The project's saved per-unit results are unreadable ({type(exc).__name__}); "
                    "calibrate again (F5).")
        return None

    def _restore_sensitivity(self, sweep: dict) -> str | None:
        """Show a sweep saved in the project; a damaged one is skipped and described in the returned note."""
        try:
            self.doc.set_sensitivity({k: v for k, v in sweep.items() if k != "calibration"},
                                     data=self.doc.saved_rows(sweep))
        except Exception as exc:  # noqa: BLE001 - a damaged project section must not stop the project opening
            log.warning("Saved sensitivity sweep not restored: %s", exc)
            self.doc.sensitivity, self.doc.suggestion = None, []
            return (f"The project's saved sensitivity sweep is unreadable ({type(exc).__name__}); "
                    "run the sweep again (F7).")
        return None

    # ------------------------------------------------------------------ saving and export
    @guarded
    def save_project(self) -> Path | None:
        if self.doc.project_path is None:
            return self.save_project_as()
        return self.save_project_to(self.doc.project_path)

    @guarded
    def save_project_as(self) -> Path | None:
        self._need_model()
        start = str(self.doc.project_path) if self.doc.project_path else settings.start_path(
            "project", f"{file_stem(self.doc.model_path)}{PROJECT_SUFFIX}", self.doc.model_path.parent)
        path, _ = QFileDialog.getSaveFileName(self, "Save project", start, "Workbench projects (*.wbproj)")
        if not path:
            return None
        settings.remember_folder("project", path)
        if not path.endswith(PROJECT_SUFFIX):
            path += PROJECT_SUFFIX
        return self.save_project_to(path)

    def save_project_to(self, path: str | Path) -> Path:
        """Write the project (model ref, recipe, data, calibration cache, results) to ``path``; ExportError (one
        line naming it) when ``path`` is the model, the calibration data or the eval data / metric file."""
        self._need_model()
        path = Path(path).resolve()
        self.sync_data_spec()  # what the Calibration panel shows is what is saved
        refuse_output_onto_inputs(path, self._panel_inputs())  # the Evaluate panel's files, its defaults too
        save_project(self.current_project(), path)  # refused onto the model, data and eval files it names
        self.doc.project_path = path
        settings.set_project_colour(path, self._colour_to_keep())  # restored when reopened
        settings.set_project_rank(path, self.errors.rank)  # so is what the Errors bars rank by
        self.doc.mark_saved()
        self.autosaver.discard()
        settings.add_recent_file(path)
        self._update_title()
        self.set_status(f"Saved {path}.")
        self.projectSaved.emit(str(path))
        return path

    def current_project(self):
        """The open work as a project (model ref, recipe, data, sample counts, evaluation settings, calibration
        cache, results and the opened project's export settings), unsaved."""
        self._need_model()
        project = new_project(self.doc.model_path, self.doc.recipe, data=self.doc.data, samples=self.doc.samples,
                              sha256=self.doc.model.sha256 or None,  # hashed when opened: no re-read of the file
                              external_data=self.doc.external_data)  # so were its external data files
        project.calibration = self.doc.calibration
        results = self.doc.results_json() or {}
        if self.doc.sensitivity is not None:
            results["sensitivity"] = self.doc.sensitivity_json()
        if self.doc.autotune is not None:
            results["autotune"] = self.doc.autotune_json()
        if self.doc.evaluated is not None:
            results["evaluation"] = self.doc.evaluated_json()
        project.results = results or None
        data = self.doc.data
        # a Python reader's own tick decides; with other data the opened project's value stays
        project.allow_code = bool(data.get("allow_code")) if data and api.data_runs_code(data) else self.doc.allow_code
        project.export = self.doc.export
        project.analysis_samples = self.doc.analysis_samples
        project.choose_recipe = self.doc.choose_recipe
        project.evaluation = self.doc.evaluation
        project.latency_kept = latency_kept_entries(self.doc)
        return project

    @guarded
    def export_dialog(self, fmt: str | None = None) -> None:
        """File > Export (Ctrl+E): pick the file and its format; ``fmt`` ("qdq" / "qonnx") is the format offered
        first (None: the open project's export format, QDQ unless its ``export`` section says QONNX)."""
        self._need_model()
        fmt = fmt or project_format(self.doc.export)
        start = self._export_start(f"{file_stem(self.doc.model_path)}.{fmt}.onnx")
        path, chosen = QFileDialog.getSaveFileName(self, "Export quantized model", start, ";;".join(
            EXPORT_FILTERS.values()), EXPORT_FILTERS[fmt])
        if path:
            settings.remember_folder("export", path)
            fmt = next((f for f, text in EXPORT_FILTERS.items() if text == chosen), fmt)
            self.export_to(path if path.lower().endswith(".onnx") else path + ".onnx", fmt)

    def _export_start(self, name: str) -> str:
        """Where an export dialog starts: ``name`` in the folder of the last export; before any, the open project's
        folder when it was saved, else the model's."""
        first = self.doc.project_path.parent if self.doc.project_path else self.doc.model_path.parent
        return settings.start_path("export", name, first)

    def export_to(self, path: str | Path, fmt: str | None = None):
        """Start the export job (quantize with the cached calibration, write ``path`` atomically) as ``fmt``
        ("qdq" / "qonnx"; None: the open project's export format); refused when ``path`` is an input: the
        model, the open project, the calibration or eval data. When it succeeds, the project's ``export``
        section records the format (an undoable edit when it changes), as ``workbench-cli quantize
        --save-project`` records it."""
        self.sync_data_spec()  # the Calibration panel's path as shown, typed without Enter too
        return self.runs.export(path, fmt or project_format(self.doc.export), inputs=self._panel_inputs())

    def _panel_inputs(self) -> dict[str, str]:
        """The Evaluate panel's files (path -> what it is): outputs never replace them, as they never
        replace the model, the open project or the calibration data (:meth:`RunController.input_files`)."""
        settings = self.evaluate_panel.settings
        out = {}
        if settings.data.text().strip():
            out[settings.data.text().strip()] = "the eval data"
        metric = settings.metric_spec()
        if metric and metric.endswith(".py"):
            out[metric] = "the metric file"
        return out

    def _refuse_input(self, path: str | Path) -> None:
        """Raise when ``path`` is an input of the open work (the model, project, calibration or eval data)."""
        self.runs.refuse_input(path, self._panel_inputs())

    @guarded
    def export_node_data_dialog(self) -> None:
        self._need_model()
        self._need_rows()
        start = self._export_start(f"{file_stem(self.doc.model_path)}.json")
        path, _ = QFileDialog.getSaveFileName(self, "Export Model Explorer node data", start, "JSON (*.json)")
        if path:
            settings.remember_folder("export", path)
            self.export_node_data_to(path)

    def export_node_data_to(self, path: str | Path) -> dict[str, Path]:
        """Write the Errors dock's figures as Model Explorer node data: ``NAME.sqnr.json`` and
        ``NAME.sensitivity.json`` for ``path`` = ``NAME.json``; returns figure -> path written."""
        self._need_model()
        self._need_rows()
        for written in api.node_data_paths(path).values():
            self._refuse_input(written)
            check_output_path(written)
        plan = self.doc.plan
        if self.doc.result_recipe and not self.doc.results_current:
            plan = api.plan(self.doc.model, api.Recipe.from_json(self.doc.result_recipe))  # the rows' own plan
        data = api.build_node_data(self.doc.model, plan, self.doc.errors)
        paths = api.write_node_data(data, path)
        missing = f"; {count(len(data.unmatched), 'unit')} not found in the file" if data.unmatched else ""
        self.set_status(f"Model Explorer node data for {count(len(data.node_ids()), 'node')}: "
                        f"{', '.join(p.name for p in paths.values())}{missing}. In Model Explorer: Load node data.")
        return paths

    def _need_rows(self) -> None:
        if self.doc.errors:
            return
        if self.doc.quant_summary is not None:
            raise WorkbenchError(f"No per-unit figures: {self.doc.model_path.name} is already quantized and they are "
                                 "measured while quantizing a float model.", hint=QUANTIZED_FIGURES_HINT)
        raise WorkbenchError("No per-unit figures yet.", hint="Calibrate first (F5), then export them.")

    @guarded
    def apply_project_dialog(self) -> None:
        self._need_model()
        path, _ = QFileDialog.getOpenFileName(self, "Apply project to the open model",
                                              settings.last_folder("project", self.doc.model_path.parent),
                                              "Workbench projects (*.wbproj)")
        if path:
            settings.remember_folder("project", path)
            self.apply_project(path)

    @guarded
    def apply_project(self, path: str | Path) -> ApplyProjectDialog:
        """Match the project's recipe at ``path`` to the open model and show the table (window-modal);
        its Apply button replaces the recipe in one undoable edit. Returns the dialog."""
        self._need_model()
        path = Path(path).resolve()
        QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
        try:
            rt, project = api.retarget_to_model(path, self.doc.model)
        finally:
            QApplication.restoreOverrideCursor()
        dialog = ApplyProjectDialog(rt, path, self.doc.model_path.name, self)
        dialog.accepted.connect(lambda: self._adopt_recipe(rt.recipe, path, project, rt.latency_kept))
        dialog.finished.connect(dialog.deleteLater)
        self.apply_dialog = dialog
        dialog.open()
        return dialog

    @guarded
    def _adopt_recipe(self, recipe, project: Path, read=None, latency: list = ()) -> None:
        """Apply's edit: ``recipe`` (the project's, matched to the open model) and, when the open model has no
        calibration data chosen, the data and samples of the project ``read`` as it was read (the CLI's
        retarget reads them too: a recipe with bias correction needs the data even where the ranges are
        cached), all in one undoable edit. ``latency``: the project's ``latency_kept`` under the open model's
        names (LatencyKept entries): those units stay the latency check's while the edit is done."""
        self.sync_data_spec()
        data = read.data_spec(project) if read is not None and not self.doc.data else None
        stack = self.doc.undo_stack
        self.doc.note_latency_entries(latency)
        kept = [e.node for e in latency]
        if data is None:
            changed = push_edit(self.doc, recipe, f"Apply project {project.name}", kept)
        else:
            stack.beginMacro(f"Apply project {project.name}")  # an empty macro would count as an edit
            try:
                changed = push_edit(self.doc, recipe, f"Apply project {project.name}", kept)
                before = self.doc.settings
                after = before._replace(data=data, samples=read.samples)
                self.calibration.set_data_spec(data, read.samples)  # the push shows them in the document only
                stack.push(SettingsCommand(self._show_settings, before, after, "Change calibration data"))
            finally:
                stack.endMacro()
        taken = f" and its calibration data ({Path(data.get('path', '')).name or 'data'})" if data else ""
        if changed or data:
            self.set_status(f"Applied the recipe of {project.name}{taken} (Ctrl+Z undoes); calibrate (F5) to "
                            "measure it.")
        else:
            self.set_status(f"The recipe of {project.name} is already the open model's recipe.")

    @guarded
    def export_report_dialog(self) -> None:
        self._need_model()
        start = self._export_start(f"{file_stem(self.doc.model_path)}.report.html")
        path, _ = QFileDialog.getSaveFileName(self, "Export report (HTML)", start, "HTML (*.html)")
        if path:
            settings.remember_folder("export", path)
            self.export_report_to(path)

    def export_report_to(self, path: str | Path):
        """Start the report job (written to ``path`` atomically): measured on the Evaluate panel's eval data
        and task metric when it names eval data (else on the calibration data), with the Autotune panel's
        finished curve."""
        self.sync_data_spec()
        settings = self.evaluate_panel.settings
        self._refuse_input(path)  # before the eval settings are checked: the path is the first thing wrong
        evaluation = settings.evaluation() if settings.data.text().strip() else None
        return self.runs.report(path, evaluation=evaluation, curve=self.autotune_panel.curve_doc(),
                                inputs=self._panel_inputs())

    def _need_model(self) -> None:
        if self.doc.model is None:
            raise WorkbenchError("No model is open.", hint="Open a model first (File > Open).")

    # ------------------------------------------------------------------ runs
    @guarded
    def start_calibration(self) -> None:
        self._on_spec_changed()
        self.runs.calibrate()

    @guarded
    def show_quantized_errors(self) -> None:
        """The latency check kept every unit float: undo its edit and analyse the recipe as it is (F6), so the
        Errors panel shows the quantized model's per-node errors (:mod:`workbench.qt.quantize_anyway`)."""
        if self.runs.busy or not can_show_quantized(self.doc):
            return
        self.quantized_shelf.show_quantized()
        self.start_analysis()

    @guarded
    def start_analysis(self) -> None:
        self._on_spec_changed()
        if self.doc.calibration is None:
            self.runs.calibrate()
        elif self.runs.analyze() is None:
            self.set_status(ANALYSIS_CURRENT)

    @guarded
    def start_choice(self) -> None:
        self._on_spec_changed()
        self.runs.choose()

    def _apply_choice(self, result: dict) -> str:
        """Make the chosen recipe the document's (one undoable edit); the status line to show."""
        if result.get("skipped"):
            return f"Recipe choice skipped: {result['skipped']}."
        scores = ", ".join(f"{k} {v:.1f}" for k, v in result["scores"].items())
        measured = f"output SQNR on {count(result['held_out'], 'held-out row')}, dB: {scores}"
        if result["chosen"] == "preset" and not result.get("promoted"):
            return f"Recipe choice: the preset stays ({measured})."
        label = result.get("label") or result["chosen"]
        if self._edited_since(result):  # the choice is a whole recipe made from the one the job started with
            return (f"Recipe choice: {label} ({measured}) not applied: the recipe was edited while the choice ran, "
                    "and that edit is kept. Choose Recipe again to choose for the edited recipe.")
        push_edit(self.doc, api.Recipe.model_validate_json(result["recipe"]), f"Choose recipe: {label}")
        return f"Recipe choice: {label} ({measured}); Ctrl+Z restores the previous recipe."

    def _edited_since(self, result: dict) -> bool:
        """Whether the document's recipe changed since the job of ``result`` started (an edit made while it ran)."""
        started = result.get("started_recipe")
        return started is not None and started != self.doc.recipe.to_json()

    def start_sensitivity(self) -> None:
        self._on_spec_changed()
        self.runs.sensitivity()
        self.show_sensitivity_dock()

    def show_problems(self) -> None:
        """Show the Problems dock in front."""
        docks.bring_forward(self, self.docks, "Problems", beside="Errors")

    def _on_problem_count(self, errors: int, warnings: int, notes: int) -> None:
        """The status bar link: the current issues by kind, notes apart from the problems ("2 warnings, 75 notes")."""
        self._problem_counts = (errors, warnings, notes)
        text = link_text(errors, warnings, notes)
        # the link colour is fixed when the text is set: take the palette's now (and again on a theme switch)
        link = QApplication.palette().color(QPalette.ColorRole.Link).name()
        self.problems_link.setText(f'<a href="#problems" style="color: {link}">{text}</a>' if text else "")

    def show_sensitivity_dock(self) -> None:
        """Show the Sensitivity dock in front, as a tab beside Errors the first time."""
        docks.bring_forward(self, self.docks, "Sensitivity", beside="Errors")

    @guarded
    def apply_suggestion(self) -> list[str]:
        """Keep the sweep's suggested units in float: one undoable recipe edit (Edit > Undo reverts it)."""
        nodes = list(self.doc.suggestion)
        if not nodes:
            self.set_status("No suggestion yet: run the sensitivity sweep first (F7).")
            return []
        if not self.sensitivity.pending():
            self.set_status("The suggestion is already applied.")
            return []
        if self.sensitivity.stale:
            self.set_status("The sweep is out of date (an earlier recipe or other data): sweep again (F7) first.")
            return []
        if push_edit(self.doc, set_exclude(self.doc.recipe, nodes, True),
                     f"Keep {count(len(nodes), 'sensitive unit')} in float"):
            self.set_status(f"Kept {count(len(nodes), 'unit')} in float: {', '.join(nodes)} (Ctrl+Z undoes).")
        return nodes

    @guarded
    def color_by_sensitivity(self) -> None:
        values = self.sensitivity.canvas_values()
        if not values:
            self.set_status(f"No sensitivity for an already-quantized file: {QUANTIZED_FIGURES_HINT}"
                            if self.doc.quant_summary is not None else "No sensitivity yet: run the sweep first (F7).")
            return
        units = self._plan_units()  # every node of a swept unit takes its figure (a Conv's Relu was grey)
        self.canvas.set_node_values(errors=unit_spread(values, units), **self._sensitivity_legend(units))
        self.color_mode.setCurrentIndex(COLOR_MODES.index("error"))

    def _sensitivity_legend(self, units: dict) -> dict:
        """The canvas legend of the sweep's colours: the figure (out of date while the sweep is), the real values
        of its bands, the figure of every node of a swept unit, and its notes (coloured by the value)."""
        stale = ", out of date: an earlier recipe or data (F7 sweeps again)" if self.sensitivity.stale else ""
        return {"error_label": f"Sensitivity: {self.sensitivity.figure.currentText()}{stale}",
                "error_scale": self.sensitivity.canvas_scale(),
                "error_figures": unit_spread(self.sensitivity.canvas_figures(), units),
                "error_notes": self.sensitivity.canvas_notes()}

    def _mark_stale_sweep(self) -> None:
        """The sweep is measured with an earlier recipe or other rows, or current again: its panel says so, and
        the canvas legend when the sweep colours the graph (it named the figure as current)."""
        self.sensitivity.set_stale(not self.doc.sensitivity_current)
        if self.canvas.error_label().startswith("Sensitivity") and self.sensitivity.result is not None:
            self.canvas.set_node_values(**self._sensitivity_legend(self._plan_units()))

    @guarded
    def _on_sensitivity(self) -> None:
        self.sensitivity.stale = not self.doc.sensitivity_current
        self.sensitivity.set_result(self.doc.sensitivity, self.doc.suggestion, self.doc.sensitivity_quantized)
        self._update_actions()
        if self.doc.sensitivity is not None:
            self.show_sensitivity_dock()
            self.color_by_sensitivity()

    def _on_run_started(self, title: str) -> None:
        if self.runs.kind == "calibrate":
            self.calibration.set_running(True, f"{title}...")
        else:  # the panel keeps its calibration's result; the status bar follows this job
            self.calibration.hold(title)
        self._job_clock.start()
        self._last_progress = None
        self._elapsed_tick.start()
        self.status_bar_progress.setVisible(True)
        self.status_bar_progress.setRange(0, 0)
        self.set_status(f"{title} running... (Esc cancels)")
        self._update_actions()

    def _on_run_progress(self, done: int, total: int, message: str) -> None:
        self._run_phase = phase_of(message) or getattr(self, "_run_phase", "")  # words a cancel
        overall = self.runs.overall  # the whole job across its phases (one bar, not one per phase)
        if overall.known:
            self.status_bar_progress.setRange(0, OVERALL_STEPS)
            self.status_bar_progress.setValue(round(overall.fraction * OVERALL_STEPS))
        elif total > 0:
            self.status_bar_progress.setRange(0, total)
            self.status_bar_progress.setValue(min(done, total))
        else:
            self.status_bar_progress.setRange(0, 0)
        self._last_progress = (done, total, message)
        self._word_progress(done, total, message)

    def _word_progress(self, done: int, total: int, message: str) -> None:
        """The running job's last report with its ETA and time elapsed, in the panel and the status bar."""
        overall = self.runs.overall
        if self.runs.kind == "calibrate":
            self.calibration.show_progress(done, total, message, overall)
            self.set_status(self.calibration.status.text())  # with the job's ETA
        else:
            self.calibration.show_held_progress(done, total, overall)  # the panel as the status bar
            self.set_status(self._job_clock.text(done, total, message, overall))

    def _tick_elapsed(self) -> None:
        """Each second while a main job runs: its last report worded again, so the time elapsed counts on
        through a long step that sends no report (it said '0:08 elapsed' for 30 s)."""
        if self._last_progress is not None and self.runs.busy:
            self._word_progress(*self._last_progress)

    def _on_run_succeeded(self, kind: str, result: dict) -> None:
        if kind == "export":
            self._last_export = Path(result["path"])
            self._exported_with[self._last_export.resolve()] = exported_with(result, result["started_rows"])
            self._record_export_section(result.get("export_section"))
            self._on_run_ended(*self._exported(result))
            self._reread_exported(self._last_export)
        elif kind == "report":
            self._on_run_ended(f"Done: wrote the report to {result['path']}{too_late(result)} (opens in any browser, "
                               "offline).")
        elif kind == "sensitivity":
            self._on_run_ended(f"Done: sensitivity of {count(len(self.doc.sensitivity.rows), 'node unit')}.")
        elif kind == "choose":
            self._on_run_ended(self._apply_choice(result))
        elif kind in EVALUATION_KINDS:
            self._on_run_ended(self.evaluation.done_message(kind, result))
        else:
            data = [i for i in self.doc.result_issues if i.code == IssueCode.CALIBRATION_DATA]
            warned = f" {count(len(data), 'calibration data warning')} (NaN/Inf or empty tensors): see " \
                     "View > Problems." if data else ""
            again, self._remeasure_after = self._remeasure_after, ""
            again = f" (measured again: {again})" if again else ""
            chose = f" {result['choice_text']}" if result.get("choice_text") else ""
            chose += result.get("latency_text") or ""
            done = nothing_quantized_status(self.doc) or f"Done: {count(len(self.doc.errors), 'node unit')} analysed."
            if nothing_quantized(self.doc):
                self.errors.set_empty_note(nothing_quantized_text(self.doc),  # before the status: it names the panel
                                           offer=can_show_quantized(self.doc))
                docks.reveal(self, self.docks, "Errors", fit=True)  # a few lines, as for an already-quantized file
                if self.docks["Errors"].isVisible():
                    self.docks["Errors"].raise_()
            full = f"{done[:-1]}{again}.{chose}{warned}"
            kept = len(result.get("latency_kept") or []) if result.get("latency_text") else 0
            chose_short = choice_short(result.get("choice"), result.get("choice_text") or "",
                                       result.get("choice_undo_steps", 1))  # 2: the latency check's edit after it
            short = f"{done[:-1]}{again}.{chose_short}"
            short += f" The latency check kept {count(kept, 'unit')} float." if kept else ""
            short += warned
            # the status bar holds a line: the whole text is in the Calibration panel and the tooltip
            self._on_run_ended(full, short=f"{short} Details: Calibration panel." if short != full else None)
            self._done_at = (self.doc.undo_stack.index(), self.calibration.status.text())  # Undo / Redo follow it

    def _exported(self, result: dict) -> tuple[str, str | None]:
        """Adopt the units the export's latency check kept float (one undoable edit, so a saved project
        replays to the exported bytes); the status line for it, and its short form for the status bar when
        the line carries a warning the bar would cut off (a reused slowdown), else None. When the recipe was
        edited while the export ran, that edit stays: only the latency check's exclusions are added to it, for
        the units the edit left alone."""
        quantized, total = result.get("units", (None, None))
        written = api.Recipe.model_validate_json(result["recipe"]) if result.get("recipe") else None
        edited = self._edited_since(result)
        started = api.Recipe.model_validate_json(result["started_recipe"]) if result.get("started_recipe") \
            else self.doc.recipe
        note = ""
        if written is not None:
            # the recipe choice's own units kept float are its edit, not the latency check's
            chosen = set((result.get("choice") or {}).get("promoted") or [])
            kept = sorted(n for n, o in written.overrides.items()
                          if o.exclude and n not in chosen and not (n in started.overrides and started.overrides[n].exclude))
            current = self.doc.results_current and self.doc.calibration is not None
            if edited:
                note = self._keep_float_after_edit(started, kept, result.get("problems") or [])
            elif kept and push_edit(self.doc, written, f"Keep {count(len(kept), 'unit')} float (latency check at export)"):
                self.doc.note_latency_kept(kept, result.get("problems") or [])
                note = (f" The latency check kept {count(len(kept), 'unit')} float (slower quantized on this machine), "
                        "as `workbench-cli quantize` does; the recipe now says so (Ctrl+Z undoes).")
                if current:  # the figures shown were of the recipe before: measure the exported one
                    note += (" Measuring the figures again with them float. Save Project stays available meanwhile "
                             "(Esc stops the measuring).")
                    # named in the analysis's line, which replaces this one: the file's path stays said
                    self._remeasure_after = f"the export to {result['path']} kept {count(len(kept), 'unit')} float"
                    QTimer.singleShot(0, self._remeasure)
        if edited:
            note += (" The file has the recipe as it was when the export started: your edits made since are not in "
                     "it (export again to include them).")
        if result.get("reused"):  # a reused slowdown is a warning (the ratio of thread CPU time)
            note += reused_latency_note(result.get("latency"), qonnx=bool(result.get("export_section")))
        elif result.get("rerun") and result["rerun"] != "no model kept":
            note += f" Quantized again with the latency check: {result['rerun']}."
        if result.get("shapes_note"):
            note += f" Note: {result['shapes_note']}"
        units = f": {quantized} of {total} node units quantized" if total is not None else ""
        none = " No node unit is quantized: the file computes in float." if total and not quantized else ""
        chose = f" {result['choice_text']}" if result.get("choice_text") else ""
        warned = reused_slowdown_short(result.get("latency")) if result.get("reused") else ""
        late = too_late(result)  # cancelled once the write had begun: the file is written
        return (f"Done: exported {result['path']}{late}{units} (View > Open Exported Model, Ctrl+Shift+X, shows it "
                f"as written).{chose}{note}{none}",
                f"Done: exported {result['path']}{late}{units}.{warned}" if warned else None)

    def _record_export_section(self, section: dict | None) -> None:
        """The export's format becomes the project's (a saved project replays to the same format and input
        shapes); an undoable edit when it changes."""
        if section != self.doc.export:
            self.doc.undo_stack.push(ExportSectionCommand(self.doc, self.doc.export, section))

    def _keep_float_after_edit(self, started, kept: list[str], problems: list) -> str:
        """Add the latency check's exclusions ``kept`` to a recipe edited while the export ran (``started``:
        the recipe it ran with; ``problems``: the export's PlanIssues, which say why): only for units whose
        settings the edit left as they were; the status note."""
        if not kept:
            return ""

        def settings(recipe, node):
            o = recipe.overrides.get(node)
            return o.model_dump() if o is not None else None

        untouched = [n for n in kept if settings(self.doc.recipe, n) == settings(started, n)]
        touched = [n for n in kept if n not in untouched and not (settings(self.doc.recipe, n) or {}).get("exclude")]
        note = ""
        if untouched and push_edit(self.doc, set_exclude(self.doc.recipe, untouched, True),
                                   f"Keep {count(len(untouched), 'unit')} float (latency check at export)"):
            self.doc.note_latency_kept(untouched, problems)
            note = (f" The latency check kept {count(len(untouched), 'unit')} float (slower quantized on this machine), "
                    "as `workbench-cli quantize` does; added to your edited recipe (Ctrl+Z undoes).")
        if touched:
            note += (f" Not added for {', '.join(touched)}: you changed {'it' if len(touched) == 1 else 'them'} while "
                     "the export ran.")
        return note

    @guarded
    def _remeasure(self) -> None:
        """Analyse again with the cached ranges after an export changed the recipe (its figures were
        current before); the export's own status line stays until the analysis reports."""
        if self.runs.busy or self.doc.model is None or not self._remeasure_after:
            self._remeasure_after = ""
            return
        status = self.status_label.text()
        self.runs.analyze()
        self.set_status(status)

    def _on_run_cancelled(self, kind: str) -> None:
        self._remeasure_after = ""
        held = {"calibrate": bool(self.doc.errors) or self.doc.calibration is not None,
                "sensitivity": self.doc.sensitivity is not None, "autotune": self.doc.autotune is not None}
        job = self.runs.job
        if kind in WRITERS and getattr(job, "written_when_killed", False):  # killed once its file was in place
            self._on_run_ended(killed_after_write_text(kind, str(job.writes), job.grace))
            return
        self._on_run_ended(cancelled_text(kind, getattr(self, "_run_phase", ""), held.get(kind)))
        if kind == "calibrate" and held["calibrate"]:  # the results shown are the last run's: not at 0 %
            self.calibration.progress.setValue(self.calibration.progress.maximum())

    def _on_run_failed(self, kind: str, err) -> None:
        self._remeasure_after = ""
        message = f"{kind.capitalize()} failed: {getattr(err, 'message', err)}"
        self._failed_at = (self.doc.undo_stack.index(), message)  # the edit state it failed with (Undo / Redo)
        self._on_run_ended(message)
        show_error(self, f"{kind.capitalize()} failed", err)

    def _on_run_ended(self, message: str, short: str | None = None) -> None:
        """A job ended: ``message`` in the Calibration panel, and in the status bar as ``short`` when given (the
        whole ``message`` then in its tooltip)."""
        self._run_phase = ""
        self._elapsed_tick.stop()
        self._last_progress = None
        if self.runs.kind == "calibrate":
            self.calibration.set_running(False, message)
        else:
            if message.startswith("Done"):  # a failure shown before is out of date
                self.calibration.settle_failure(message)
            self.calibration.release()
        self.status_bar_progress.setVisible(False)
        self.set_status(short or message, full=message)

    # ------------------------------------------------------------------ selection and views
    @guarded
    def run_search(self) -> list[str]:
        text = self.search.text().strip()
        if not text or self.doc.model is None:
            return []
        canvas = self.tabs.shown_canvas()  # the search box searches the shown graph
        if canvas is None:
            self.set_status(f"The {self._tab_name()} tab has no graph to search: switch to the Graph tab, a "
                            "subgraph or an Exported tab.")
            return []
        try:
            found = canvas.search(text)
        except ValueError as exc:  # re: with a bad pattern
            self.set_status(f"{exc}. Fix the pattern after 're:'.")
            return []
        self._search_canvas = canvas
        ops = dict(zip(canvas.node_names(), canvas.node_op_types(), strict=True))
        self.search_hits.set_hits([(n, ops[n]) for n in found])
        if found:  # the hits are selected: the Inspector stays in front to edit them, the list is a tab beside it
            hits, inspector = self.docks["Search Hits"], self.docks["Inspector"]
            listed = hits.isVisible() and not hits.visibleRegion().isEmpty()
            docks.bring_forward(self, self.docks, "Search Hits", beside="Inspector")
            if not listed and inspector.isVisible() and self.tabifiedDockWidgets(inspector):
                inspector.raise_()
        where = "" if canvas is self.canvas else f" in the {self._tab_name()} tab"
        exact = canvas.exact_hits()
        if exact:
            others = len(found) - exact
            self.set_status(f"Selected {', '.join(found[:exact])}: its exact name{where}"
                            + (f"; {count(others, 'other node contains', 'other nodes contain')} {text!r} (the Search "
                               "Hits tab lists them after it; F3 steps to them)." if others else "."))
            return found[:exact]
        self.set_status(f"{count(len(found), 'node matches', 'nodes match')} {text!r}{where} (selected; the Search "
                        "Hits tab lists them); F3 / Shift+F3 step through them." if found
                        else self._no_search_hits(text, canvas))
        return found

    def _no_search_hits(self, text: str, canvas: GraphCanvas) -> str:
        """The status line of a search of ``canvas`` without hits: it may match Q/DQ nodes folded into badges."""
        shown = self.tabs.currentWidget()
        ops = ({n.name: n.op_type for n in self.doc.model.graph.node} if canvas is self.canvas
               else shown.op_types if isinstance(shown, QuantModelTab) else {})
        folded = canvas.folded_matches(text, ops)
        if not folded:
            return f"No node matches {text!r}."
        return (f"No drawn node matches {text!r}, but {count(len(folded), 'Q/DQ node')} folded into the edge badges "
                "and node tags do; View > Show Q/DQ as Nodes (Ctrl+Shift+Q) draws them, then search again.")

    @guarded
    def step_search(self, step: int = 1) -> None:
        """Show the next (``step=1``) or previous (``-1``) hit of the last search."""
        canvas = self.shown_canvas()
        hit = canvas.next_hit(step)
        if hit is None:
            self.set_status("No search hits: type in the search box and press Enter first.")
            return
        name, position, total = hit
        if canvas is self._search_canvas:
            self.search_hits.set_current(position - 1)
        self.set_status(f"Hit {position} of {total}: {name}")

    @guarded
    def export_picture_dialog(self) -> None:
        """File > Export Picture: the current view of the shown graph as PNG or SVG."""
        self._need_model()
        shown = self.tabs.currentWidget()
        self.shown_canvas()  # a tab without a graph is refused before the dialog
        model = file_stem(self.doc.model_path)
        stem = (file_stem(shown.path) if isinstance(shown, QuantModelTab) else model if shown is self.canvas
                else f"{model}_{''.join(c if c.isalnum() else '_' for c in self._tab_name())}")
        start = self._export_start(f"{stem}.png")
        path, chosen = QFileDialog.getSaveFileName(self, "Export picture of the view", start,
                                                   "PNG picture (*.png);;SVG picture (*.svg)")
        if path:
            settings.remember_folder("export", path)
            if not path.lower().endswith((".png", ".svg")):
                path += ".svg" if "svg" in chosen.lower() else ".png"
            self.export_picture_to(path)

    def export_picture_to(self, path: str | Path) -> tuple[int, int]:
        """Write what the shown graph shows now to ``path`` (.png / .svg); never onto an input of the job.
        Returns its (width, height) in pixels. Raises WorkbenchError (one line naming ``path``) when the shown
        tab has no graph, or ``path`` is an input, has another suffix or cannot be written."""
        canvas = self.shown_canvas()
        api.check_not_input(str(path))
        if self.doc.model is not None:
            self._refuse_input(path)
        check_output_path(path)
        try:
            size = canvas.export_picture(path)
        except (OSError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).removeprefix(f"{path}: ")
            raise WorkbenchError(f"{path}: cannot write the picture ({why}).",
                                 hint="Choose a writable folder and a .png or .svg name.") from None
        self.set_status(f"Wrote {path} ({size[0]}x{size[1]} px).")
        return size

    @guarded
    def select_all_nodes(self) -> list[str]:
        """Edit > Select All (Ctrl+A): every node of the shown graph (not an undoable edit, as any selection)."""
        canvas = self.shown_canvas()
        names = canvas.node_names()
        canvas.select_nodes(names)
        self.set_status(f"Selected all {count(len(names), 'node')}.")
        return names

    @guarded
    def select_same_type(self) -> list[str]:
        """Edit > Select all of this type: in the shown graph, every node of the selected node's op type."""
        canvas = self.shown_canvas()
        selected = canvas.selected_nodes()
        if not selected:
            self.set_status("Select a node first; then all nodes of its op type are selected.")
            return []
        op = dict(zip(canvas.node_names(), canvas.node_op_types(), strict=True))[selected[0]]
        found = canvas.select_op_type(op)
        self.set_status(f"Selected {count(len(found), f'{op} node')}.")
        return found

    @guarded
    def _on_selection(self, names: list) -> None:
        self.inspector.set_nodes(list(names))
        for table in (self.cost.table, self.sensitivity.table):  # their rows follow the graph, as a click on one
            follow_selection(table, list(names))  # selects its node there
        self._errors_follow_selection()
        self._hist_timer.start()

    @guarded
    def _on_tab_selection(self, _names: list) -> None:
        """A diff tab's float pane (a row, either pane), an exported file's or a subgraph's graph selected nodes: the
        Errors dock follows it while that tab is shown (:meth:`_errors_follow_selection`), its histogram too."""
        self._errors_follow_selection()
        self._inspector_follow_tab()
        self._hist_timer.start()

    def _inspector_follow_tab(self) -> None:
        """The Inspector describes the shown tab's selection: the Graph tab's, a subgraph body's own nodes, none on
        Netron (the exported file's and a diff tab's show their file's nodes themselves)."""
        shown = self.tabs.currentWidget()
        if shown is self.canvas:
            self.inspector.set_nodes(self.canvas.selected_nodes())
            return
        if isinstance(shown, GraphCanvas) or (shown is not None and shown is self.tabs.netron):  # a body, Netron
            self.inspector.set_nodes(list(self._shown_view().selected))

    def _follow_tab(self, tab: QWidget, canvas: GraphCanvas) -> None:
        """``tab``, just opened for the open model, drives the Errors dock by the selection of ``canvas`` while shown."""
        self._tab_models[tab] = self.doc.model
        canvas.selectionChangedNames.connect(self._on_tab_selection)
        self._errors_follow_selection()  # it was shown before it was known as the open model's

    def _shown_view(self) -> ErrorsView:
        """What the Errors dock shows for the shown tab (:func:`~workbench.qt.diff_errors.shown_view`)."""
        shown, model = self.tabs.currentWidget(), self.doc.model
        return shown_view(shown, self.canvas, self.tabs.netron,
                          model is not None and self._tab_models.get(shown) is model)

    def _errors_follow_selection(self) -> None:
        """The Errors dock shows the bars of the graph the shown tab draws and outlines the node unit of its selection,
        scrolled into view (:func:`~workbench.qt.diff_errors.shown_view`: every bar on the graph, a diff tab, the
        exported file or Netron; a subgraph's own units; none for a tab of another model. A folded activation outlines
        its unit, several units none; before results the one node selected)."""
        view = self._shown_view()
        self.errors.set_scope(view.scope, view.note)
        units = self.doc.plan.units if self.doc.plan is not None else {}
        self.errors.show_selected(outlined_in_view(view, units, {r.node for r in self.errors.rows}))

    @guarded
    def focus_node(self, name: str) -> None:
        """Select and centre node ``name`` of the open model (a dock's row): on its graph, brought forward.

        Selected before the graph comes forward: brought forward first, it showed its old selection (and the tab
        change had the Errors dock outline the old selection's bar) until the new one was made."""
        self.canvas.select_nodes([name], center=True)
        self._show_main_graph()

    @guarded
    def focus_in_shown_tab(self, name: str) -> None:
        """A bar of the Errors dock or a row of the Problems, Sensitivity, Cost or Recipe dock was clicked: select and
        centre node ``name`` in the shown tab when it draws it (the exported file's graph, a subgraph body:
        :func:`~workbench.qt.diff_errors.bar_canvas`), else on the Graph tab, brought forward (:meth:`focus_node`:
        Netron, a diff tab, a tab without the node)."""
        shown = self.tabs.currentWidget()
        model = self.doc.model
        canvas = bar_canvas(shown, name, model is not None and self._tab_models.get(shown) is model)
        if canvas is None:
            self.focus_node(name)
        else:
            canvas.select_nodes([name], center=True)

    @guarded
    def focus_hit(self, name: str) -> None:
        """A row of the Search Hits dock: select and centre ``name`` on the graph that search ran on."""
        index = self.tabs.index_of_canvas(self._search_canvas)
        if index < 0:
            self.set_status(f"The tab that search ran on is closed; search again to find {name}.")
            return
        self.tabs.setCurrentIndex(index)
        self._search_canvas.select_nodes([name], center=True)

    @guarded
    def color_by_sqnr(self) -> None:
        """View > Colour by SQNR (the Graph tab), or the Errors dock's button: the model's graph, brought
        forward, coloured by the per-unit SQNR."""
        errors = self._canvas_errors()
        if not errors:
            self.set_status(f"No SQNR for an already-quantized file: {QUANTIZED_FIGURES_HINT}"
                            if self.doc.quant_summary is not None else no_figures_status(self.doc, "SQNR")
                            or "No SQNR yet: calibrate first (F5).")
            return
        self._show_main_graph()  # the figures are of the model's graph
        self.canvas.set_node_values(errors=errors, error_label=self._sqnr_label(), error_notes=self._sqnr_notes())
        self.color_mode.setCurrentIndex(COLOR_MODES.index("error"))

    @guarded
    def color_by_local(self) -> None:
        """Colour box "own noise", or the Errors dock's button while its bars rank by own noise: the model's
        graph, brought forward, coloured by each unit's local SQNR (the noise it adds itself)."""
        local = canvas_local(self.doc.local, INF_SQNR_DB, self._plan_units())
        if not local:
            self.set_status(f"No local SQNR for an already-quantized file: {QUANTIZED_FIGURES_HINT}"
                            if self.doc.quant_summary is not None else no_figures_status(self.doc, "local SQNR")
                            or "No local SQNR yet: calibrate first (F5).")
            if self.color_mode.currentText() == "own noise":
                self.color_mode.setCurrentText("op")
            return
        self._show_main_graph()
        self.canvas.set_node_values(errors=local, error_label=self._local_label(), error_notes=self._local_notes())
        self.color_mode.setCurrentIndex(COLOR_MODES.index("own noise"))
        self.canvas.set_color_mode("error")  # the entry may be chosen already (its change set these values)

    def _plan_units(self) -> dict:
        """The current plan's units (name -> NodeUnit), {} without a plan: the canvas's SQNR, own-noise and
        sensitivity colours take every node of a unit."""
        return self.doc.plan.units if self.doc.plan is not None else {}

    def _colour_as_ranked(self) -> None:
        """The Errors dock's colour button: the canvas by the figure its bars rank by."""
        self.color_by_local() if self.errors.shown_rank() == "local" else self.color_by_sqnr()

    def _sqnr_notes(self) -> list[str]:
        """The SQNR colours' legend notes, naming this model's own nodes quantized only as another unit's input
        (:func:`~workbench.qt.error_rank.sqnr_notes`; it named a SiLU's Sigmoid on digits_cnn, which has none)."""
        return sqnr_notes(self._input_only_nodes())

    def _local_notes(self) -> list[str]:
        """The own-noise colours' legend notes, as :meth:`_sqnr_notes`."""
        return local_notes(self._input_only_nodes())

    def _input_only_nodes(self) -> list[tuple[str, str, str, str]]:
        """:func:`~workbench.qt.error_rank.input_only_nodes` of the open model under the current plan ([] without
        a plan, or for a file quantized already)."""
        if self.doc.plan is None or self.doc.model is None or self.doc.quant_summary is not None:
            return []
        return input_only_nodes(self.doc.model.graph, self.doc.plan)

    def _local_label(self) -> str:
        return f"{LOCAL_LABEL}, out of date: an earlier recipe or data (F5 measures again)" \
            if self._results_stale() else LOCAL_LABEL

    def _canvas_errors(self) -> dict[str, float]:
        """Node -> SQNR for the canvas colours (:func:`~workbench.qt.error_rank.canvas_sqnr`: bit-exact at
        100 dB, all noise at -100 dB, every node of a unit at the unit's figure)."""
        return canvas_sqnr(self.doc.errors, INF_SQNR_DB, self._plan_units())

    @guarded
    def _on_color_mode(self, _text: str) -> None:
        mode = COLOR_MODES[self.color_mode.currentIndex()]
        if mode == "own noise" and not self.canvas.error_label().startswith(LOCAL_LABEL):
            return self.color_by_local()  # sets the values, then this entry again
        if mode == "error" and self.canvas.error_label().startswith(LOCAL_LABEL):  # back to the accumulated SQNR
            self.canvas.set_node_values(errors=self._canvas_errors(), error_label=self._sqnr_label(),
                                        error_notes=self._sqnr_notes())
        self.canvas.set_color_mode(canvas_mode(mode))

    def _name_error_colours(self) -> None:
        """The colour box's "error" entry names what those colours show: "sensitivity" while the sweep's
        figure colours the graph (the box read "error" under a sensitivity legend), else "error" (SQNR)."""
        name = "sensitivity" if self.canvas.error_label().startswith("Sensitivity") else "error"
        self.color_mode.setItemText(COLOR_MODES.index("error"), name)

    @guarded
    def _on_recipe_changed(self) -> None:
        units = self.doc.plan.units if self.doc.plan is not None else {}
        self.sensitivity.stale = not self.doc.sensitivity_current
        self.sensitivity.set_float({n for n, u in units.items() if u.excluded})
        self._mark_stale_sweep()
        self._update_actions()
        self.canvas.set_node_values(dtypes=self.doc.node_dtypes())
        self.canvas.set_badges(self.doc.issue_badges())
        # a dashed outline, any colour mode; none on a file quantized already (its plan is a preset's over the
        # file: nudenet_320n's export showed 78 nodes it runs as integer kernels as "kept float")
        self.canvas.set_float_nodes(() if self.doc.quant_summary is not None
                                    else (n for n, u in units.items() if u.excluded))
        if self.quantized_shelf.swap():  # the results kept for this recipe, else these marked out of date
            self.set_status(nothing_quantized_status(self.doc)
                            or f"Shown again: this recipe's {count(len(self.doc.errors), 'node unit')} analysed.")
        else:
            self._mark_stale_results()
        self._offer_quantized()
        self._mark_stale_failure()
        self._redraw_histogram()
        self._update_title()

    def _offer_quantized(self) -> None:
        """The status bar's "Show the quantized model's errors" link, where the Errors panel has the button."""
        self.show_quantized_link.setVisible(can_show_quantized(self.doc) and not self.runs.busy)

    def _mark_stale_failure(self) -> None:
        """A failed calibration's line in the Calibration panel was about an earlier recipe: say so
        (it stayed after the undo that fixed the recipe)."""
        status = self.calibration.status
        if not self.runs.busy and status.text().startswith("Calibrate failed:") and STALE_FAILURE not in status.text():
            status.setText(f"{status.text()} {STALE_FAILURE}")

    def _results_stale(self) -> bool:
        """True when the per-unit figures shown were measured with another recipe, data or sample count."""
        return bool(self.doc.errors) and bool(self.doc.result_recipe) and not self.doc.results_current

    def _sqnr_label(self) -> str:
        return "SQNR (dB), out of date: an earlier recipe or data (F5 measures again)" if self._results_stale() \
            else "SQNR (dB)"

    def _mark_stale_results(self) -> None:
        self.errors.set_stale(self._results_stale())
        if self.canvas.error_label().startswith("SQNR"):
            self.canvas.set_node_values(error_label=self._sqnr_label(), error_notes=self._sqnr_notes())
        elif self.canvas.error_label().startswith(LOCAL_LABEL):
            self.canvas.set_node_values(error_label=self._local_label(), error_notes=self._local_notes())

    def _on_results(self) -> None:
        # the plots and the canvas update on later event-loop turns (each with its own paint), so
        # adopting a big result never holds the loop for long
        QTimer.singleShot(0, self._show_error_rows)

    @guarded
    def _show_error_rows(self) -> None:
        self.errors.set_split(self.doc.split)
        self.errors.set_outputs(self.doc.outputs)
        self.sensitivity.set_errors_outputs(self.doc.outputs)  # why its headline differs from these
        self.errors.set_weights(self.doc.weights)
        self.errors.set_local(self.doc.local)
        self.errors.set_empty_note(nothing_quantized_text(self.doc), offer=can_show_quantized(self.doc))
        self.errors.set_rows_note(self.quantized_shelf.note())
        self.errors.set_rows(self.doc.errors)
        self._errors_follow_selection()  # a node selected before the results: its unit's bar
        self._offer_quantized()
        self.errors.set_stale(self._results_stale())
        self._redraw_histogram()  # the shown one with these results' clip range (or why it has none)
        if len(self.canvas.selected_nodes()) == 1:  # its clip range and dtype come from these results
            self._hist_timer.start()
        QTimer.singleShot(20, self._color_errors)

    @guarded
    def _color_errors(self) -> None:
        if self.doc.errors and self.color_mode.currentText() == "own noise":  # the new results' own noise
            self.canvas.set_node_values(errors=canvas_local(self.doc.local, INF_SQNR_DB, self._plan_units()),
                                        error_label=self._local_label(), error_notes=self._local_notes())
        elif self.doc.errors:  # SQNR values with their own title (a sweep's title stayed over them)
            self.canvas.set_node_values(errors=self._canvas_errors(), error_label=self._sqnr_label(),
                                        error_notes=self._sqnr_notes())

    def sync_data_spec(self) -> None:
        """Take the Calibration and Evaluate panels' settings into the document (before a job or a save: a
        path typed without Enter counts)."""
        self._on_spec_changed()
        self._on_eval_changed()

    @guarded
    def _on_spec_changed(self) -> None:
        """The Calibration panel changed: one undoable edit of the document's settings (while a model
        opens, the state it opens with)."""
        panel = self.calibration
        before = self.doc.settings  # the Evaluate panel's settings are not this panel's: they stay
        after = before._replace(data=panel.data_spec(), samples=panel.sample_count(),
                                analysis_samples=panel.analysis_count(), choose_recipe=panel.choose_recipe())
        if after == before:
            return
        if self.doc.model is None or self.doc.opening:
            self._show_settings(after, panels=False)
            return
        text, merge = describe_settings_edit(before, after)
        self.doc.undo_stack.push(SettingsCommand(self._show_settings, before, after, text, merge))

    def _show_settings(self, settings: Settings, panels: bool = True) -> None:
        """Put ``settings`` in the document, and in the Calibration panel when ``panels`` (opening a project,
        undo and redo; not when the panel made the change)."""
        if panels:
            self.calibration.set_data_spec(settings.data, settings.samples)
            self.calibration.set_analysis_samples(settings.analysis_samples)
            self.calibration.set_choose_recipe(settings.choose_recipe)
            if settings.evaluation != self.doc.evaluation:
                self._show_evaluation(settings.evaluation)
        self.doc.set_settings(settings)
        self.runs.analysis_samples = settings.analysis_samples or ANALYSIS_SAMPLES

    def _eval_state(self) -> dict:
        """The Evaluate panel's eval data, metric and samples as a project holds them."""
        panel = self.evaluate_panel.settings
        return {"data": panel.data.text().strip(), "metric": panel.metric_spec(), "samples": panel.samples.value() or None}

    @guarded
    def _on_eval_changed(self) -> None:
        """The Evaluate panel's settings changed: an undoable edit (while a model opens, its defaults for it).
        Unedited, the document keeps the value they were shown from; consecutive steps of Samples merge."""
        if self._showing_eval:
            return
        state = self._eval_state()
        if self.doc.model is None or self.doc.opening:
            self._eval_shown = self._eval_last = state
            self._eval_original = self.doc.evaluation
            return
        evaluation = self._eval_original if state == self._eval_shown else state
        only_samples = {k for k in state if state[k] != self._eval_last.get(k)} == {"samples"}
        self._eval_last = state
        before = self.doc.settings
        after = before._replace(evaluation=evaluation)
        if after == before:
            return
        text, merge = ("Change eval samples", "evaluation.samples") if only_samples else ("Change evaluation settings", "")
        self.doc.undo_stack.push(SettingsCommand(self._show_settings, before, after, text, merge))

    def _show_evaluation(self, evaluation: dict | None) -> None:
        """Show ``evaluation`` in the Evaluate panel (None: its defaults for the model); not an edit."""
        panel = self.evaluate_panel.settings
        self._showing_eval = True
        try:
            if evaluation is None:
                panel.reset(self.doc.model_path)
            else:
                panel.data.setText(evaluation.get("data") or "")
                panel.set_metric(evaluation.get("metric") or NO_METRIC)
                panel.samples.setValue(int(evaluation.get("samples") or 0))
        finally:
            self._showing_eval = False
        self._eval_shown = self._eval_last = self._eval_state()
        self._eval_original = evaluation

    def _reset_settings(self) -> None:
        """A new model: the analysis sample count is the default until a project says otherwise."""
        self.calibration.set_analysis_samples(None)
        self.calibration.set_choose_recipe(True)
        self.doc.analysis_samples = None
        self.doc.choose_recipe = True
        self.runs.analysis_samples = ANALYSIS_SAMPLES

    @guarded
    def _request_histogram(self) -> None:
        """The histograms of the one node selected in the shown tab (the graph; in a diff tab's float pane or the
        exported file, the node unit the Errors dock outlines: the open model's node names; none in a subgraph tab or
        Netron), or why there are none."""
        view = self._shown_view()
        names = view.selected if view.scope is None else []
        if names and self.tabs.currentWidget() is not self.canvas and self.errors.selected:
            names = [self.errors.selected]  # a diff pane's Conv and the BatchNormalization folded into it: their unit
        self._hist_names = list(view.selected)
        self._hist_failed = False
        if self.doc.model is None:
            return
        if len(names) != 1 or not self.doc.data:  # say why the plot is empty instead of leaving it blank
            self.errors.clear_histogram("Choose calibration data to see histograms." if not self.doc.data else
                                        "No node selected: click a node or a bar to see the histogram of its "
                                        "output." if not names else
                                        f"{count(len(names), 'node')} selected: select one node to see the "
                                        "histogram of its output.", computing=False)
            return
        tensor = self._unit_tensor(names[0])
        if tensor:
            self._hist_unit = (tensor, names[0])  # the histogram's title names the unit and the tensor drawn
            self.errors.clear_histogram(f"Computing the histogram of {tensor}...")
            weight = self._unit_weight(names[0])
            grid = self.doc.weights.get(names[0]) or {}
            self.runs.histogram(tensor, inputs=self._unit_inputs(names[0]), weight=weight,
                                weight_qparams=grid.get("qparams") if weight and self.doc.results_current else None,
                                channel=grid.get("worst_channel"))

    def _unit_tensor(self, node: str) -> str | None:
        for row in self.doc.errors:
            if row.node == node and row.tensor:
                return row.tensor
        plan = self.doc.plan
        unit = plan.units.get(node) if plan is not None else None
        if unit is not None and unit.results:
            return unit.results[0]
        for n in self.doc.model.graph.node:
            if n.name == node and n.output:
                return n.output[0]
        return None

    def _unit_inputs(self, node: str) -> list[str]:
        """The activation inputs of ``node`` (its non-constant, non-empty inputs), in order: the unit reads them."""
        consts = {t.name for t in self.doc.model.graph.initializer}
        n = next((n for n in self.doc.model.graph.node if n.name == node), None)
        return [x for x in dict.fromkeys(n.input) if x and x not in consts] if n is not None else []

    def _unit_weight(self, node: str) -> str | None:
        """The weight initializer of ``node``'s unit (the plan's, else its figures' from the last run), or None."""
        plan = self.doc.plan
        unit = plan.units.get(node) if plan is not None else None
        if unit is not None and unit.weight:
            return unit.weight
        return (self.doc.weights.get(node) or {}).get("weight")

    def _show_unit_parts(self, hist: dict, unit: str, note: str, ranged: str) -> None:
        """The Input and Weight tabs of the histogram job's result ``hist`` (its ``inputs`` and ``weight``), with the
        clip ranges of the shown results where they are current (``note``: which rows were drawn; ``ranged``: and
        which rows the clip range is of)."""
        current = self.doc.results_current
        inputs = []
        for h in hist.get("inputs") or []:
            h = {**h, "rows": hist.get("rows")}
            qp_json = self.doc.qparams.get(h.get("tensor", "")) if current else None
            if qp_json:
                inputs.append((h, QParams.from_json(qp_json), ranged))
            else:
                why = STALE_CLIP_NOTE if self.doc.qparams and not current else self._no_clip(h.get("tensor", ""))
                inputs.append((h, None, "; ".join(n for n in (note, why) if n)))
        self.errors.set_unit_inputs(unit, inputs)
        weight = hist.get("weight")
        grid = (self.doc.weights.get(unit) or {}).get("qparams") if current else None
        if weight is not None and "missing" not in weight and not grid:
            why = (STALE_CLIP_NOTE if self.doc.weights and not current else
                   "no grid drawn: calibrate (Run > Calibrate, F5) to see the grid it is written with"
                   if not self.doc.weights and not nothing_quantized(self.doc)
                   else "no grid drawn: this weight is not quantized under these results")
            self.errors.set_unit_weight(unit, weight, None, why)
        else:
            self.errors.set_unit_weight(unit, weight, QParams.from_json(grid) if grid else None)

    @guarded
    def _on_histogram(self, hist: dict) -> None:
        """Draw a histogram with the clip range of the shown results, when they are of the current recipe and
        calibration data (else without it, saying why)."""
        tensor = hist.get("tensor", "")
        unit = getattr(self, "_hist_unit", ("", ""))
        if unit[0] == tensor and not hist.get("unit"):
            hist = {**hist, "unit": unit[1]}
        qp_json = self.doc.qparams.get(tensor)
        data_rows = hist.get("data_rows")  # the rows the calibration uses: the Samples setting caps them
        if data_rows and self.doc.samples:
            data_rows = min(data_rows, self.doc.samples)
        drawn = rows_note(None, hist.get("rows"), data_rows)  # the counts of the first few rows, of how many
        self._show_unit_parts(hist, unit[1] if unit[0] == tensor else hist.get("unit", ""), drawn,
                              rows_note(self.doc.calibration, hist.get("rows"), data_rows))
        if qp_json and not self.doc.results_current:
            self.errors.set_histogram(hist, None, "; ".join(n for n in (drawn, STALE_CLIP_NOTE) if n))
        elif qp_json:  # the range is of every calibration row, the counts of the first few
            self.errors.set_histogram(hist, QParams.from_json(qp_json),
                                      rows_note(self.doc.calibration, hist.get("rows"), data_rows))
        else:
            self.errors.set_histogram(hist, None, "; ".join(n for n in (drawn, self._no_clip(tensor)) if n))

    def _no_clip(self, tensor: str) -> str:
        """Why ``tensor`` has no clip range in the results shown (:func:`no_clip_reason`): a calibration that
        quantized nothing counts as one, and a unit the latency check kept float is said to be its."""
        return no_clip_reason(self.doc.plan, self.doc.model.graph, tensor,
                              bool(self.doc.qparams) or nothing_quantized(self.doc), latency_kept_units(self.doc))

    def _redraw_histogram(self) -> None:
        """The recipe changed: the shown histogram again, its clip range drawn only while it is current; a failed
        one is asked for again (its error line stayed after the undo of the edit that caused it)."""
        if self.errors.hist is not None:
            self._on_histogram(self.errors.hist)
        elif self._hist_failed:
            self._hist_timer.start()

    def _on_histogram_failed(self, tensor: str, why: str) -> None:
        self.errors.clear_histogram(f"No histogram of {tensor}: {why}", computing=False)
        self._hist_failed = True  # asked for again after the next edit or undo (:meth:`_redraw_histogram`)

    def focus_search(self) -> None:
        self.search.setFocus()
        self.search.selectAll()

    # ------------------------------------------------------------------ misc
    def _undo_redo(self, redo: bool) -> None:
        """Edit > Undo / Redo: the stack's step, then the status line says which edit, so it no longer reports
        the undone edit as done ("Kept 3 units in float ..." stayed after Ctrl+Z), unless the step said what
        it brought back itself ("Shown again: ...", "Done, but nothing is quantized ...")."""
        stack, serial = self.doc.undo_stack, self._status_serial
        if redo:
            stack.redo()
        else:
            stack.undo()
        self._failure_line_after_step(redo)
        self._done_line_after_step()
        if self._status_serial != serial:
            return
        if redo:
            self.set_status(f"Redone: {stack.undoText()} (Ctrl+Z undoes it).")
        else:
            self.set_status(f"Undone: {stack.redoText()} (Ctrl+Y redoes it).")

    def _failure_line_after_step(self, redo: bool) -> None:
        """After Undo / Redo, a failed calibration's line in the Calibration panel follows the edit state it
        failed with (recorded in ``_on_run_failed``): below it (the failing edit undone) it says so ("Calibrate
        failed: wrongnames.npz has no array ..." stayed after the data was undone), and the status line's copy
        goes too; back at it (Redo) it is the failure again; above it (later edits) it keeps its stale mark."""
        at, message = getattr(self, "_failed_at", None) or (None, "")
        status = self.calibration.status
        shown = status.text()
        if at is None or self.runs.busy or not (shown.startswith("Calibrate failed:") or shown.startswith(UNDONE_FAILURE)):
            return
        stack = self.doc.undo_stack
        if stack.index() < at:
            undone = stack.text(at - 1)
            status.setText(f"{UNDONE_FAILURE} ({undone}); F5 calibrates again.")
            if not redo and self.status_label.text().startswith("Calibrate failed:"):
                self.set_status(f"Undone: {stack.redoText()} (Ctrl+Y redoes it).")
        elif stack.index() == at:
            status.setText(message)
        elif not shown.startswith("Calibrate failed:"):
            status.setText(f"{message} {STALE_FAILURE}")

    def _done_line_after_step(self) -> None:
        """After Undo / Redo, the last calibration's line in the Calibration panel follows the edit state it
        finished at (:func:`~workbench.qt.done_line.done_line_after_step`): its recipe choice undone, the
        panel no longer says the choice is in the recipe."""
        at, line = getattr(self, "_done_at", None) or (None, "")
        shown = self.calibration.status.text()
        if at is None or self.runs.busy or not (shown == line or shown.startswith(UNDONE_DONE)):
            return
        stack = self.doc.undo_stack
        text = done_line_after_step([stack.text(i) for i in range(stack.count())], stack.index(), at, line)
        if text is not None:
            self.calibration.status.setText(text)

    def set_status(self, text: str, full: str | None = None) -> None:
        """Show ``text`` in the status line; its tooltip holds the whole text (``full`` when given: ``text`` is
        its short form) where the bar cuts it off."""
        self._status_serial += 1
        self.status_label.setText(text)
        self.status_label.setToolTip(full or text)

    def _update_actions(self, *_args) -> None:
        has_model, busy = self.doc.model is not None, self.runs.busy or self._open_job is not None
        quantized = self.doc.quant_summary is not None
        shown = self.tabs.currentWidget()
        actions.update_enabled(self._actions, has_model=has_model, busy=busy, opening=self._open_job is not None,
                               suggestion=self.sensitivity.can_apply(), quantized=quantized,
                               graph=self.tabs.shown_canvas() is not None, main_graph=shown is self.canvas,
                               qdq_graph=shown is self.canvas or isinstance(shown, QuantModelTab),
                               has_errors=has_model and bool(self.doc.errors),
                               has_sensitivity=has_model and self.sensitivity.result is not None,
                               has_export=self._last_export is not None)
        if isinstance(shown, DiffTab):  # Fit graph and the zooms act on both panes
            for name in DIFF_VIEW_ACTIONS:
                self._actions[name].setEnabled(True)
        for panel in (self.sensitivity, self.evaluate_panel, self.autotune_panel):
            panel.run_button.setEnabled(has_model and not busy and not quantized)
        # the panel's button works only where Run > Calibrate does (a float model open, no job)
        self.calibration.start.setEnabled(has_model and not busy and not quantized)
        if not has_model:
            self.calibration.start.setToolTip("Disabled: open a model first (File > Open, Ctrl+O).")
        self.errors.compare_button.setEnabled(has_model and quantized and not busy)
        self.errors.show_quantized_button.setEnabled(not busy)
        self._offer_quantized()

    def _update_title(self, *_args) -> None:
        self.setWindowTitle(window_title(self.doc.project_path or self.doc.model_path, self.doc.modified))

    def fill_recent(self) -> None:
        """File > Open Recent: the recent files, most recent first, the first nine numbered with their key
        ("&1 PATH": Alt+F, R, 1 opens the latest; an '&' of a path doubled, so it is drawn and not read as the
        mnemonic marker: "R&D" showed as "RD"), then :data:`CLEAR_RECENT`. An entry's icon text is its path
        without the number."""
        self.recent_menu.clear()
        files = settings.recent_files(existing=False)
        for number, f in enumerate(files, start=1):
            text = recent_entry_text(f)
            key = f"&{number}" if number <= RECENT_NUMBERED else str(number)
            act = self.recent_menu.addAction(f"{key} {text.replace('&', '&&')}")
            act.setIconText(text)
            if text != f:
                act.setStatusTip(RECENT_MISSING_TIP)
            act.triggered.connect(lambda _c=False, p=f: self.open_recent(p))
        if not files:
            self.recent_menu.addAction("(none)").setEnabled(False)
        self.recent_menu.addSeparator()
        clear = self.recent_menu.addAction(CLEAR_RECENT)
        clear.setEnabled(bool(files))
        clear.triggered.connect(settings.clear_recent_files)

    @guarded
    def open_recent(self, path: str) -> None:
        """Open ``path``, chosen in File > Open Recent or in the welcome page's Recent list (asking to save edits
        first); a file that no longer exists is removed from the list (both show it no more) and said so, before
        any prompt."""
        if not Path(path).exists():
            settings.forget_recent_file(path)
            self.welcome.refresh()
            self._say_not_opened(Path(path), gone_recent_line(Path(path)))
            # the menu and the welcome page list the same files: "File > Open Recent" misnamed a choice on the page
            raise WorkbenchError(f"{path} no longer exists (moved, renamed or deleted); it was removed from the "
                                 "recent files.", hint="Open it where it is now with File > Open (Ctrl+O).")
        self.open_path(path)

    @guarded
    def choose_executor(self) -> str | None:
        """Ask where the sensitivity sweep runs (kept in the settings): in the app, on a private local
        Ray instance, or on a Ray cluster at an address. Returns the new choice, or None if cancelled."""
        current = settings.executor()
        spec = executor_dialog.ask_executor(self, current)
        if spec is None:
            return None
        try:
            if spec not in ("threads", "inline"):
                if not spec.startswith("ray"):
                    raise WorkbenchError(f"Unknown executor {spec!r}.",
                                         hint="Use threads, inline, ray or ray:HOST:PORT.")
                api.make_executor(spec)  # Ray installed? a valid form?
        except WorkbenchError as exc:
            show_error(self, "Sweep executor", exc, to_status=True)
            return None
        settings.set_executor(spec)
        self.statusBar().showMessage(f"Sensitivity sweeps run: {spec}", 5000)
        return spec

    def show_about(self) -> None:
        QMessageBox.about(self, "About Workbench", about_text())

    @guarded
    def show_shortcuts(self) -> help_menu.ShortcutsDialog:
        """Help > Keyboard Shortcuts (Ctrl+/): every action with a shortcut, read from the actions now."""
        dialog = help_menu.ShortcutsDialog(self)
        dialog.finished.connect(dialog.deleteLater)
        self.shortcuts_dialog = dialog
        dialog.open()
        return dialog

    @guarded
    def open_documentation(self) -> None:
        """Help > Documentation (F1): the README beside the package, else the package's project URL."""
        url = help_menu.documentation_url()
        if url is None:
            raise WorkbenchError(f"No documentation found: {help_menu.readme_path()} does not exist and the installed "
                                 "package names no project URL.", hint="Read the README of the Workbench sources.")
        if not QDesktopServices.openUrl(url):
            raise WorkbenchError(f"Could not open {url.toDisplayString()}: no program opens it.",
                                 hint="Open that file or address in a browser.")
        self.set_status(f"Opened {url.toDisplayString()}.")

    # ------------------------------------------------------------------ drag and drop, close
    def dragEnterEvent(self, event) -> None:
        if _dropped_path(event) is not None:
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        path = _dropped_path(event)
        if path is not None:
            event.acceptProposedAction()
            self.open_path(path)

    # ------------------------------------------------------------------ tabs: subgraphs and Netron
    @property
    def netron(self) -> NetronView | None:
        """The Netron tab's view, when open."""
        return self.tabs.netron

    def _close_tab(self, index: int) -> None:
        self.tabs.close_tab(index)

    @guarded
    def open_subgraphs(self, name: str) -> list[str]:
        """Open each body of an If/Loop/Scan node in its own tab; returns the tab titles."""
        self._need_model()
        titles = self.tabs.open_bodies(self.doc.model, name)
        for index in range(self.tabs.count() - len(titles), self.tabs.count()):
            self._follow_tab(self.tabs.widget(index), self.tabs.widget(index))
        if titles:
            self.set_status(f"Opened {count(len(titles), 'subgraph')} of {name}.")
        return titles

    @guarded
    def open_in_netron(self) -> str:
        """Show the last exported model, or the open one, in a Netron tab; returns the local URL."""
        self._need_model()
        target = self._last_export if self._last_export and self._last_export.exists() else self.doc.model_path
        url = self.tabs.show_in_netron(target)
        self.set_status(f"Netron shows {Path(target).name} at {url}")
        return url

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        if self.isVisible():  # a smaller window: the columns and rows of docks keep their share, the graph its room
            docks.keep_column_shares(self, self.docks, event.oldSize().width())  # first: the rows' wrapped lines
            docks.keep_row_shares(self, self.docks, event.oldSize().height())  # then need no more height than so

    def _restore_layout(self) -> None:
        """Window geometry and dock layout from the last session (QSettings)."""
        geometry, state = settings.window_state()
        if geometry:
            self.restoreGeometry(geometry)
        if state:
            self.restoreState(state)
            # no empty hit list in front of the Inspector; with no result yet, empty result rows one line high
            docks.settle_restored(self, self.docks, empty=lambda: not self.doc.errors)

    def set_theme(self, mode: str) -> None:
        """Switch theme (system | light | dark) and remember the choice."""
        apply_theme(QApplication.instance(), mode)
        settings.set_theme(mode)
        for act in self.theme_actions:
            act.setChecked(act.data() == mode)

    def apply_view_theme(self, shown: str) -> None:
        """Canvas (every graph tab) and plots (every dock) in the colours of theme ``shown``."""
        colors = colors_for(shown)
        for canvas in self.findChildren(GraphCanvas):
            canvas.set_theme_colors(colors.canvas_background, colors.canvas_edge)
        for plot in self.findChildren(pg.GraphicsView):  # PlotWidgets and the autotune's GraphicsLayoutWidget
            style_plot(plot, colors)
        restyle_muted(self, colors)
        for box in self.findChildren(NodeBox):  # the Inspector's and the exported tabs' node facts
            box.restyle()
        for banner in self.findChildren(QuantBanner):  # the open model's and every exported-model tab's
            banner.set_theme(shown)
        self._on_problem_count(*self._problem_counts)  # the link in the new palette's link colour

    def may_stop_job_to_close(self) -> bool:
        """True when no main job runs, or the user chose Stop and Close in :func:`ask_stop_job` (the job is
        stopped by the close itself); False when the user keeps working (Cancel). The box names the job and
        how far it got (its overall percentage, or its phase)."""
        job = self.runs.job
        if job is None or not job.running:  # stopped already (its end not yet handled): nothing to lose
            return True
        overall = self.runs.overall
        phase = phase_of(self._last_progress[2]) if self._last_progress is not None else ""
        progress = f"{round(overall.fraction * 100)}% done" if overall.known and overall.fraction > 0 \
            else (phase.lower() if phase else "")
        return ask_stop_job(self, job.title, progress, writes=self.runs.kind in WRITERS) == STOP

    def closeEvent(self, event) -> None:
        # a running job first (keep working leaves everything as it is), then the unsaved edits
        if not self.may_stop_job_to_close() or not self.keep_or_drop_changes("quitting"):
            event.ignore()
            return
        settings.save_window_state(bytes(self.saveGeometry()), bytes(self.saveState()))
        self.autosaver.stop()
        self.autosaver.discard()  # a clean quit: the edits were saved or dropped
        self._hist_timer.stop()  # a pending histogram request must not start a job after the close
        self.tabs.shutdown()
        self.runs.shutdown()
        self.cost.shutdown()
        if self._open_job is not None:
            self._open_job.blockSignals(True)  # loaded after the close: not shown, its autosave not offered
            self._open_job.wait()
        self.canvas.shutdown()
        self._collector.stop()  # no job of this window runs any more
        super().closeEvent(event)


def missing_data_note(data: dict | None) -> str:
    """The note an opened project's status ends with when the calibration data file or folder it names
    (``data["path"]``, absolute) is not there: it said "recipe and data restored" and F5 failed with "no such data
    file"; "" when it is there or the project names none."""
    path = (data or {}).get("path")
    if not isinstance(path, str) or Path(path).exists():
        return ""
    return (f"Its calibration data {path} was not found (moved or deleted): choose it in the Calibration panel "
            "(Browse...) before calibrating (F5).")


def _dropped_path(event) -> str | None:
    mime = event.mimeData()
    if not mime.hasUrls():
        return None
    for url in mime.urls():
        local = url.toLocalFile()
        if local.lower().endswith((".onnx", PROJECT_SUFFIX, *data_open.DATA_SUFFIXES)):  # data: the model's
            return local
    return None

