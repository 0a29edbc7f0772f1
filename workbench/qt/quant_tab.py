"""A quantized model shown as it is, in a tab of its own (View > Open Exported Model).

The tab holds the banner (how the file is quantized), a line saying what changed in the window since
the export when something did (:mod:`workbench.qt.export_stale`; the tab's title then ends "(outdated)"),
a graph canvas with Q/DQ pairs folded into edge badges, and a line under it with the quantization
parameters of the clicked edge or node (scale, zero point, axis, block size as the file holds them)
beside a "Fit graph" button.

* The graph opens where its names and Q/DQ badges can be read: the whole graph when it fits at
  :data:`READABLE_SCALE` or more, else its start (the inputs) at that scale, the rest a scroll away;
  Fit graph (or Home) shows it whole.
* Colours: the window's single colour choice (its toolbar combo) applies here too. Opening the tab
  sets it to "dtype" (the dtypes the file holds); switching it later recolours this tab as well.
* The window's Inspector shows the tab's selection read-only while the tab is shown: the file is
  not the recipe (:meth:`workbench.qt.inspector.Inspector.show_file`).

Like the main graph for a quantized file, Constant nodes are drawn as the weights they are
(:func:`workbench.core.api.lift_weights`): onnxruntime's QDQ output of ppocrv4_rec keeps 420 unnamed Constant
nodes; laid out on one row they made the whole-graph fit 0.0093 where the main graph, showing the
same file, fits at 0.061. Its output shapes are inferred as the Graph tab's are (:func:`workbench.core.api.infer_shapes`):
onnxruntime's QOperator export of digits_cnn keeps no value_info for the tensors it renames (7 of 9 nodes drew no shape).

:func:`quant_info` builds the texts the canvas shows on hover, for this tab and the main graph.
"""

from __future__ import annotations

from pathlib import Path

import onnx
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QTransform
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from workbench.core.api import (
    QuantSummary,
    QuantTensor,
    format_param,
    infer_shapes,
    lift_weights,
    params_around_nodes,
    read_quant_params,
    summarize_quantization,
)
from workbench.core.errors import ModelError
from workbench.qt.canvas.view import COLOR_MODES, GraphCanvas
from workbench.qt.inspector import FileSelection, Inspector
from workbench.qt.quant_banner import EXPORTED_FILE_NOTE, QuantBanner
from workbench.qt.theme import colors_for, shown_theme

#: the tab opens at this zoom or more: node names (drawn from 0.55) and Q/DQ badges readable
READABLE_SCALE = 0.8
#: the parameter line shows this many lines at most (the Inspector and its tooltip have them all)
MAX_DETAIL_LINES = 3
#: what the parameter line says while nothing is clicked
CLICK_HINT = "Click an edge or a node to see its scale and zero point."
#: the parameter line in the "error" colour mode: this tab has no SQNR to colour by
NO_SQNR_HINT = (
    "No SQNR here: the exported file alone has no float reference. View > Compare Float vs "
    "Quantized (Ctrl+Shift+D) measures it on your data."
)


def quant_info(summary: QuantSummary, params: list[QuantTensor], proto) -> tuple[dict, dict, dict]:
    """(tensor -> parameter line, node -> integer kernel, node -> parameter lines, Q/DQ looked
    through) for :meth:`GraphCanvas.set_quant_info`; ``proto`` is the model ``params`` were read from."""
    tensor_info = {p.tensor: format_param(p) for p in params}
    node_info = {n: [format_param(p) for p in ps] for n, ps in params_around_nodes(proto, params).items()}
    return tensor_info, dict(summary.kernels), node_info


class ExportedCanvas(GraphCanvas):
    """The tab's canvas: :meth:`show_start` opens it readable; Home or 0 fits the whole graph
    (the window's Fit graph action fits its own graph)."""

    def keyPressEvent(self, event) -> None:
        if event.key() in (Qt.Key.Key_Home, Qt.Key.Key_0):
            self.fit()
        else:
            super().keyPressEvent(event)

    def show_start(self, scale: float = READABLE_SCALE) -> bool:
        """When the whole-graph fit draws the graph smaller than ``scale``, zoom to ``scale`` and show
        the graph's first rows (its inputs: the layout runs top-down), centred on what those rows
        draw, right of the legend when they fit there, else below it. Returns True when it zoomed
        (False: the fit is readable, or no graph is shown)."""
        if self._state is None or self._scale() >= scale:
            return False
        d = self._state.data
        self.setTransform(QTransform.fromScale(scale, scale))
        view = QRectF(self.viewport().rect())
        top = d.bounds.top() - 30
        extent = self._drawn_extent(
            QRectF(d.bounds.left() - 30, top, d.bounds.width() + 60, view.height() / scale)
        )
        area = self._start_area(view, extent.width() * scale)
        margin = 8.0
        if extent.width() * scale <= area.width():  # the rows fit across: centred
            x = extent.center().x() - (area.center().x() - view.center().x()) / scale
        else:  # wider: their left end at the area's left
            x = extent.left() - (area.left() + margin - view.center().x()) / scale
        y = top - (area.top() + margin - view.center().y()) / scale
        visible = QRectF(
            x - view.width() / (2 * scale),
            y - view.height() / (2 * scale),
            view.width() / scale,
            view.height() / scale,
        )
        self.scene().setSceneRect(self.sceneRect().united(visible))  # the fit's rect holds the whole graph
        self.centerOn(QPointF(x, y))
        self._sync_items()
        self._minimap.update()
        return True

    def _start_area(self, view: QRectF, width: float) -> QRectF:
        """The part of ``view`` (viewport px) for the first rows, ``width`` px wide: right of the legend
        when they fit there, else below it (the whole view when the legend is hidden)."""
        legend = self.legend_overlay
        if legend.isHidden():
            return view
        box = QRectF(legend.geometry()).translated(-QPointF(self.viewport().pos()))
        gap = 8.0
        right = QRectF(box.right() + gap, view.top(), view.right() - box.right() - gap, view.height())
        if width <= right.width():
            return right
        return QRectF(
            view.left(), box.bottom() + gap, view.width(), max(view.bottom() - box.bottom() - gap, 1.0)
        )

    def _drawn_extent(self, band: QRectF) -> QRectF:
        """Left-right extent of the nodes and group boxes drawn in ``band`` (scene), ``band`` tall."""
        d = self._state.data
        xs0, xs1 = [], []
        nodes = d.in_rect(band)
        if len(nodes):
            xs0.append(float(d.x0[nodes].min()))
            xs1.append(float(d.x1[nodes].max()))
        boxes = [k for k in range(len(d.group_ids)) if d.gy0[k] <= band.bottom() and d.gy1[k] >= band.top()]
        if boxes:
            xs0.append(float(d.gx0[boxes].min()))
            xs1.append(float(d.gx1[boxes].max()))
        if not xs0:
            return band
        left, right = min(xs0) - 30, max(xs1) + 30
        return QRectF(left, band.top(), right - left, band.height())


class QuantModelTab(QWidget):
    """Banner + canvas + parameter line for the quantized file ``path``.

    ``colour``: the window's colour-mode combo this tab follows; ``inspector``: the window's
    Inspector, which shows the tab's selection read-only while the tab is shown. Both default to
    the ``color_mode`` and ``inspector`` of the window ``parent`` belongs to, when it has them.

    Raises
    ------
    ModelError
        ``path`` cannot be read as ONNX (the message names it).
    """

    def __init__(
        self,
        path: str | Path,
        parent: QWidget | None = None,
        *,
        colour: QComboBox | None = None,
        inspector: Inspector | None = None,
    ):
        super().__init__(parent)
        self.path = Path(path)
        self.stamp = file_stamp(self.path)  # the file as read: a later export over it is seen
        try:
            self.proto = onnx.load(str(self.path))
        except Exception as exc:  # noqa: BLE001 - protobuf raises its own types
            raise ModelError(
                f"{self.path}: cannot read the model ({exc}).", hint="Export it again."
            ) from None
        # Constant weights drawn as the weights they are, by the model preparation's own lifting
        self.proto, self.lifted_constants, _ = lift_weights(self.proto, in_place=True)
        # output shapes as the Graph tab draws them: a QOperator file keeps no value_info for its renamed tensors
        self.proto = infer_shapes(self.proto, [])
        params = read_quant_params(self.proto)
        self.params = {p.tensor: p for p in params}
        self._by_node = params_around_nodes(self.proto, params)
        self.op_types = {n.name: n.op_type for n in self.proto.graph.node}
        self.summary = summarize_quantization(self.proto, params)
        window = parent.window() if parent is not None else None
        self.colour = colour if colour is not None else _window_part(window, "color_mode", QComboBox)
        self.inspector = inspector if inspector is not None else _window_part(window, "inspector", Inspector)
        self._nodes: list[str] = []
        self._edge: str | None = None  # the clicked edge's quantized tensor ("" float); None: no edge
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        self.banner = QuantBanner(self)
        self.banner.show_summary(self.summary, self.path.name, EXPORTED_FILE_NOTE)
        self.banner.setToolTip(f"{self.path}\n{self.banner.toolTip()}")
        lay.addWidget(self.banner)
        self.stale = QLabel(
            self
        )  # what changed since the export (:meth:`set_stale`); hidden while nothing did
        self.stale.setWordWrap(True)
        self.stale.setContentsMargins(4, 0, 4, 0)
        self.stale.setStyleSheet("font-weight: bold;")
        self.stale.setVisible(False)
        lay.addWidget(self.stale)
        self.canvas = ExportedCanvas(self)
        theme = colors_for(shown_theme())  # later switches: the window recolours every canvas
        self.canvas.set_theme_colors(theme.canvas_background, theme.canvas_edge)
        self.canvas.set_quant_info(*quant_info(self.summary, params, self.proto))
        self.canvas.set_node_values(dtypes=self.summary.node_dtypes)
        lay.addWidget(self.canvas, 1)
        row = QHBoxLayout()
        row.setContentsMargins(4, 0, 4, 2)
        self.details = QLabel(CLICK_HINT)
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details.setStyleSheet("font-family: monospace;")
        self.details.setWordWrap(True)
        row.addWidget(self.details, 1)
        self.fit_button = QPushButton("Fit graph")
        self.fit_button.setToolTip("Show the whole graph (Home). The tab opens where names can be read.")
        row.addWidget(self.fit_button, 0, Qt.AlignmentFlag.AlignTop)
        lay.addLayout(row)
        self.fit_button.clicked.connect(self.canvas.fit)
        self.canvas.edgeSelected.connect(self._on_edge)
        self.canvas.selectionChangedNames.connect(self._on_nodes)
        self.canvas.layoutReady.connect(self.canvas.show_start)
        self.set_color_mode("dtype")
        if self.colour is not None:
            self.colour.currentTextChanged.connect(self._follow_colour)
            self.colour.setCurrentText("dtype")  # the window's choice is this tab's (the main graph follows)
        self.qdq_nodes = False  # Q/DQ pairs folded into edge badges
        self.canvas.set_model(self.proto, collapse_qdq=True)

    # ------------------------------------------------------------------ colours
    def set_color_mode(self, mode: str) -> None:
        """Colour the graph by ``mode`` (one of the canvas's modes; "error" has no values here)."""
        self.canvas.set_color_mode(mode)
        if not self._nodes and self._edge is None:
            self._set_details([NO_SQNR_HINT if mode == "error" else CLICK_HINT])

    def color_mode(self) -> str:
        return self.canvas.color_mode()

    def _follow_colour(self, mode: str) -> None:
        if mode in COLOR_MODES:
            self.set_color_mode(mode)

    # ------------------------------------------------------------------ selection
    def _on_edge(self, tensor: str) -> None:
        if not tensor and self.canvas.selected_edge() is None:  # the edge selection was cleared
            self._edge = None
        else:
            self._edge, self._nodes = tensor, []
            p = self.params.get(tensor)
            self._set_details(
                [f"{p.node}: {format_param(p)}" if p is not None else "This edge carries float."]
            )
        self._show_in_inspector()

    def _on_nodes(self, names: list) -> None:
        self._nodes = list(names)
        if names:
            self._edge = None
            lines = [f"{n}: {format_param(p)}" for n in names for p in self._by_node.get(n, [])]
            self._set_details(lines or ["No quantization parameters on the selection: it runs in float."])
        elif self._edge is None:
            self._set_details([NO_SQNR_HINT if self.color_mode() == "error" else CLICK_HINT])
        self._show_in_inspector()

    def _set_details(self, lines: list[str]) -> None:
        """The parameter line: the first :data:`MAX_DETAIL_LINES` lines (all of them in its tooltip),
        so a selection with many tensors does not squeeze the graph."""
        shown = (
            lines
            if len(lines) <= MAX_DETAIL_LINES
            else (
                lines[: MAX_DETAIL_LINES - 1]
                + [f"... {len(lines) - MAX_DETAIL_LINES + 1} more (hover here, or see the Inspector)"]
            )
        )
        self.details.setText("\n".join(shown))
        self.details.setToolTip("\n".join(lines) if len(lines) > MAX_DETAIL_LINES else "")

    def selection(self) -> FileSelection:
        """What the Inspector shows for this tab."""
        return FileSelection(
            owner=self,
            name=self.path.name,
            proto=self.proto,
            params=list(self.params.values()),
            op_types=self.op_types,
            nodes=list(self._nodes),
            edge=self._edge,
        )

    def _show_in_inspector(self) -> None:
        if self.inspector is not None and self.isVisible():
            self.inspector.show_file(self.selection())

    def showEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        if not event.spontaneous():  # the tab became the current one
            self._show_in_inspector()

    def hideEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().hideEvent(event)
        if not event.spontaneous() and self.inspector is not None:  # another tab is shown, or this one closed
            self.inspector.release_file(self)

    def show_qdq_nodes(self, nodes: bool) -> None:
        """Draw the file again with QuantizeLinear / DequantizeLinear as nodes (``nodes``) or folded into
        edge badges (the default), as View > Show Q/DQ as Nodes does for the main graph."""
        if nodes != self.qdq_nodes:
            self.qdq_nodes = nodes
            self.canvas.set_model(self.proto, collapse_qdq=not nodes, keep_view=True)

    def set_stale(self, note: str) -> None:
        """Show ``note`` (what changed in the window since the file was exported) above the graph; "" hides it."""
        self.stale.setText(note)
        self.stale.setVisible(bool(note))

    def changed_on_disk(self) -> bool:
        """True when the file was written again (or removed) since this tab read it."""
        return file_stamp(self.path) != self.stamp

    def shutdown(self) -> None:
        if self.inspector is not None:
            self.inspector.release_file(self)
        if self.colour is not None:
            try:
                self.colour.currentTextChanged.disconnect(self._follow_colour)
            except (RuntimeError, TypeError):  # already gone with the window
                pass
            self.colour = None
        self.canvas.shutdown()


def file_stamp(path: Path) -> tuple[int, int] | None:
    """(modification time in ns, size in bytes) of ``path``; None when it cannot be read."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _window_part(window: QWidget | None, name: str, kind: type):
    """``window.<name>`` when it is a ``kind`` (the main window's colour combo, inspector), else None."""
    part = getattr(window, name, None)
    return part if isinstance(part, kind) else None
