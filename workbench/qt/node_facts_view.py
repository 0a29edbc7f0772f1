"""The inspector's collapsible "Node" section: what one selected node is, as Netron shows it.

Op type (and domain when not the default one), name, the attributes written compactly (a long list
elided, the whole value in the row's tooltip), then each input and output: the schema's name for the
slot (``X``, ``W``, ``B``), the tensor's name, element type and shape (symbolic dims by name, unknown
ones as ``?``); a weight (initializer) says so, with its number of values and bytes. The facts come
from the core (:class:`workbench.core.api.NodeFactsIndex`, read once per model). A tensor's name is a
link when a node is at its other end: an input's selects the node that writes it, an output's the
first node that reads it, Q/DQ nodes looked through (``nodeClicked``).
"""

from __future__ import annotations

import html
import re

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QFrame, QLabel, QToolButton, QVBoxLayout, QWidget

from workbench.core.api import NodeFacts, TensorFact
from workbench.core.wording import count, plural
from workbench.qt.break_marks import breakable, keep_copies_clean, unbroken
from workbench.qt.theme import colors_for, shown_theme

#: a tensor name longer than this is cut in its middle (whole in the tooltip): the panel never scrolls sideways
MAX_NAME = 40
_TAG = re.compile(r"<[^>]+>")


def plain(text: str) -> str:
    """A label's rich ``text`` as the user reads it (tags dropped, entities, non-breaking spaces and break
    marks turned back into what they stand for)."""
    return unbroken(html.unescape(_TAG.sub("", text.replace("<br>", "\n"))).replace("\xa0", " "))


def short_name(name: str, most: int = MAX_NAME) -> str:
    """``name`` cut in the middle with "…" when longer than ``most`` characters."""
    if len(name) <= most:
        return name
    head = (most - 1) // 2
    return name[:head] + "…" + name[len(name) - (most - 1 - head):]


def size_text(nbytes: int) -> str:
    """``576 B``, ``1.7 KiB``, ``3.2 MiB``."""
    if nbytes < 1024:
        return f"{nbytes} B"
    for unit in ("KiB", "MiB", "GiB"):
        nbytes /= 1024
        if nbytes < 1024 or unit == "GiB":
            return f"{nbytes:.1f} {unit}"
    return ""


def _size(t: TensorFact) -> str:
    """``432 values (1.7 KiB)`` for a weight, else ""."""
    if not t.weight:
        return ""
    return count(t.size or 0, "value") + (f" ({size_text(t.nbytes)})" if t.nbytes is not None else "")


def tensor_detail(t: TensorFact) -> str:
    """``float32 [1, 3, ?, ?]``; a weight: ``weight float32 [16, 3, 3, 3], 432 values (1.7 KiB)``."""
    typed = f"{t.dtype_text} {t.shape_text}"
    return f"weight {typed}, {_size(t)}" if t.weight else typed


def tensor_html(t: TensorFact) -> str:
    """:func:`tensor_detail` as rich text that breaks only between dims or before the size (a long
    symbolic dim such as ``p2o.DynamicDimension.0`` would not fit in a narrow panel on one line)."""
    typed = html.escape(f"{t.dtype_text} {t.shape_text}")
    return f"weight&nbsp;{typed}, {html.escape(_size(t))}" if t.weight else typed


def tensor_target(t: TensorFact, output: bool) -> str:
    """The node a click on the tensor's name selects: an input's producer, an output's first reader (a
    quantized model's Q/DQ nodes looked through: the canvas folds them into badges)."""
    if output:
        return t.readers[0] if t.readers else ""
    return t.source


def tensor_tooltip(t: TensorFact, target: str = "") -> str:
    """The tensor's whole name, type, where it comes from and goes to; what a click selects (``target``)."""
    lines = [t.name, tensor_detail(t)]
    if t.producer:
        lines.append(f"written by {t.producer}")
    elif t.graph_input:
        lines.append("an input of the graph")
    if t.graph_output:
        lines.append("an output of the graph")
    if t.consumers:
        shown = ", ".join(t.consumers[:6]) + (f" and {len(t.consumers) - 6} more" if len(t.consumers) > 6 else "")
        lines.append(f"read by {shown}")
    if target:
        lines.append(f"Click to select {target}.")
    return "\n".join(lines)


class NodeBox(QWidget):
    """The section; :meth:`show_facts` fills it (None hides it). The header button folds the body
    away; it stays folded for the next nodes until unfolded."""

    nodeClicked = Signal(str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        self.toggle = QToolButton()
        self.toggle.setText("Node")
        self.toggle.setCheckable(True)
        self.toggle.setChecked(True)
        self.toggle.setAutoRaise(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setArrowType(Qt.ArrowType.DownArrow)
        bold = self.toggle.font()  # a font, not a style sheet: a styled button kept the light theme's colours
        bold.setBold(True)
        self.toggle.setFont(bold)
        self.toggle.setToolTip("Show or hide the node's attributes, inputs and outputs")
        self.toggle.setMinimumWidth(1)  # a long op type is cut rather than widening the panel
        self.toggle.toggled.connect(self._on_toggled)
        lay.addWidget(self.toggle)
        self.body = QFrame()
        self.body.setFrameShape(QFrame.Shape.StyledPanel)
        self.lines = QVBoxLayout(self.body)  # one wrapped label per row: its height always fits its text
        self.lines.setContentsMargins(6, 4, 6, 4)
        self.lines.setSpacing(2)
        lay.addWidget(self.body)
        self.facts: NodeFacts | None = None
        self._links = True  # the facts' tensor names select nodes (show_facts)
        #: (section, key, value label) of every row shown: section "node", "attributes", "inputs", "outputs"
        self.rows: list[tuple[str, str, QLabel]] = []
        self._targets: list[str] = []
        #: (node, tensor, section) of the last link clicked: the node it selects and where the tensor shows there
        self.followed: tuple[str, str, str] | None = None
        self._key_width = 60  # px, the key column of the node shown
        self.setVisible(False)
        keep_copies_clean()  # a name copied from a row has no break marks

    def _on_toggled(self, shown: bool) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow)
        self.body.setVisible(shown)

    # ------------------------------------------------------------------ filling
    def show_facts(self, facts: NodeFacts | None, *, links: bool = True) -> None:
        """Show ``facts`` (None: hide the section); ``links``: tensor names select nodes on click (off
        for a file shown in a tab of its own, whose nodes are not the open model's)."""
        self.facts, self._links = facts, links
        self._clear()
        if facts is None:
            self.setVisible(False)
            return
        self.toggle.setText(f"Node: {facts.op_type}")
        keys = ["name", "graph", *(a.name for a in facts.attributes), *(t.slot for t in facts.inputs + facts.outputs)]
        metrics = QFontMetrics(self.font())
        self._key_width = min(max(metrics.horizontalAdvance(k) for k in keys) + 8, 110)
        op = facts.op_type + (f" (domain {facts.domain})" if facts.domain else "")
        self._row("node", "op", op)
        self._row("node", "name", facts.name)
        if facts.graph:
            self._row("node", "graph", facts.graph)
        self._heading("Attributes" if facts.attributes else "No attributes")
        for a in facts.attributes:
            label = self._row("attributes", a.name, a.text)
            if a.full:
                label.setToolTip(f"{a.name} = {a.full}")
        self._heading(plural(len(facts.inputs), "Input", "Inputs") if facts.inputs else "No inputs")
        for t in facts.inputs:
            self._tensor("inputs", t, output=False, links=links)
        self._heading(plural(len(facts.outputs), "Output", "Outputs"))
        for t in facts.outputs:
            self._tensor("outputs", t, output=True, links=links)
        self.setVisible(True)

    def restyle(self) -> None:
        """Draw the facts shown again in the theme now shown: their rows keep the colours of the theme they were
        made in (light field names and link blue, black titles on a dark panel after a switch to dark)."""
        if self.facts is not None:
            self.show_facts(self.facts, links=self._links)

    def _clear(self) -> None:
        while self.lines.count():
            w = self.lines.takeAt(0).widget()
            if w is not None:
                w.hide()
                w.deleteLater()
        self.rows, self._targets = [], []

    def _heading(self, text: str) -> None:
        label = QLabel(text)
        label.setStyleSheet("font-weight: bold;")
        self.lines.addWidget(label)

    def _row(self, section: str, key: str, value: str, *, rich: bool = False, muted: bool = False) -> QLabel:
        """A row: ``key`` (muted, in a column as wide as the longest key of the node) and ``value`` (plain
        text unless ``rich``), wrapped in one label."""
        colors = colors_for(shown_theme())
        text = value if rich else breakable(html.escape(value))
        if muted:
            text = f'<span style="color: {colors.muted_text}">{text}</span>'
        label = QLabel(f'<table cellspacing="0" cellpadding="0"><tr><td width="{self._key_width}" '
                       f'style="color: {colors.muted_text}">{html.escape(key)}</td><td>{text}</td></tr></table>')
        label.setTextFormat(Qt.TextFormat.RichText)
        label.setWordWrap(True)
        label.setMinimumWidth(1)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction if rich
                                      else Qt.TextInteractionFlag.TextSelectableByMouse)
        label.setProperty("value", plain(text))
        self.lines.addWidget(label)
        self.rows.append((section, key, label))
        return label

    def _tensor(self, section: str, t: TensorFact, *, output: bool, links: bool) -> None:
        if not t.name:
            self._row(section, t.slot, "not given", muted=True)
            return
        target = tensor_target(t, output) if links else ""
        name = breakable(html.escape(short_name(t.name)))
        if target:
            self._targets.append(target)
            name = f'<a href="{len(self._targets) - 1}">{name}</a>'
        label = self._row(section, t.slot, f"{name} {tensor_html(t)}", rich=True)
        label.setToolTip(tensor_tooltip(t, target))
        label.setProperty("tensor", t.name)
        label.linkActivated.connect(lambda href, name=t.name, output=output: self._on_link(href, name, output))

    def _on_link(self, href: str, tensor: str = "", output: bool = False) -> None:
        if href.isdigit() and int(href) < len(self._targets):
            target = self._targets[int(href)]
            # where the tensor shows on the node selected: an output read there is one of its inputs
            self.followed = (target, tensor, "inputs" if output else "outputs")
            self.nodeClicked.emit(target)

    def row_of(self, tensor: str, section: str) -> QLabel | None:
        """The row of ``section`` ("inputs" or "outputs") that shows ``tensor``, or None."""
        return next((v for s, _k, v in self.rows if s == section and v.property("tensor") == tensor), None)

    # ------------------------------------------------------------------ reading back (tests, copy)
    def shown(self, section: str | None = None) -> list[tuple[str, str]]:
        """``(key, text as read)`` of every row, or of ``section``'s rows."""
        return [(k, v.property("value")) for s, k, v in self.rows if section is None or s == section]
