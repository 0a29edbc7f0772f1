"""The main window's actions, menus and toolbar, declared as tables apart from the window.

Every action is one :class:`ActionSpec` row of :data:`ACTIONS`: its text, shortcuts, status tip,
the window method it calls (a dotted path from the window: ``"runs.cancel"``, ``"canvas.fit"``)
and the group that decides when it is enabled (:data:`ENABLED_WHEN`). :data:`MENUS` and
:data:`TOOLBAR` list action names in order; ``"-"`` is a separator and ``"@..."`` a place the
window fills itself (recent files, the dock toggles, the theme choice, the search box). Adding a
command is one row here plus the method on the window.

The window gets each action as the attribute ``act_<name>`` (``window.act_calibrate``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce
from typing import Any

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QComboBox, QLabel, QLineEdit, QMainWindow

from workbench.qt import toolbar_tips

K = QKeySequence.StandardKey

#: enabled-state group -> predicate over the window's state (see :func:`update_enabled`)
ENABLED_WHEN: dict[str, Callable[[dict[str, bool]], bool]] = {
    "always": lambda s: True,
    "model": lambda s: s["has_model"] and not s["busy"],  # a model is open and no job runs
    # a float model is open and no job runs (an already-quantized model is not calibrated again)
    "float_model": lambda s: s["has_model"] and not s["busy"] and not s.get("quantized", False),
    # the project can be saved: a float model is open and no model is being opened or compared; a running
    # calibration, analysis or export does not stop it (the project holds the results it has; new ones mark it
    # modified again when they arrive)
    "project": lambda s: s["has_model"] and not s.get("opening", False) and not s.get("quantized", False),
    "busy": lambda s: s["busy"],  # a job runs (Cancel)
    "suggestion": lambda s: s["suggestion"],  # a sweep suggestion not yet applied
    "undo": lambda s: True,  # undo / redo: the undo stack enables them itself
    # a model is open (the welcome page has no graph, legend or model to show in Netron)
    "open_model": lambda s: s["has_model"],
    # the shown tab can be closed: any but the model's graph (an exported file, a subgraph body, a diff, Netron)
    "closable_tab": lambda s: s["has_model"] and not s.get("main_graph", True),
    # a model is open and the shown tab has a graph the View / Edit actions act on (not a diff tab, not Netron)
    "graph": lambda s: s["has_model"] and s.get("graph", True),
    "model_graph": lambda s: s["has_model"] and not s["busy"] and s.get("graph", True),
    # the shown tab is the open model's graph (its SQNR and sensitivity colours)
    "main_graph": lambda s: s.get("main_graph", True),
    # the shown tab draws Q/DQ pairs (the model's graph or an exported file's), no job runs
    "qdq_graph": lambda s: s["has_model"] and not s["busy"] and s.get("qdq_graph", True),
    # the per-unit SQNR of a calibration is shown (on the model's graph: Colour by SQNR)
    "sqnr_graph": lambda s: s.get("main_graph", True) and s.get("has_errors", False),
    "sqnr_data": lambda s: s["has_model"] and not s["busy"] and s.get("has_errors", False),
    # a sensitivity sweep's figures are shown (on the model's graph)
    "sensitivity_graph": lambda s: s.get("main_graph", True) and s.get("has_sensitivity", False),
    # a model was exported since this one opened
    "exported": lambda s: s["has_model"] and not s["busy"] and s.get("has_export", False),
}

_NEEDS_SQNR = "Calibrate first (Run > Calibrate, F5): the per-unit SQNR is measured there."
_NEEDS_SWEEP = "Run the sensitivity sweep first (Run > Sensitivity Sweep, F7)."
_NEEDS_EXPORT = "Export the model first (File > Export, Ctrl+E)."
_QUANTIZED = ("An already-quantized file has no per-unit figures: compare it with its float model "
              "(View > Compare Float vs Quantized, Ctrl+Shift+D).")
_NO_MODEL = "Open a model first (File > Open, Ctrl+O)."
_BUSY = "Wait for the running job, or cancel it (Esc)."
_NOT_GRAPH = "Show the Graph tab first: the figures are of the model's graph."
#: the groups whose actions say, while off, what turns them on (:func:`why_disabled`)
_SAYS_WHY = {"sqnr_graph": _NEEDS_SQNR, "sqnr_data": _NEEDS_SQNR, "sensitivity_graph": _NEEDS_SWEEP,
             "exported": _NEEDS_EXPORT}


def why_disabled(group: str, state: dict[str, bool]) -> str:
    """What turns on an action of ``group`` that :data:`ENABLED_WHEN` keeps off in ``state``, one
    sentence ("Calibrate first (Run > Calibrate, F5): ..."); "" for the groups that do not say."""
    needs = _SAYS_WHY.get(group)
    if needs is None:
        return ""
    if not state["has_model"]:
        return _NO_MODEL
    if state.get("quantized", False) and group != "exported":
        return _QUANTIZED
    if state["busy"] and group in ("sqnr_data", "exported"):
        return _BUSY
    if group.endswith("_graph") and not state.get("main_graph", True) and \
            state.get("has_errors" if group == "sqnr_graph" else "has_sensitivity", False):
        return _NOT_GRAPH
    return needs


@dataclass(frozen=True)
class ActionSpec:
    """One command of the window."""

    name: str
    text: str
    slot: str  # window method, dotted from the window; "" for undo / redo (the undo stack's own)
    shortcuts: tuple[Any, ...] = ()  # QKeySequence.StandardKey values or strings such as "F5"
    tip: str = ""
    group: str = "always"  # key of ENABLED_WHEN
    args: tuple[Any, ...] = ()  # positional arguments passed to the slot


ACTIONS: tuple[ActionSpec, ...] = (
    # File
    ActionSpec("new_project", "&New Project", "start_new_project", (K.New,),
               "Start over on the open model: default recipe, no data or results (asks to save edits first)",
               group="model"),
    ActionSpec("open", "&Open...", "open_dialog", (K.Open,), "Open an ONNX model or a project"),
    ActionSpec("open_project", "Open Pro&ject...", "open_project_dialog", ("Ctrl+Shift+O",),
               "Open a saved Workbench project (.wbproj): its model, recipe, data and results"),
    ActionSpec("open_example", "Open E&xample", "open_example",
               tip="Open the bundled example: a small digits CNN with its calibration and evaluation data"),
    ActionSpec("save", "&Save Project", "save_project", (K.Save,), group="project"),
    ActionSpec("save_as", "Save Project &As...", "save_project_as", (K.SaveAs,), group="project"),
    ActionSpec("export", "&Export...", "export_dialog", ("Ctrl+E",),
               "Write the quantized model in the project's format (QDQ unless the project says QONNX; the file "
               "type in the dialog picks the other)", group="float_model"),
    ActionSpec("export_qonnx", "Expor&t QONNX...", "export_dialog", (),
               "Write the quantized model as QONNX (Quant / FloatQuant nodes)", group="float_model", args=("qonnx",)),
    ActionSpec("apply_project", "Appl&y Project to Model...", "apply_project_dialog", ("Ctrl+Shift+A",),
               "Re-apply a project's recipe, rules and overrides to the open model (a retrained version)",
               group="model"),
    ActionSpec("export_node_data", "Export &Model Explorer Data...", "export_node_data_dialog", ("Ctrl+Shift+M",),
               "Write the per-unit SQNR and sensitivity as node data for Google's Model Explorer", group="sqnr_data"),
    ActionSpec("export_report", "Export Re&port...", "export_report_dialog", ("Ctrl+Shift+R",),
               "Write a self-contained HTML report (recipe, issues, SQNR, histograms, metric, graph)",
               group="float_model"),
    ActionSpec("export_picture", "Export P&icture...", "export_picture_dialog", ("Ctrl+Shift+P",),
               "Write the current view of the shown graph as PNG or SVG", group="model_graph"),
    ActionSpec("close_tab", "&Close Tab", "tabs.close_shown", ("Ctrl+W", "Ctrl+F4"),
               "Close the shown tab (an exported model, a subgraph, a comparison or Netron; the Graph tab stays)",
               group="closable_tab"),
    ActionSpec("quit", "&Quit", "close", (K.Quit,)),
    # Edit
    ActionSpec("undo", "&Undo", "", ("Ctrl+Z",), group="undo"),
    ActionSpec("redo", "&Redo", "", ("Ctrl+Y", "Ctrl+Shift+Z"), group="undo"),
    ActionSpec("find", "&Find nodes", "focus_search", (K.Find,), group="graph"),
    ActionSpec("find_next", "Find Ne&xt", "step_search", (K.FindNext,), "Show the next search hit", args=(1,),
               group="graph"),
    ActionSpec("find_previous", "Find Pre&vious", "step_search", (K.FindPrevious,), "Show the previous search hit",
               args=(-1,), group="graph"),
    ActionSpec("select_all", "Select &All", "select_all_nodes", (K.SelectAll,),
               "Select every node of the shown graph (the Inspector then edits them together)", group="model_graph"),
    ActionSpec("same_type", "Select all of this &type", "select_same_type", ("Ctrl+T",),
               "Select every node with the op type of the selected node (in the shown graph)", group="model_graph"),
    # View
    ActionSpec("fit", "&Fit graph", "on_shown_canvas", ("Ctrl+0",), group="graph", args=("fit",)),
    # Ctrl+= too: Ctrl++ needs Shift on most layouts, so Ctrl and the '=' key is what is pressed
    ActionSpec("zoom_in", "Zoom &in", "on_shown_canvas", (K.ZoomIn, "Ctrl+="), group="graph", args=("zoom_in",)),
    ActionSpec("zoom_out", "Zoom &out", "on_shown_canvas", (K.ZoomOut,), group="graph", args=("zoom_out",)),
    ActionSpec("expand_all", "E&xpand All Groups", "on_shown_canvas", ("Ctrl+]",),
               "Open every group: all nodes drawn", group="graph", args=("expand_all",)),
    ActionSpec("collapse_all", "&Collapse All Groups", "on_shown_canvas", ("Ctrl+[",),
               "Draw every top-level group as one box", group="graph", args=("collapse_all",)),
    ActionSpec("depth_1", "Open Groups to Depth &1", "on_shown_canvas", ("Alt+1",),
               "Open the top-level groups; their inner groups show as boxes", group="graph",
               args=("expand_to_depth", 1)),
    ActionSpec("depth_2", "Open Groups to Depth &2", "on_shown_canvas", ("Alt+2",), group="graph",
               args=("expand_to_depth", 2)),
    ActionSpec("depth_3", "Open Groups to Depth &3", "on_shown_canvas", ("Alt+3",), group="graph",
               args=("expand_to_depth", 3)),
    ActionSpec("color_sqnr", "Colour by &SQNR", "color_by_sqnr", ("Ctrl+Shift+E",),
               "Colour the model's graph by the per-unit SQNR (the Graph tab)", group="sqnr_graph"),
    ActionSpec("color_sensitivity", "Colour by Sensiti&vity", "color_by_sensitivity", ("Ctrl+Shift+V",),
               "Colour the model's graph by the sweep's chosen figure (the Graph tab)", group="sensitivity_graph"),
    ActionSpec("show_qdq", "Show Q/&DQ as Nodes", "toggle_qdq_nodes", ("Ctrl+Shift+Q",),
               "Draw QuantizeLinear / DequantizeLinear of the shown graph as nodes instead of badges on the edges",
               group="qdq_graph"),
    ActionSpec("legend", "&Legend", "toggle_legend", ("Ctrl+L",), "Show or hide the colour legend on the graph",
               group="open_model"),
    ActionSpec("open_export", "Open Exported &Model", "open_exported", ("Ctrl+Shift+X",),
               "Show the last exported model as it is (dtypes, Q/DQ badges, scales) in a tab", group="exported"),
    ActionSpec("diff", "Compare Float vs &Quantized...", "diff_dialog", ("Ctrl+Shift+D",),
               "Match a quantized file to the open float model; per-edge SQNR on the calibration data",
               group="model"),
    ActionSpec("netron", "Open in &Netron", "open_in_netron", ("Ctrl+Shift+N",),
               "Show the exported model (or the open one) in Netron, served on 127.0.0.1", group="open_model"),
    # Run
    ActionSpec("calibrate", "&Calibrate", "start_calibration", ("F5",),
               "Calibrate all tensors, quantize and measure per-node error", group="float_model"),
    ActionSpec("analyze", "&Analyze", "start_analysis", ("F6",),
               "Re-quantize with cached ranges and measure per-node error", group="float_model"),
    ActionSpec("sensitivity", "&Sensitivity Sweep", "start_sensitivity", ("F7",),
               "Measure each unit alone quantized and alone float, end to end", group="float_model"),
    ActionSpec("apply_suggestion", "Apply Sensitivity Su&ggestion", "apply_suggestion", ("F8",),
               "Keep the units the sweep suggests in float (undoable)", group="suggestion"),
    ActionSpec("choose", "C&hoose Recipe", "start_choice", ("Ctrl+F5",),
               "Keep the preset, or switch to MSE ranges or to compute-only quantization, whichever keeps the "
               "outputs closest to float on held-out calibration rows (undoable; what the CLI does by default)",
               group="float_model"),
    ActionSpec("evaluate", "E&valuate", "evaluation.start_evaluate", ("F9",),
               "Run the float and the quantized model on eval data: task metric and output SQNR side by side",
               group="float_model"),
    ActionSpec("autotune", "Au&totune", "evaluation.start_autotune", ("Shift+F9",),
               "Keep the most sensitive units out of 8 bits until the metric target holds; plots the curve",
               group="float_model"),
    ActionSpec("cancel", "Ca&ncel", "cancel_running", ("Esc",), "Cancel the running job", group="busy"),
    ActionSpec("sweep_executor", "Sweep &Executor...", "choose_executor", (),
               "Run the sensitivity sweep's tasks in the app or on a Ray cluster"),
    # Help
    ActionSpec("documentation", "&Documentation", "open_documentation", ("F1",),
               "Open the README (how to quantize a model, the recipe fields, the CLI)"),
    ActionSpec("shortcuts", "&Keyboard Shortcuts", "show_shortcuts", ("Ctrl+/",),
               "List every command that has a keyboard shortcut"),
    ActionSpec("about", "&About Workbench", "show_about"),
)

#: menu title -> entries: action names, "-" (separator), "@recent", "@docks", "@theme"
MENUS: dict[str, tuple[str, ...]] = {
    "&File": ("new_project", "open", "open_project", "@recent", "open_example", "-", "save", "save_as",
              "apply_project", "-", "export", "export_qonnx", "export_report", "export_node_data", "-",
              "export_picture", "-", "close_tab", "quit"),
    "&Edit": ("undo", "redo", "-", "find", "find_next", "find_previous", "-", "select_all", "same_type"),
    "&View": ("fit", "zoom_in", "zoom_out", "-", "expand_all", "collapse_all", "depth_1", "depth_2", "depth_3", "-",
              "color_sqnr", "color_sensitivity", "show_qdq", "legend", "-", "open_export", "diff", "netron", "-",
              "@docks", "-",
              "@theme"),
    "&Run": ("calibrate", "analyze", "choose", "sensitivity", "apply_suggestion", "-", "evaluate", "autotune", "-",
             "cancel",
             "-", "sweep_executor"),
    "&Help": ("documentation", "shortcuts", "-", "about"),
}

#: toolbar entries: action names, "-", "@search" (the search box), "@colour" (the colour mode)
TOOLBAR: tuple[str, ...] = ("open", "save", "export", "-", "@search", "same_type", "-", "@colour", "-",
                            "calibrate", "cancel", "fit")

_GROUPS = {spec.name: spec.group for spec in ACTIONS}
_TIPS = {spec.name: spec.tip for spec in ACTIONS}
THEMES = ("system", "light", "dark")
#: the colour box's entries: the canvas's modes and "own noise" (the canvas's "error" mode showing each unit's
#: local SQNR, :func:`canvas_mode`)
COLOR_MODES = ("op", "dtype", "error", "own noise")


def canvas_mode(mode: str) -> str:
    """The canvas colour mode (:data:`workbench.qt.canvas.view.COLOR_MODES`) of a colour box entry."""
    return "error" if mode == "own noise" else mode


def _slot(window: Any, dotted: str) -> Callable[..., Any]:
    return reduce(getattr, dotted.split("."), window)


def build_actions(window: QMainWindow, undo_stack) -> dict[str, QAction]:
    """Create every action of :data:`ACTIONS` (attribute ``act_<name>`` on ``window``)."""
    actions: dict[str, QAction] = {}
    for spec in ACTIONS:
        if spec.name == "undo":
            act = undo_stack.createUndoAction(window, spec.text)
        elif spec.name == "redo":
            act = undo_stack.createRedoAction(window, spec.text)
        else:
            act = QAction(spec.text, window)
            slot, args = _slot(window, spec.slot), spec.args
            act.triggered.connect(lambda _checked=False, f=slot, a=args: f(*a))
        if spec.shortcuts:
            act.setShortcuts([QKeySequence(s) for s in spec.shortcuts])
        if spec.tip:
            act.setStatusTip(spec.tip)
        setattr(window, f"act_{spec.name}", act)
        actions[spec.name] = act
    return actions


def build_menus(window: Any, actions: dict[str, QAction], docks: dict, current_theme: str) -> None:
    """The menu bar from :data:`MENUS`; sets ``window.recent_menu`` and ``window.theme_actions``."""
    bar = window.menuBar()
    for title, entries in MENUS.items():
        menu = bar.addMenu(title)
        menu.setToolTipsVisible(True)  # an action kept off says what turns it on (:func:`update_enabled`)
        for entry in entries:
            if entry == "-":
                menu.addSeparator()
            elif entry == "@recent":
                window.recent_menu = menu.addMenu("Open &Recent")
                window.recent_menu.aboutToShow.connect(window.fill_recent)
            elif entry == "@docks":
                for dock in docks.values():
                    menu.addAction(dock.toggleViewAction())
            elif entry == "@theme":
                theme_menu = menu.addMenu("&Theme")
                window.theme_actions = []
                for mode in THEMES:
                    act = theme_menu.addAction(mode.capitalize(), lambda m=mode: window.set_theme(m))
                    act.setCheckable(True)
                    act.setData(mode)
                    act.setChecked(mode == current_theme)
                    window.theme_actions.append(act)
            else:
                menu.addAction(actions[entry])


def build_toolbar(window: Any, actions: dict[str, QAction]) -> None:
    """The main toolbar from :data:`TOOLBAR`; sets ``window.search`` and ``window.color_mode``. Its buttons'
    tooltips name the key and what the command does (:mod:`workbench.qt.toolbar_tips`)."""
    tb = window.addToolBar("Main")
    tb.setObjectName("toolbar-main")
    for entry in TOOLBAR:
        if entry == "-":
            tb.addSeparator()
        elif entry == "@search":
            window.search = QLineEdit()
            window.search.setPlaceholderText("Search nodes: name, op type, glob or re:regex (Enter; F3 next)")
            window.search.setClearButtonEnabled(True)
            window.search.setMinimumWidth(280)
            tb.addWidget(window.search)
        elif entry == "@colour":
            tb.addWidget(QLabel(" Colour: "))
            window.color_mode = QComboBox()
            window.color_mode.addItems(list(COLOR_MODES))
            # its entries are renamed ("error" reads "sensitivity" under the sweep's figure): the box follows
            window.color_mode.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
            tb.addWidget(window.color_mode)
        else:
            tb.addAction(actions[entry])
    toolbar_tips.install(tb)  # each button's tooltip: the command, its key and what it does


def update_enabled(actions: dict[str, QAction], **state: bool) -> None:
    """Enable each action by its group (``state``: has_model, busy, opening, suggestion, quantized; graph, main_graph
    and qdq_graph say what the shown tab is, each True when not given; has_errors, has_sensitivity and
    has_export say which results are shown, each False when not given). An action kept off for want of a
    result says in its status tip and tooltip what turns it on (:func:`why_disabled`)."""
    for name, act in actions.items():
        group = _GROUPS[name]
        if group == "undo":
            continue
        on = ENABLED_WHEN[group](state)
        act.setEnabled(on)
        if group not in _SAYS_WHY:
            continue  # its tips stay as the window sets them (an already-quantized file's reason)
        hint = "" if on else why_disabled(group, state)
        tip = _TIPS[name]
        act.setStatusTip(f"{tip}. {hint}" if hint and tip else (hint or tip))
        act.setToolTip(hint)  # "" is the action's text again (a menu shows no tooltip then)
