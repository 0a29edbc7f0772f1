"""Float vs quantized: the diff tab (View > Compare Float vs Quantized, Ctrl+Shift+D).

Left, a tree of what :func:`workbench.core.api.diff_models` found: matched nodes (with how they
were matched and the SQNR of their output on the user's data), nodes left float, Q/DQ pairs
inserted, weight / bias DequantizeLinear, float nodes folded or fused (and the node they went
into), removed, and nodes the quantized file added. Right of it, two aligned panes
(:class:`~workbench.qt.diff_panes.DiffPanes`): the float graph and the quantized file's graph (Q/DQ
folded into edge badges), matched nodes at the same place in both, zoom, scroll and selection in
step; the quantized pane is coloured by the measured SQNR of each edge and node (legend: the SQNR
colour map and its thresholds), or by the dtype each edge carries when no data was given or it could not be
used (the header says why).
A click on a column title sorts each group's rows by it (SQNR by value, the worst first; the groups keep
their order); names too long for their column drop their shared start, then their middle, the whole name
in the tooltip (:mod:`workbench.qt.diff_rows`). Clicking a row selects the pair in both panes, centres it and shows it in the window's Inspector
(read-only: the quantization parameters the quantized file holds around it). The panes take most of
the tab (each at least :data:`MIN_PANE_SHARE` of it); the list opens as wide as its names and their SQNR
need, :data:`LIST_SHARE` to :data:`LIST_MAX_SHARE` of the tab (in a narrow tab, wider, for names up to
:data:`NAME_READABLE` px while each pane keeps :data:`MIN_PANE_WIDTH`), and the List button hides it. The panes open at the readable zoom on the graph's start (both graphs whole when they are
readable so); Fit graph (Ctrl+0, the Fit both button) and the zoom actions act on both panes. The panes' layout runs in
a background job.
"""

from __future__ import annotations

from pathlib import Path

import onnx
from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QStyle,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.core.api import ModelDiff, pane_layout, read_quant_params, summarize_quantization
from workbench.qt.compare_job import unmeasured_text
from workbench.qt.diff_panes import DiffPanes
from workbench.qt.diff_rows import (
    COLUMNS,
    FLOAT_COL,
    QUANT_COL,
    SQNR_COL,
    DiffRow,
    add_row,
    db_text,
    shorten_names,
)
from workbench.qt.inspector import FileSelection, Inspector
from workbench.qt.quant_tab import quant_info
from workbench.qt.workers import ThreadJob

#: the top-level groups of the tree, in order
GROUPS = ("matched", "left float", "Q/DQ pairs", "DQ without Q", "folded or fused", "removed", "added")
#: share of the tab's width the list takes at least when the tab opens (the panes share the rest; room for
#: a node name's telling segments and its SQNR)
LIST_SHARE = 0.18
#: share of the tab's width the list opens at most, to show names up to :data:`NAME_COLUMN_MAX` beside their SQNR:
#: at 0.18 (188 px of the default window's tab) minilm's names were cut twice ("…emb…ape", "…word…ther")
LIST_MAX_SHARE = 0.26
#: the least share of the tab's width each pane gets, where the tab has room for :data:`NAME_READABLE`
MIN_PANE_SHARE = 0.36
#: width of the list's name column that shows node names whole, px, given it before :data:`MIN_PANE_SHARE` in a
#: narrow tab: ppocrv4_rec's names but 8 of 860 (at 108 px, a 1024x700 window's share, 61 of its 378 matched rows were
#: shortened, "p2o.BatchNormalization.0" to "…Batc…on.0")
NAME_READABLE = 160
#: the least width each pane keeps when the list takes :data:`NAME_READABLE`, px
MIN_PANE_WIDTH = 220
#: widest the list's name columns open, px (longer node names are shortened, :mod:`workbench.qt.diff_rows`)
NAME_COLUMN_MAX = 200
#: narrowest the list's first column opens, px: at the list's opening width the SQNR column shows beside
#: it (no sideways scroll), the names shortened to stay apart (:mod:`workbench.qt.diff_rows`)
NAME_COLUMN_MIN = 80
#: the SQNR column's title (its unit, dB, in the title's tooltip)
SQNR_TITLE = "SQNR"
#: the list's indentation per level, px (Qt's default 20 took 40 px of a 150 px list)
LIST_INDENT = 10


class DiffTab(QWidget):
    """The diff of ``float_name`` vs the quantized file ``path`` (``proto``).

    ``canvas`` is the quantized pane, ``float_canvas`` the float pane; :attr:`panesReady` is emitted
    when both are drawn (their layout, :func:`~workbench.core.api.pane_layout`, runs in a job).
    The float graph is ``diff.float_proto`` (kept by :func:`~workbench.core.api.diff_models`).
    ``inspector``: where a row's node is shown (default: the ``inspector`` of ``parent``'s window).
    """

    panesReady = Signal()

    def __init__(self, diff: ModelDiff, proto: onnx.ModelProto, path: str | Path, float_name: str,
                 parent: QWidget | None = None, *, inspector: Inspector | None = None):
        super().__init__(parent)
        self.diff, self.proto, self.path = diff, proto, Path(path)
        self.float_name = float_name
        window = parent.window() if parent is not None else None
        found = getattr(window, "inspector", None)
        self.inspector = inspector if inspector is not None else (found if isinstance(found, Inspector) else None)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        samples = getattr(diff, "samples", 0)
        on = f" ({samples} samples; Calibration panel, Analysis samples)" if samples else ""
        measured = f"; SQNR on the data of {len(diff.sqnr)} tensors{on}" if diff.sqnr else \
            f"; {unmeasured_text(diff.no_sqnr)}" if getattr(diff, "no_sqnr", "") else \
            "; no data set, so no SQNR (pick calibration data first)"
        self.header = QLabel(f"<b>{float_name}</b> vs <b>{self.path.name}</b>: {diff.summary()}{measured}.")
        self.header.setWordWrap(True)
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.header, 1)
        self.list_button = self._button("List", "Show or hide the list of matched, folded, removed and added nodes")
        self.legend_button = self._button("Legend", "Show or hide the key of both panes (View > Legend, Ctrl+L)")
        self.fit_button = QPushButton("Fit both")
        self.fit_button.setToolTip("Show both graphs whole, at one zoom (Fit graph, Ctrl+0; Home in a pane)")
        for b in (self.list_button, self.legend_button, self.fit_button):
            top.addWidget(b, 0, Qt.AlignmentFlag.AlignTop)
        lay.addLayout(top)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        lay.addWidget(split, 1)
        self.split = split
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(COLUMNS)
        header_item = self.tree.headerItem()  # "SQNR (dB)" took 95 px of a 175 px list: its unit in the tooltip
        header_item.setText(SQNR_COL, SQNR_TITLE)
        header_item.setToolTip(SQNR_COL, "SQNR of the node's output against the float model's, dB")
        self.tree.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # "p2o.Batc…ization.0": the end tells them apart
        self.tree.setIndentation(LIST_INDENT)  # the narrow list's room goes to the names
        split.addWidget(self.tree)
        float_proto = diff.float_proto if diff.float_proto is not None else proto
        self.float_proto = float_proto
        self.panes = DiffPanes(diff, float_proto, proto, f"Float: {float_name}", f"Quantized: {self.path.name}",
                               shared_key=True)
        self.canvas, self.float_canvas = self.panes.quant_canvas, self.panes.float_canvas
        split.addWidget(self.panes)
        split.setStretchFactor(0, 0)
        split.setStretchFactor(1, 1)
        self.groups: dict[str, QTreeWidgetItem] = {}
        self._fill()
        shorten_names(self.tree)
        self.tree.header().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)  # as found until a title is clicked
        self.tree.setSortingEnabled(True)  # a click on a column title sorts each group's rows by it
        for col in range(len(COLUMNS)):
            self.tree.resizeColumnToContents(col)
        for col in (FLOAT_COL, QUANT_COL):  # longer names shortened (diff_rows), not cut by the list's edge
            self.tree.setColumnWidth(col, min(self.tree.columnWidth(col), NAME_COLUMN_MAX))
        self._list_share_set = False
        self.list_button.toggled.connect(self._show_list)
        self.legend_button.toggled.connect(self.panes.set_key_visible)
        self.panes.key.installEventFilter(self)  # View > Legend hides the key: the button follows
        self.fit_button.clicked.connect(self.fit)
        params = read_quant_params(proto)
        self._params = params
        self._op_types = {n.name: n.op_type for n in proto.graph.node}
        self._float_op_types = {n.name: n.op_type for n in float_proto.graph.node}
        tensor_info, kernels, node_info = quant_info(summarize_quantization(proto, params), params, proto)
        for f, q in diff.tensors.items():
            if f in diff.sqnr:
                tensor_info[q] = f"SQNR {db_text(diff.sqnr[f])} dB vs float {f}" + (
                    f"; {tensor_info[q]}" if q in tensor_info else "")
        self._quant_info = (tensor_info, kernels, node_info)
        self.tree.itemClicked.connect(self._on_item)
        self.tree.currentItemChanged.connect(lambda item, _before: item is not None and self._on_item(item, 0))
        self.canvas.selectionChangedNames.connect(self._show_in_inspector)
        self.float_canvas.selectionChangedNames.connect(self._show_in_inspector)
        self.panes.ready.connect(self.panesReady)
        self._job: ThreadJob | None = ThreadJob(
            lambda progress, cancel: pane_layout(float_proto, proto, diff, cancel=cancel),
            title=f"Laying out the panes of {self.path.name}", parent=self)
        self._closed = False
        self._job.succeeded.connect(self._show_panes)
        self._job.failed.connect(lambda err: self.panes.status.setText(
            f"The panes could not be laid out: {err}"))
        self._job.finished.connect(self._job_done)
        self._job.start()

    @staticmethod
    def _button(text: str, tip: str) -> QPushButton:
        b = QPushButton(text)
        b.setCheckable(True)
        b.setChecked(True)
        b.setToolTip(tip)
        return b

    # ------------------------------------------------------------------ room for the panes
    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._size_list_once()

    def _size_list_once(self) -> None:
        """The list as wide as its name column (names up to :data:`NAME_COLUMN_MAX` whole) and the SQNR
        column beside it need, between :data:`LIST_SHARE` and :data:`LIST_MAX_SHARE` of the splitter's width, and
        wide enough for a :data:`NAME_READABLE` name column while each pane keeps :data:`MIN_PANE_WIDTH`, once it
        has a width (the tab shown); later the user's splitter position stands."""
        if self._list_share_set or not self.isVisible() or self.split.width() <= 0:
            return
        self._list_share_set = True
        width = self.split.width() - self.split.handleWidth()
        sqnr = self.tree.columnWidth(SQNR_COL)
        bar = self.tree.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent, None, self.tree)
        chrome = 2 * self.tree.frameWidth() + bar  # the list's frame and its vertical scroll bar
        wanted = self.tree.columnWidth(FLOAT_COL) + sqnr + chrome
        panes = width - self.panes.split.handleWidth()  # the room of both panes, would the list take none
        readable = min(wanted, NAME_READABLE + sqnr + chrome, panes - 2 * MIN_PANE_WIDTH)
        share = max(int(width * LIST_SHARE), min(wanted, int(width * LIST_MAX_SHARE)), readable)
        self.split.setSizes([share, width - share])
        # longer node names shortened (diff_rows), so the SQNR column shows whole beside them
        room = share - chrome  # the list's viewport
        self.tree.setColumnWidth(FLOAT_COL, min(self.tree.columnWidth(FLOAT_COL), max(NAME_COLUMN_MIN, room - sqnr)))

    def _show_list(self, shown: bool) -> None:
        self.tree.setVisible(shown)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt override
        if watched is self.panes.key and event.type() in (QEvent.Type.Show, QEvent.Type.Hide):
            self.legend_button.blockSignals(True)
            self.legend_button.setChecked(self.panes.key_visible())
            self.legend_button.blockSignals(False)
        return False

    # ------------------------------------------------------------------ the window's view actions
    def fit(self) -> None:
        """Fit graph: both graphs whole at one zoom (:meth:`DiffPanes.fit`)."""
        self.panes.fit()

    def zoom_in(self) -> None:
        self.panes.zoom_in()

    def zoom_out(self) -> None:
        self.panes.zoom_out()

    # ------------------------------------------------------------------ the Inspector
    def selection(self) -> FileSelection:
        """What the Inspector shows for this tab: the quantized pane's selection in the quantized file, else
        the float pane's in the float model (a removed node has no quantized partner)."""
        quant, floats = self.canvas.selected_nodes(), self.float_canvas.selected_nodes()
        if floats and not quant:
            return FileSelection(owner=self, name=self.float_name, proto=self.float_proto, params=[],
                                 op_types=self._float_op_types, nodes=floats)
        return FileSelection(owner=self, name=self.path.name, proto=self.proto, params=list(self._params),
                             op_types=self._op_types, nodes=quant)

    def _show_in_inspector(self, *_args) -> None:
        if self.inspector is not None and self.isVisible():
            self.inspector.show_file(self.selection())

    def showEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        self._size_list_once()
        if not event.spontaneous():  # the tab became the current one
            self._show_in_inspector()

    def hideEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().hideEvent(event)
        if not event.spontaneous() and self.inspector is not None:
            self.inspector.release_file(self)

    def _show_panes(self, layout) -> None:
        if not self._closed:  # a tab closed while its layout ran draws nothing
            self.panes.show_layout(layout, self._quant_info)

    def _job_done(self) -> None:
        self._job = None

    def _group(self, key: str, count: int) -> QTreeWidgetItem:
        item = DiffRow(None, [f"{key} ({count})"], group=len(self.groups))
        self.tree.addTopLevelItem(item)
        item.setFirstColumnSpanned(True)  # once in the tree: set before, Qt ignored it ("matc... (7)")
        self.groups[key] = item
        return item

    def _fill(self) -> None:
        d = self.diff
        sqnr_of = {d.producers[t]: db for t, db in d.sqnr.items() if t in d.producers}
        matched = [m for m in d.matches if m.status != "float"]
        left = [m for m in d.matches if m.status == "float"]
        for key, rows in (("matched", matched), ("left float", left)):
            g = self._group(key, len(rows))
            for m in rows:
                add_row(g, m.float_node, m.quant_node, f"{m.float_op} -> {m.quant_op}"
                     if m.float_op != m.quant_op else m.float_op, sqnr_of.get(m.quant_node),
                     f"{m.how}, {m.status}")
        pairs = [p for p in d.qdq if p.quantize]
        lone = [p for p in d.qdq if not p.quantize]
        g = self._group("Q/DQ pairs", len(pairs))
        for p in pairs:
            add_row(g, p.tensor, p.quantize, f"QuantizeLinear -> {len(p.dequantize)} DequantizeLinear", None,
                 f"{p.role} {p.dtype}")
        g = self._group("DQ without Q", len(lone))
        for p in lone:
            add_row(g, p.tensor, p.dequantize[0], "DequantizeLinear", None, f"{p.role} {p.dtype}")
        for key, rows in (("folded or fused", d.folded), ("removed", d.removed), ("added", d.added)):
            g = self._group(key, len(rows))
            for name, op in rows:
                if key == "added":
                    add_row(g, "", name, op, None, "")
                elif name in d.folded_into:
                    add_row(g, name, d.folded_into[name], op, None, "folded into")
                else:
                    add_row(g, name, "", op, None, "")
        for key in ("matched", "left float", "folded or fused"):
            self.groups[key].setExpanded(True)

    def rows(self, group: str) -> list[dict[str, str]]:
        """The rows under ``group`` (one of :data:`GROUPS`), each {column title: text}."""
        g = self.groups[group]
        return [{t: g.child(i).text(c) for c, t in enumerate(COLUMNS)} for i in range(g.childCount())]

    def _on_item(self, item: QTreeWidgetItem, _column: int) -> None:
        if item.parent() is None:
            return  # a group's title row
        fname, qname = item.text(FLOAT_COL), item.text(QUANT_COL)
        if item.parent() in (self.groups.get("Q/DQ pairs"), self.groups.get("DQ without Q")):
            fname = ""  # the column holds the tensor the Q/DQ read, not a node
        if fname or qname:
            self.panes.select_pair(fname, qname)
        self._show_in_inspector()

    def shutdown(self) -> None:
        self._closed = True
        if self.inspector is not None:
            self.inspector.release_file(self)
        if self._job is not None:
            self._job.cancel()
        self.panes.shutdown()
