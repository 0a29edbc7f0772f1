"""Float vs quantized: the diff tab (View > Compare Float vs Quantized, Ctrl+Shift+D).

Left, a tree of what :func:`workbench.core.api.diff_models` found: matched nodes (with how they
were matched and the SQNR of their output on the user's data), nodes left float, Q/DQ pairs
inserted, weight / bias DequantizeLinear, float nodes folded or fused (and the node they went
into), removed, and nodes the quantized file added. Right of it, two aligned panes
(:class:`~workbench.qt.diff_panes.DiffPanes`): the float graph and the quantized file's graph (Q/DQ
folded into edge badges), matched nodes at the same place in both, zoom, scroll and selection in
step; the quantized pane is coloured by the measured SQNR of each edge and node (legend: the SQNR
colour map and its thresholds), or by the dtype each edge carries when no data was given.
Clicking a row selects the pair in both panes. The panes' layout runs in a background job.
"""

from __future__ import annotations

import math
from pathlib import Path

import onnx
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QSplitter, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from workbench.core.api import ModelDiff, pane_layout, read_quant_params, summarize_quantization
from workbench.qt.diff_panes import DiffPanes
from workbench.qt.quant_tab import quant_info
from workbench.qt.workers import ThreadJob

COLUMNS = ["Float node", "SQNR (dB)", "Quantized node", "Op", "How"]
QUANT_COL = COLUMNS.index("Quantized node")
FLOAT_COL = COLUMNS.index("Float node")
#: the top-level groups of the tree, in order
GROUPS = ("matched", "left float", "Q/DQ pairs", "DQ without Q", "folded or fused", "removed", "added")


def _row(parent: QTreeWidgetItem, float_node: str, quant_node: str, op: str, db: str, how: str) -> QTreeWidgetItem:
    cells = {"Float node": float_node, "SQNR (dB)": db, "Quantized node": quant_node, "Op": op, "How": how}
    return QTreeWidgetItem(parent, [cells[t] for t in COLUMNS])


def _db_text(db: float | None) -> str:
    if db is None:
        return ""
    return "exact" if db == math.inf else f"{db:.2f}"


class DiffTab(QWidget):
    """The diff of ``float_name`` vs the quantized file ``path`` (``proto``).

    ``canvas`` is the quantized pane, ``float_canvas`` the float pane; :attr:`panesReady` is emitted
    when both are drawn (their layout, :func:`~workbench.core.api.pane_layout`, runs in a job).
    The float graph is ``diff.float_proto`` (kept by :func:`~workbench.core.api.diff_models`).
    """

    panesReady = Signal()

    def __init__(self, diff: ModelDiff, proto: onnx.ModelProto, path: str | Path, float_name: str,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.diff, self.proto, self.path = diff, proto, Path(path)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        measured = f"; SQNR on the data of {len(diff.sqnr)} tensors" if diff.sqnr else \
            "; no data set, so no SQNR (pick calibration data first)"
        self.header = QLabel(f"<b>{float_name}</b> vs <b>{self.path.name}</b>: {diff.summary()}{measured}.")
        self.header.setWordWrap(True)
        lay.addWidget(self.header)
        split = QSplitter(Qt.Orientation.Horizontal, self)
        lay.addWidget(split, 1)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(COLUMNS)
        self.tree.setSortingEnabled(False)
        split.addWidget(self.tree)
        float_proto = diff.float_proto if diff.float_proto is not None else proto
        self.panes = DiffPanes(diff, float_proto, proto, f"Float: {float_name}", f"Quantized: {self.path.name}")
        self.canvas, self.float_canvas = self.panes.quant_canvas, self.panes.float_canvas
        split.addWidget(self.panes)
        self.groups: dict[str, QTreeWidgetItem] = {}
        self._fill()
        for col in range(len(COLUMNS)):
            self.tree.resizeColumnToContents(col)
        split.setSizes([420, 1180])
        params = read_quant_params(proto)
        tensor_info, kernels, node_info = quant_info(summarize_quantization(proto, params), params, proto)
        for f, q in diff.tensors.items():
            if f in diff.sqnr:
                tensor_info[q] = f"SQNR {_db_text(diff.sqnr[f])} dB vs float {f}" + (
                    f"; {tensor_info[q]}" if q in tensor_info else "")
        self._quant_info = (tensor_info, kernels, node_info)
        self.tree.itemClicked.connect(self._on_item)
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

    def _show_panes(self, layout) -> None:
        if not self._closed:  # a tab closed while its layout ran draws nothing
            self.panes.show_layout(layout, self._quant_info)

    def _job_done(self) -> None:
        self._job = None

    def _group(self, key: str, count: int) -> QTreeWidgetItem:
        item = QTreeWidgetItem([f"{key} ({count})"])
        item.setFirstColumnSpanned(True)
        self.tree.addTopLevelItem(item)
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
                _row(g, m.float_node, m.quant_node, f"{m.float_op} -> {m.quant_op}"
                     if m.float_op != m.quant_op else m.float_op, _db_text(sqnr_of.get(m.quant_node)),
                     f"{m.how}, {m.status}")
        pairs = [p for p in d.qdq if p.quantize]
        lone = [p for p in d.qdq if not p.quantize]
        g = self._group("Q/DQ pairs", len(pairs))
        for p in pairs:
            _row(g, p.tensor, p.quantize, f"QuantizeLinear -> {len(p.dequantize)} DequantizeLinear", "",
                 f"{p.role} {p.dtype}")
        g = self._group("DQ without Q", len(lone))
        for p in lone:
            _row(g, p.tensor, p.dequantize[0], "DequantizeLinear", "", f"{p.role} {p.dtype}")
        for key, rows in (("folded or fused", d.folded), ("removed", d.removed), ("added", d.added)):
            g = self._group(key, len(rows))
            for name, op in rows:
                if key == "added":
                    _row(g, "", name, op, "", "")
                elif name in d.folded_into:
                    _row(g, name, d.folded_into[name], op, "", "folded into")
                else:
                    _row(g, name, "", op, "", "")
        for key in ("matched", "left float", "folded or fused"):
            self.groups[key].setExpanded(True)

    def rows(self, group: str) -> list[dict[str, str]]:
        """The rows under ``group`` (one of :data:`GROUPS`), each {column title: text}."""
        g = self.groups[group]
        return [{t: g.child(i).text(c) for c, t in enumerate(COLUMNS)} for i in range(g.childCount())]

    def _on_item(self, item: QTreeWidgetItem, _column: int) -> None:
        fname, qname = item.text(FLOAT_COL), item.text(QUANT_COL)
        if item.parent() in (self.groups.get("Q/DQ pairs"), self.groups.get("DQ without Q")):
            fname = ""  # the column holds the tensor the Q/DQ read, not a node
        if fname or qname:
            self.panes.select_pair(fname, qname)

    def shutdown(self) -> None:
        self._closed = True
        if self._job is not None:
            self._job.cancel()
        self.panes.shutdown()
