"""Node inspector: the resolved weight / activation / bias spec of the selection, editable.

For one or many selected nodes it shows the roles that can take effect on them (the core's
:func:`~workbench.core.planning.roles.node_roles`: no weight settings on a Concat, Add or Relu,
none at all on a Reshape, which reuses its input's scale), each role's effective spec and where it came from
(``preset cpu-u8s8``, ``rule op_type=Conv``, ``override``). A field whose value differs across the
selection shows blank (combo) or partially checked (check box). Editing a field sets it in the
overrides of every selected node as one undoable command. Choices the plan would not apply as written, which
a recipe file may not hold (:func:`~workbench.core.api.unapplied_choice`: per_channel / per_block / MX activations
of a static preset, per_block with an observer that computes no per-block ranges, an MX dtype (per-block by
definition) on a per_tensor or per_channel spec), are greyed in their combo box,
the reason in its tooltip, so a project or recipe saved from the app loads in the CLI. Invalid combinations
(reduce_range on 16 bits, ...) are shown in red under the fields, never raised, the fields showing the settings as
set (:meth:`Document.resolve_as_set`) so they can be fixed there; the plan's infos about the
selection (expected, nothing to fix) in a line of their own under them, in the normal text colour.

A file shown in a tab of its own (View > Open Exported Model) is not the recipe: while such a tab
is shown, :meth:`Inspector.show_file` puts the inspector in a read-only mode for that file's
selection (the quantization parameters the file holds, a note saying where to edit instead, no
recipe controls) until :meth:`Inspector.release_file` or a selection in the main graph.

For one selected node, a collapsible "Node" section (:class:`workbench.qt.node_facts_view.NodeBox`) below
the quantization parameters of a quantized model and below the recipe controls of a float one, says what the
node is: op type, attributes, inputs and outputs with their dtypes and shapes, weights with their size.
Clicking a tensor's name there selects the node at its other end (``nodeClicked``).

The role sections fold (:class:`RoleEditor`): one is unfolded, the weight's or the one the user unfolded last, the
others show their settings in a line under their header, so a node's weight and activation settings show
together, without scrolling, in the inspector of a 1024 x 700 window (stacked unfolded, the activation's started
at y = 690 of a 367 px viewport).
"""

from __future__ import annotations

import html
import logging
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QBoxLayout,
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.core.api import (
    OBSERVERS,
    RECIPE_DTYPES,
    ROLES,
    Granularity,
    InputRead,
    NodeFacts,
    NodeFactsIndex,
    QuantTensor,
    ResolvedNode,
    input_reads,
    node_roles,
    unapplied_choice,
)
from workbench.core.issues import Severity
from workbench.core.wording import count
from workbench.qt import commands
from workbench.qt.dialogs import guarded
from workbench.qt.field_guard import guard_fields
from workbench.qt.mixed_text import FLOAT, share_text, spread_text
from workbench.qt.node_facts_view import NodeBox
from workbench.qt.quant_banner import RECIPE_OFF_NOTE
from workbench.qt.quant_params_view import QuantParamsBox
from workbench.qt.quantize_anyway import after_each_step, latency_kept_units
from workbench.qt.theme import mute

log = logging.getLogger(__name__)

AXIS_AUTO = -9  # the axis spin box's lowest value, shown as "auto" (axis None: the op's channel axis)
AXIS_MAX = 8  # the highest axis offered when the selection's weight rank is unknown
#: how :meth:`Document.node_issues` starts an issue of severity info (shown as a note, not as a problem)
INFO_PREFIX = f"{Severity.INFO}: "
MIXED = "mixed"  # a field whose value differs between the selected nodes
MAX_LISTED = 6

#: the note shown instead of the recipe controls while a file's tab is shown ({name}: the file; the exported
#: file's tab, or a diff tab's quantized file, which another tool may have written)
FILE_NOTE = (
    "Read-only: {name} is a quantized file as written on disk, not the recipe. To change how a node is "
    "quantized, select it in the Graph tab, edit it there and export again (File > Export..., Ctrl+E)."
)


#: the tooltip of "Reset node overrides" while the selection has some
RESET_TIP = "Remove the per-node settings of the selection (rules and preset apply again)"


@dataclass
class FileSelection:
    """What :meth:`Inspector.show_file` shows: the selection of a file shown in a tab of its own."""

    owner: object  # the tab; only it may release the inspector
    name: str  # the file's name, for the header and the note
    proto: Any  # its onnx.ModelProto
    params: list[QuantTensor]  # read_quant_params(proto)
    op_types: dict[str, str]  # node name -> op type
    nodes: list[str] = field(default_factory=list)
    edge: str | None = None  # the clicked edge's quantized tensor ("" for a float edge); None: no edge


def _common(values: list[Any]) -> tuple[bool, Any]:
    """(True, v) when every value equals v, else (False, None)."""
    if values and all(v == values[0] for v in values):
        return True, values[0]
    return False, None


def weight_notes(no_weight: dict[str, list[bool]]) -> list[str]:
    """Per weight op type of the selection (op -> per node, True when it has no constant float32 weight), what
    to say: "12 of 48 MatMul have no constant weight; weight settings apply to the other 36." (nothing when
    every one has a weight)."""
    out = []
    for op, flags in no_weight.items():
        k, n = sum(flags), len(flags)
        if not k:
            continue
        if n == 1:
            out.append(f"{op} has no constant float32 weight: weight settings do not apply.")
        elif k == n:
            out.append(f"None of the {n} {op} has a constant float32 weight: weight settings do not apply.")
        else:
            out.append(
                f"{k} of {n} {op} have no constant float32 weight; weight settings apply to the "
                f"other {n - k}."
            )
    return out


def excluded_note(excluded: int, selected: int) -> str:
    """What the role editors mean when ``excluded`` of the ``selected`` nodes are kept in float."""
    if excluded == selected:
        return (
            "Excluded: kept in float, so the settings below do not apply (greyed); untick exclude to "
            "quantize it again."
            if selected == 1
            else f"All {selected} are excluded: kept in float, so the settings below do not apply (greyed); untick "
            "exclude to quantize them again."
        )
    return (
        f"{excluded} of {selected} selected nodes are excluded (kept in float): the settings below take "
        f"effect on the other {selected - excluded}."
    )


def _names(names: list[str], most: int = 3) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def reads_text(reads: dict[str, list[InputRead]]) -> str:
    """What the selected nodes' activation inputs are read as (node -> :func:`workbench.core.api.input_reads`),
    e.g. "reads uint8 from p2o.Add.7 (set its activation to change this)"; "" when no node reads a quantized
    activation. A tensor has one grid, set by its producer: a node's own activation dtype sets its output,
    not its input."""
    nodes = {n: r for n, r in reads.items() if r}
    if not nodes:
        return ""
    if len(nodes) == 1:
        lines = []
        for r in next(iter(nodes.values())):
            if r.own:
                lines.append(
                    f"reads {r.dtype} from {r.source}, as its own setting"
                    if r.source
                    else f"reads {r.dtype} ({r.tensor}), as set"
                )
            elif r.source:
                lines.append(f"reads {r.dtype} from {r.source} (set its activation to change this)")
            else:
                lines.append(
                    f"reads {r.dtype} ({r.tensor}: set by another node reading it; give them the "
                    "same activation to change this)"
                )
        return "; ".join(dict.fromkeys(lines))
    others: dict[str, list[str]] = {}  # dtype -> nodes reading it on another node's grid
    sources: dict[str, list[str]] = {}
    own: dict[str, int] = {}
    for rs in nodes.values():
        foreign = [r for r in rs if not r.own]
        if not foreign:
            for dt in dict.fromkeys(r.dtype for r in rs):
                own[dt] = own.get(dt, 0) + 1
            continue
        dt = foreign[0].dtype
        others.setdefault(dt, []).append(foreign[0].tensor)
        sources.setdefault(dt, [])
        sources[dt] += [r.source for r in foreign if r.source and r.source not in sources[dt]]
    n = len(nodes)
    parts = [
        f"{len(ts)} of {n} read {dt} from the nodes before them"
        + (f" ({_names(sources[dt])})" if sources[dt] else "")
        + ": set those nodes' activation to change it"
        for dt, ts in others.items()
    ]
    parts += [f"{k} of {n} read {dt} as set" for dt, k in own.items()]
    return "; ".join(parts)


def _row(*widgets: QWidget, stretch: QWidget | None = None) -> QWidget:
    """``widgets`` side by side in one row of a form, left-aligned; ``stretch`` (one of them) takes the spare
    width."""
    row = QWidget()
    lay = QHBoxLayout(row)
    lay.setContentsMargins(0, 0, 0, 0)
    for w in widgets:
        lay.addWidget(w, 1 if w is stretch else 0)
    if stretch is None:
        lay.addStretch(1)
    return row


class _Checks(QWidget):
    """Check boxes side by side where the row is wide enough for them, else one under the other: a narrow
    inspector never scrolls sideways (its minimum width is the widest box's)."""

    def __init__(self, *boxes: QCheckBox):
        super().__init__()
        self._boxes = boxes
        self._lay = QBoxLayout(QBoxLayout.Direction.LeftToRight, self)
        self._lay.setContentsMargins(0, 0, 0, 0)
        for box in boxes:
            self._lay.addWidget(box)
        self._lay.addStretch(1)
        self.setMinimumWidth(max(box.minimumSizeHint().width() for box in boxes))

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().resizeEvent(event)
        gap = max(self._lay.spacing(), 0)
        side_by_side = sum(box.sizeHint().width() for box in self._boxes) + gap * (len(self._boxes) - 1)
        direction = (
            QBoxLayout.Direction.LeftToRight
            if event.size().width() >= side_by_side
            else QBoxLayout.Direction.TopToBottom
        )
        if self._lay.direction() != direction:
            self._lay.setDirection(direction)


class RoleEditor(QGroupBox):
    """Editors for one role's QuantSpec; emits ``edited(role, field, value)`` on user edits. A section that
    folds: its header button (:attr:`toggle`, the role's name) shows or hides the fields; folded, the settings
    show as one wrapped line under it (:meth:`summary_text`)."""

    edited = Signal(str, str, object)

    def __init__(self, role: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.role = role
        self._updating = False
        #: per field of the summary, the selected nodes' values (:meth:`show_resolved`), to count mixed ones
        self._spread: dict[str, list] = {}
        outer = QVBoxLayout(self)
        outer.setContentsMargins(6, 2, 6, 6)
        outer.setSpacing(2)
        self.toggle = QToolButton()
        self.toggle.setText(role.capitalize())
        self.toggle.setCheckable(True)
        self.toggle.setChecked(True)
        self.toggle.setAutoRaise(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setArrowType(Qt.ArrowType.DownArrow)
        bold = self.toggle.font()
        bold.setBold(True)
        self.toggle.setFont(bold)
        self.toggle.setToolTip(f"Show or hide the {role} settings")
        self.toggle.toggled.connect(self._on_toggled)
        outer.addWidget(self.toggle)
        self.summary = QLabel()  # the settings in a line while the fields are folded away
        self.summary.setWordWrap(True)
        mute(self.summary)
        self.summary.setVisible(False)
        outer.addWidget(self.summary)
        self.body = QWidget()
        outer.addWidget(self.body)
        self.form = form = QFormLayout(self.body)
        form.setContentsMargins(0, 0, 0, 0)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        self.source = QLabel()
        self.source.setWordWrap(True)  # a long list of rules wraps (the panel never scrolls sideways)
        mute(self.source)
        #: activation only: the dtype the selection's inputs are read as, and which node sets it
        self.reads = QLabel()
        self.reads.setWordWrap(True)
        self.reads.setVisible(False)
        self.enabled = QCheckBox("quantize")
        self.dtype = QComboBox()
        self.dtype.addItems(list(RECIPE_DTYPES) + (["int32"] if role == "bias" else []))
        self.symmetric = QCheckBox("symmetric")
        self.granularity = QComboBox()
        self.granularity.addItems([g.value for g in Granularity])
        self.axis = QSpinBox()
        self.axis.setRange(AXIS_AUTO, AXIS_MAX)
        self.axis.setSpecialValueText("auto")
        self.block_size = QSpinBox()
        self.block_size.setRange(0, 4096)
        self.block_size.setSpecialValueText("none")
        self.observer = QComboBox()
        self.observer.addItems(list(OBSERVERS))
        for combo in (self.dtype, self.granularity, self.observer):
            combo.setPlaceholderText(MIXED)  # shown at index -1: the selected nodes differ (it was blank)
        self.reduce_range = QCheckBox("reduce_range")
        self.power_of_two = QCheckBox("power-of-two scale")
        # fewer rows (ten before): the check boxes two a row, "quantize" beside where the spec comes from, axis and
        # block_size only where they apply (:meth:`_show_grid_rows`)
        since = QLabel("from")
        mute(since)
        form.addRow(_row(self.enabled, since, self.source, stretch=self.source))
        form.addRow("dtype", self.dtype)
        if role == "activation":
            form.addRow("reads", self.reads)
        form.addRow("granularity", self.granularity)
        form.addRow("axis", self.axis)
        form.addRow("block_size", self.block_size)
        form.addRow("observer", self.observer)
        form.addRow(_Checks(self.symmetric, self.reduce_range))
        form.addRow(self.power_of_two)
        self.enabled.clicked.connect(lambda on: self._emit("enabled", bool(on)))
        self.symmetric.clicked.connect(lambda on: self._emit("symmetric", bool(on)))
        self.reduce_range.clicked.connect(lambda on: self._emit("reduce_range", bool(on)))
        self.power_of_two.clicked.connect(lambda on: self._emit("power_of_two", bool(on)))
        self.dtype.currentTextChanged.connect(lambda t: t and self._emit("dtype", t))
        self.granularity.currentTextChanged.connect(lambda t: t and self._emit("granularity", t))
        self.observer.currentTextChanged.connect(lambda t: t and self._emit("observer", t))
        self.axis.valueChanged.connect(
            lambda v: self._emit("axis", None if v == self.axis.minimum() else int(v))
        )
        self.block_size.valueChanged.connect(lambda v: self._emit("block_size", int(v) or None))

    def _emit(self, field: str, value: Any) -> None:
        if not self._updating:
            self.edited.emit(self.role, field, value)

    def _on_toggled(self, shown: bool) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow)
        self.body.setVisible(shown)
        self.update_summary()

    def set_expanded(self, shown: bool) -> None:
        """Show (True) or fold away the fields."""
        self.toggle.setChecked(shown)

    def expanded(self) -> bool:
        return self.toggle.isChecked()

    def summary_text(self) -> str:
        """The fields' values in words: "int8, symmetric, per_channel, minmax (preset cpu-u8s8)" (a field the
        selected nodes differ in counted: "dtype mixed (uint8 on 1, float on 1)", float for a node this role
        does not quantize; the check boxes ticked after the observer, "reduce_range on 1 of 3"; "not quantized"
        when off on all), the spec's source in brackets."""
        state = self.enabled.checkState()
        if state == Qt.CheckState.Unchecked:
            text = "not quantized"
        else:
            spread = self._spread
            sym = {Qt.CheckState.Checked: "symmetric", Qt.CheckState.Unchecked: "asymmetric"}.get(
                self.symmetric.checkState()
            ) or spread_text("symmetry", spread.get("symmetry", [MIXED]))
            grid = self.granularity.currentText() or spread_text(
                "granularity", spread.get("granularity", [MIXED])
            )
            if grid == Granularity.per_block and self.block_size.value():
                grid += f" {self.block_size.value()}"
            # a node not quantized in this role counts as float among the dtypes (it read "quantize mixed: ...")
            dtype = (self.dtype.currentText() if state == Qt.CheckState.Checked else "") or spread_text(
                "dtype", spread.get("dtype", [MIXED])
            )
            parts = [
                dtype,
                sym,
                grid,
                self.observer.currentText() or spread_text("observer", spread.get("observer", [MIXED])),
            ]
            parts += [
                box.text()
                if box.checkState() == Qt.CheckState.Checked
                else share_text(box.text(), spread.get(box.text(), [True]))
                for box in (self.reduce_range, self.power_of_two)
                if box.checkState() != Qt.CheckState.Unchecked
            ]
            text = ", ".join(parts)
        source = self.source.text()
        return f"{text} ({source})" if source else text

    def update_summary(self) -> None:
        """The folded section's line, from the fields as they are (shown only while folded)."""
        folded = not self.expanded()
        self.summary.setText(self.summary_text() if folded else "")
        self.summary.setVisible(folded)

    def show_resolved(self, resolved: list[ResolvedNode], rank: int = 0, *, static: bool = True) -> None:
        """Fill the editors from the resolved settings of the selected nodes; ``rank`` > 0 limits the
        axis to ``-rank .. rank - 1`` (the lowest rank of the selection's weights), so an axis the
        planner would refuse cannot be entered (one it holds already stays shown). ``static``: the recipe's
        preset quantizes activations ahead of time (:meth:`_offer`)."""
        self._updating = True
        try:
            specs = [getattr(r.config, self.role) for r in resolved]
            sources = sorted({r.sources.get(self.role, "") for r in resolved})
            self.source.setText(", ".join(sources) if len(sources) <= 3 else count(len(sources), "source"))
            on = [s is not None for s in specs]
            self._set_check(self.enabled, on)
            live = [s for s in specs if s is not None]
            self._spread = {
                "dtype": [s.dtype if s is not None else FLOAT for s in specs],
                "symmetry": ["symmetric" if s.symmetric else "asymmetric" for s in live],
                "granularity": [s.granularity.value for s in live],
                "observer": [s.observer for s in live],
                self.reduce_range.text(): [s.reduce_range for s in live],
                self.power_of_two.text(): [s.power_of_two for s in live],
            }
            for w in (
                self.dtype,
                self.symmetric,
                self.granularity,
                self.axis,
                self.block_size,
                self.observer,
                self.reduce_range,
                self.power_of_two,
            ):
                w.setEnabled(bool(live))
            self._show_grid_rows(live)
            if not live:
                return
            self._set_combo(self.dtype, [s.dtype for s in live])
            self._set_combo(self.granularity, [s.granularity.value for s in live])
            self._set_combo(self.observer, [s.observer for s in live])
            self._offer(
                [s.granularity.value for s in live],
                [s.observer for s in live],
                static,
                [s.dtype for s in live],
            )
            self._set_check(self.symmetric, [s.symmetric for s in live])
            self._set_check(self.reduce_range, [s.reduce_range for s in live])
            self._set_check(self.power_of_two, [s.power_of_two for s in live])
            same, axis = _common([s.axis for s in live])
            self._set_axis_range(rank, [s.axis for s in live if s.axis is not None])
            self.axis.setSpecialValueText("auto" if same else MIXED)  # mixed axes read "auto" before
            self.axis.setValue(axis if same and axis is not None else self.axis.minimum())
            same, block = _common([s.block_size for s in live])
            self.block_size.setSpecialValueText("none" if same else MIXED)
            self.block_size.setValue(block if same and block else 0)
        finally:
            self._updating = False
            self.update_summary()

    def _show_grid_rows(self, live: list) -> None:
        """Show the axis row unless every spec of ``live`` (QuantSpecs) is per_tensor (one scale: no axis), the
        block_size row where one is per_block or holds a block size (to fix a conflict); both while none is
        live (greyed, as the other fields)."""
        form = self.form
        form.setRowVisible(self.axis, not live or any(s.granularity != Granularity.per_tensor for s in live))
        form.setRowVisible(
            self.block_size,
            not live or any(s.granularity == Granularity.per_block or s.block_size is not None for s in live),
        )

    def _offer(self, granularities: list[str], observers: list[str], static: bool, dtypes: list[str]) -> None:
        """Grey the dtype, granularity and observer choices the plan would not apply as written for specs holding
        ``granularities``, ``observers`` and ``dtypes`` (:func:`~workbench.core.api.unapplied_choice`: also MX
        dtypes unless per_block), the reason in the item's tooltip; a greyed value the selection holds already
        stays shown."""
        for combo, name in (
            (self.dtype, "dtype"),
            (self.granularity, "granularity"),
            (self.observer, "observer"),
        ):
            model = combo.model()
            for i in range(combo.count()):
                why = unapplied_choice(
                    self.role,
                    name,
                    combo.itemText(i),
                    static=static,
                    granularities=granularities,
                    observers=observers,
                    dtypes=dtypes,
                )
                model.item(i).setEnabled(why is None)
                combo.setItemData(i, f"Not offered: {why}." if why else None, Qt.ItemDataRole.ToolTipRole)

    def show_reads(self, text: str) -> None:
        """The "reads" row (activation only): ``text`` from :func:`reads_text` ("" hides it)."""
        self.reads.setText(text)
        self.reads.setVisible(bool(text))
        if self.role == "activation":
            self.form.setRowVisible(self.reads, bool(text))

    def _set_axis_range(self, rank: int, held: list[int]) -> None:
        """``-rank .. rank - 1`` plus "auto" below it (``rank`` 0: unknown, up to :data:`AXIS_MAX`),
        widened to the axes the selection holds already."""
        low, high = (-max(rank, 1), max(rank, 1) - 1) if rank > 0 else (AXIS_AUTO + 1, AXIS_MAX)
        self.axis.setRange(min([low, *held]) - 1, max([high, *held]))

    @staticmethod
    def _set_combo(combo: QComboBox, values: list[str]) -> None:
        same, value = _common(values)
        combo.setCurrentIndex(combo.findText(value) if same else -1)

    @staticmethod
    def _set_check(box: QCheckBox, values: list[bool]) -> None:
        same, value = _common(values)
        box.setTristate(not same)
        box.setCheckState(
            Qt.CheckState.PartiallyChecked
            if not same
            else (Qt.CheckState.Checked if value else Qt.CheckState.Unchecked)
        )


class Inspector(QWidget):
    """Shows and edits the selected nodes; every edit is a command on the document's undo stack.
    ``nodeClicked(name)``: a tensor's name in the Node section was clicked, ``name`` is the node at its
    other end (select it)."""

    nodeClicked = Signal(str)

    def __init__(self, document, parent: QWidget | None = None):
        super().__init__(parent)
        self.doc = document
        self.nodes: list[str] = []
        self.node_roles: dict[str, tuple[str, ...]] = {}  # selected node -> the roles that apply to it
        self.edge_tensor = ""
        self.file: FileSelection | None = None  # a file's tab is shown: read-only (show_file)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.scroll = scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        outer.addWidget(scroll)
        body = QWidget()
        scroll.setWidget(body)
        lay = QVBoxLayout(body)
        self.header = QLabel("No node selected.")
        self.header.setWordWrap(True)
        self.header.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.header)
        # read-only, for already-quantized models: first, above the recipe controls
        self.quant_params = QuantParamsBox()
        lay.addWidget(self.quant_params)
        self.recipe_note = QLabel(RECIPE_OFF_NOTE)
        self.recipe_note.setWordWrap(True)
        mute(self.recipe_note)
        self.recipe_note.setVisible(False)
        lay.addWidget(self.recipe_note)
        # one selected node's attributes, inputs and outputs: after the quantization parameters and the recipe
        # settings (first, it pushed them below the fold of a 1024 x 700 window)
        self.node_box = NodeBox()
        self.node_box.nodeClicked.connect(self._follow_link)
        self._following: tuple[str, str, str] | None = None  # a link's (node, tensor, section) to scroll to
        self._facts: tuple[Any, NodeFactsIndex] | None = None  # (the proto indexed, its index)
        row = QHBoxLayout()
        self.exclude = QCheckBox("exclude (keep in float)")
        self.exclude_source = QLabel()
        self.exclude_source.setWordWrap(True)
        mute(self.exclude_source)
        row.addWidget(self.exclude)
        row.addWidget(self.exclude_source, 1)
        lay.addLayout(row)
        self.roles_note = QLabel()  # why a role's settings are not shown for the selection
        self.roles_note.setWordWrap(True)
        mute(self.roles_note)
        self.roles_note.setVisible(False)
        lay.addWidget(self.roles_note)
        self.roles: dict[str, RoleEditor] = {}
        #: the role whose section is unfolded (:meth:`_fold_roles`); None: the user folded them all
        self._open_role: str | None = ROLES[0]
        for role in ROLES:
            editor = RoleEditor(role)
            editor.edited.connect(self._on_edited)
            editor.toggle.clicked.connect(lambda shown, r=role: self._on_role_toggled(r, shown))
            self.roles[role] = editor
            lay.addWidget(editor)
        self.reset = QPushButton("Reset node overrides")
        self.reset.setToolTip(RESET_TIP)
        lay.addWidget(self.reset)
        self.problems = QLabel()
        self.problems.setWordWrap(True)
        self.problems.setStyleSheet("color: #c62828;")
        self.problems.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.problems)
        #: the plan's ``info`` issues about the selection (expected, nothing to fix): not in the red line
        self.notes = QLabel()
        self.notes.setWordWrap(True)
        self.notes.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.notes.setVisible(False)
        lay.addWidget(self.notes)
        lay.addWidget(self.node_box)
        lay.addStretch(1)
        self.exclude.clicked.connect(self._on_exclude)
        self.reset.clicked.connect(self._on_reset)
        document.recipeChanged.connect(self.refresh)
        # an edit's command is on the stack (latency_kept_units reads it) only once its redo, which changed the
        # recipe, returned: the latency check's units are said to be its from then
        after_each_step(document, self._show_exclude_source)
        document.modelChanged.connect(self._on_model_changed)
        guard_fields(self)  # the wheel scrolls the panel; Ctrl+Z undoes the document, not a field's text
        self.refresh()

    # ------------------------------------------------------------------ selection
    def _follow_link(self, node: str) -> None:
        """A tensor's name was clicked: once ``node`` is shown, the panel scrolls to it (it kept the scroll
        position of the node before, often past the new node's section)."""
        self._following = self.node_box.followed
        self.nodeClicked.emit(node)

    def _scroll_to_link(self) -> None:
        """The Node section of the node a link selected at the panel's top, and the row of the tensor clicked
        (where it shows on this node) in view."""
        following, self._following = self._following, None
        if following is None or self.nodes != [following[0]] or self.node_box.isHidden():
            return
        _node, tensor, section = following
        body = self.scroll.widget()
        body.layout().activate()  # the rows just made have their places
        body.resize(body.width(), max(body.layout().totalHeightForWidth(body.width()), body.height()))
        self.scroll.verticalScrollBar().setValue(self.node_box.y())
        row = self.node_box.row_of(tensor, section)
        if row is not None:
            self.scroll.ensureWidgetVisible(row, 0, 10)

    def _on_model_changed(self) -> None:
        self._facts = None  # the index of the model before holds its proto
        self.set_nodes([])

    @guarded
    def set_nodes(self, names: list[str]) -> None:
        """Show the main graph's selection ``names`` (leaves a file's read-only view)."""
        self.file = None
        self.nodes = [n for n in names if n]
        if self.nodes:
            self.edge_tensor = ""
        self.refresh()

    @guarded
    def set_edge(self, tensor: str) -> None:
        """Show the quantization parameters of the selected edge's tensor ("" clears)."""
        self.file = None
        self.edge_tensor = tensor
        if tensor:
            self.nodes = []
        self.refresh()

    @guarded
    def show_file(self, selection: FileSelection) -> None:
        """Show, read-only, the selection of a file shown in a tab of its own (not the recipe)."""
        self.file = selection
        self.refresh()

    @guarded
    def release_file(self, owner: object) -> None:
        """``owner``'s tab is no longer shown: back to the main graph's selection (editable)."""
        if self.file is not None and self.file.owner is owner:
            if self._facts is not None and self._facts[0] is self.file.proto:
                self._facts = None
            self.file = None
            self.refresh()

    def node_facts(self, proto: Any, nodes: list[str]) -> NodeFacts | None:
        """What the Node section shows for ``nodes`` of the ONNX model ``proto``: the facts of a single
        node, None for none or several (the index is built once per model)."""
        if proto is None or len(nodes) != 1:
            return None
        if self._facts is None or self._facts[0] is not proto:
            self._facts = (proto, NodeFactsIndex(proto))
        index = self._facts[1]
        return index.facts(nodes[0]) if nodes[0] in index else None

    def _show_recipe_controls(self, show: bool, note: str = RECIPE_OFF_NOTE) -> None:
        for w in (self.exclude, self.exclude_source, self.reset, *self.roles.values()):
            w.setVisible(show)
        self.recipe_note.setText(note)
        self.recipe_note.setVisible(not show)
        self.roles_note.setVisible(False)

    def _show_problems(self, lines: list[str]) -> None:
        """Show the selection's problems (invalid settings, the plan's errors and warnings) in the red line and the
        plan's infos (``"info: NODE: message"``, :meth:`Document.node_issues`) in the notes line; each once."""
        lines = list(dict.fromkeys(lines))
        infos = [line for line in lines if line.startswith(INFO_PREFIX)]
        problems = [line for line in lines if not line.startswith(INFO_PREFIX)]
        self.problems.setText("\n".join(problems))
        self.problems.setVisible(bool(problems))  # no empty red line's spacing above the notes
        self.notes.setText("\n".join(infos))
        self.notes.setVisible(bool(infos))

    def _show_file_selection(self, f: FileSelection) -> None:
        """The read-only view of a file's selection: header, its parameters, the note; no recipe control."""
        self._show_recipe_controls(False, FILE_NOTE.format(name=f.name))
        for w in (self.exclude, self.reset, *self.roles.values()):
            w.setEnabled(False)
        self._show_problems([])
        self.exclude_source.setText("")
        name = html.escape(f.name)
        self.node_box.show_facts(
            None if f.edge is not None else self.node_facts(f.proto, f.nodes), links=False
        )
        if f.edge is not None:
            tensor = f.edge
            self.header.setText(
                f"<b>Edge</b> carrying {html.escape(tensor)} in {name}"
                if tensor
                else f"<b>Edge</b> in {name}: it carries float (no Q/DQ pair on it)."
            )
            param = next((p for p in f.params if p.tensor == tensor), None) if tensor else None
            if tensor:
                self.quant_params.show_tensor(param, tensor)
            else:
                self.quant_params.setVisible(False)
            return
        self.quant_params.show_file_nodes(f.proto, f.nodes, f.params)
        if not f.nodes:
            self.header.setText(
                f"No node selected in {name}. Click a node or an edge of its graph to see "
                "the quantization parameters the file holds."
            )
        else:
            self.header.setText(
                self._header_text(f.nodes, f.op_types.get)
                + f" in {name}"
                + ("" if self.quant_params.label.text() else ": runs in float (no Q/DQ around it)")
            )

    @guarded
    def refresh(self) -> None:
        if self.file is not None:
            self._show_file_selection(self.file)
            return
        nodes = self.nodes
        enabled = bool(nodes) and self.doc.model is not None
        quantized = self.doc.quant_summary is not None
        self._show_recipe_controls(not quantized)
        model = self.doc.model
        self.node_box.show_facts(self.node_facts(model.proto if model is not None else None, nodes))
        if self._following is not None:
            QTimer.singleShot(0, self._scroll_to_link)  # once the new rows are laid out
        if self.edge_tensor and quantized:
            self.quant_params.show_tensor(self.doc.quant_params.get(self.edge_tensor), self.edge_tensor)
            self.header.setText(f"<b>Edge</b> carrying {html.escape(self.edge_tensor)}")
            self._show_problems([])
            return
        self.quant_params.show_nodes(self.doc.model, nodes, list(self.doc.quant_params.values()))
        for w in (self.exclude, self.reset, *self.roles.values()):
            w.setEnabled(enabled)
        if not enabled:
            self.header.setText("No node selected. Click a node, drag a rectangle or use the search box.")
            self._show_problems([])
            self.exclude_source.setText("")
            for w in (self.exclude, self.exclude_source, self.reset, *self.roles.values()):
                w.setVisible(False)  # no values of an earlier selection left on show, greyed
            return
        self.header.setText(self._header_text(nodes))
        resolved, problems = [], []
        for node in nodes:
            r = self.doc.resolve(node)
            if isinstance(r, str):  # settings that do not fit together: shown as set, to be fixed here
                problems.append(r)
                r = self.doc.resolve_as_set(node)
            resolved.append(r)
        self._show_problems(problems + self.doc.node_issues(nodes))
        if resolved:
            RoleEditor._set_check(self.exclude, [r.excluded for r in resolved])
            self._show_exclude_source(resolved)
        overridden = [n for n in nodes if n in self.doc.recipe.overrides]
        self.reset.setEnabled(bool(overridden))
        self.reset.setToolTip(
            RESET_TIP
            if overridden
            else "The selection has no per-node settings: the rules and the preset apply to it"
        )
        units = self._unit_nodes()
        self.exclude.setEnabled(bool(units))
        self.exclude.setToolTip(
            ""
            if units
            else "Not a node unit of its own (folded into the unit before it, or "
            "never quantized): select that unit to keep it in float"
        )
        if not quantized:
            self._show_applicable_roles(resolved)

    def _show_exclude_source(self, resolved: list | None = None) -> None:
        """What keeps the selection float, beside its exclude box: the rule, the override, or "latency check" for
        an override the latency check set (:func:`~workbench.qt.quantize_anyway.latency_kept_units`).
        ``resolved``: the selection's ResolvedNodes (None: resolved again, after an edit or an undo)."""
        if resolved is None:
            if not self.nodes or self.exclude.isHidden():
                return
            resolved = [self._as_shown(n) for n in self.nodes]
        latency = latency_kept_units(self.doc)
        srcs = sorted(
            {
                "latency check"
                if r.excluded and r.node in latency and r.sources.get("exclude") == "override"
                else r.sources.get("exclude", "")
                for r in resolved
            }
            - {""}
        )
        self.exclude_source.setText(", ".join(srcs[:3]))

    def _as_shown(self, node: str) -> ResolvedNode:
        """``node``'s resolved settings; as set, unchecked, when they do not fit together (:meth:`refresh`)."""
        r = self.doc.resolve(node)
        return self.doc.resolve_as_set(node) if isinstance(r, str) else r

    def _unit_nodes(self) -> list[str]:
        """The selected nodes that are node units of the plan (an exclude on a folded Relu or a Reshape would
        record an override that changes nothing); all of them while there is no plan."""
        plan = self.doc.plan
        return [n for n in self.nodes if plan is None or n in plan.units]

    def _show_applicable_roles(self, resolved: list[ResolvedNode]) -> None:
        """Show a role's editor when it applies to at least one selected node, filled from those nodes;
        greyed, with a note, when every selected node is excluded (kept in float)."""
        self.node_roles, notes, ranks = {}, [], []
        no_weight: dict[str, list[bool]] = {}  # weight op type -> per selected node: has no constant weight
        for r in resolved:
            roles = node_roles(self.doc.model, self.doc.recipe, r.node)
            self.node_roles[r.node] = roles.roles
            if roles.weight_rank:
                ranks.append(roles.weight_rank)
            if "weight" in roles.roles or roles.no_weight:
                no_weight.setdefault(self.doc.op_type(r.node) or "?", []).append(roles.no_weight)
            if roles.note and not roles.no_weight:
                notes.append(roles.note)
        notes = weight_notes(no_weight) + notes
        shown = {role for roles in self.node_roles.values() for role in roles}
        excluded = [r for r in resolved if r.excluded]
        static = self.doc.recipe.preset_obj().mode == "static"
        for role, editor in self.roles.items():
            editor.setVisible(role in shown)
            editor.show_resolved(
                [r for r in resolved if role in self.node_roles[r.node]],
                rank=min(ranks, default=0) if role == "weight" else 0,
                static=static,
            )
            editor.setEnabled(bool(resolved) and len(excluded) < len(resolved))
            if excluded and len(excluded) == len(resolved):
                editor.source.setText("excluded: kept in float (these apply if it is quantized again)")
        self._fold_roles()
        plan = self.doc.plan
        self.roles["activation"].show_reads(
            reads_text({r.node: input_reads(plan, r.node) for r in resolved}) if plan is not None else ""
        )
        notes = list(dict.fromkeys(notes))
        if len(self.node_roles) > 1 and notes:
            notes = (
                [
                    f"{len(notes)} kinds of node in the selection have fewer settings; an edit changes only the "
                    "nodes it applies to."
                ]
                if len(notes) > 2
                else notes
            )
        notes = ([excluded_note(len(excluded), len(resolved))] if excluded else []) + notes
        self.roles_note.setText("\n".join(notes))
        self.roles_note.setVisible(bool(notes))

    def _on_role_toggled(self, role: str, shown: bool) -> None:
        """A role section's header was clicked: unfolded, it is the one unfolded from now on; folded, none is."""
        self._open_role = role if shown else None
        self._fold_roles()

    def _fold_roles(self) -> None:
        """Unfold one role section, fold the others to their one-line summary, so every role's settings show in
        the inspector of a 1024 x 700 window (all three unfolded put the activation's below the fold): the one the
        user unfolded last, or the first one the selection has when that one does not apply to it (a Relu or an
        Add has no weight settings)."""
        shown = [r for r, e in self.roles.items() if not e.isHidden()]
        open_role = self._open_role
        if open_role is not None and open_role not in shown:
            open_role = shown[0] if shown else None
        for role, editor in self.roles.items():
            editor.set_expanded(role == open_role)
            editor.update_summary()

    def _header_text(self, nodes: list[str], op_type=None) -> str:
        """ "<b>name</b> (1 Conv)" or "<b>3 nodes</b> (2 Conv, 1 Relu): a, b, c"; ``op_type``: name -> op
        type (default: the open model's)."""
        op_type = op_type or self.doc.op_type
        ops: dict[str, int] = {}
        for n in nodes:
            op = op_type(n) or "?"
            ops[op] = ops.get(op, 0) + 1
        kinds = ", ".join(f"{c} {op}" for op, c in sorted(ops.items(), key=lambda kv: -kv[1]))
        if len(nodes) == 1:
            return f"<b>{nodes[0]}</b> ({kinds})"
        listed = ", ".join(nodes[:MAX_LISTED]) + (" ..." if len(nodes) > MAX_LISTED else "")
        return f"<b>{len(nodes)} nodes</b> ({kinds}): {listed}"

    # ------------------------------------------------------------------ edits
    @guarded
    def _on_edited(self, role: str, field: str, value: Any) -> None:
        nodes = [n for n in self.nodes if role in self.node_roles.get(n, ROLES)]
        if not nodes:
            return
        after = commands.set_role_field(self.doc.recipe, nodes, role, field, value)
        where = nodes[0] if len(nodes) == 1 else f"{len(nodes)} nodes"
        commands.push_edit(self.doc, after, f"Set {role} {field} = {value} on {where}")

    @guarded
    def _on_exclude(self, *_args) -> None:
        if not self.nodes:
            return
        checked = self.exclude.checkState() != Qt.CheckState.Unchecked
        units = self._unit_nodes()
        if not units:
            return
        after = commands.set_exclude(self.doc.recipe, units, bool(checked))
        commands.push_edit(self.doc, after, f"{'Exclude' if checked else 'Include'} {self._count()}")

    @guarded
    def _on_reset(self, *_args) -> None:
        after = commands.clear_overrides(self.doc.recipe, self.nodes)
        commands.push_edit(self.doc, after, f"Reset overrides of {self._count()}")

    def _count(self) -> str:
        return self.nodes[0] if len(self.nodes) == 1 else f"{len(self.nodes)} nodes"
