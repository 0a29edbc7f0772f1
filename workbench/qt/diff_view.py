"""Float vs quantized: the diff tab (Run > Compare Float vs Quantized, Ctrl+Shift+D).

Left, a tree of what :func:`workbench.core.api.diff_models` found: matched nodes (with how they
were matched and the SQNR of their output on the user's data), nodes left float, Q/DQ pairs
inserted, weight / bias DequantizeLinear, float nodes folded or fused, removed, and nodes the
quantized file added. Right, the quantized file's graph (Q/DQ folded into edge badges) coloured by
the measured SQNR: each edge by the SQNR of the tensor it carries, each node by that of its output
(legend: the SQNR colour map); hovering an edge shows its SQNR. Clicking a row selects its node in the graph.
"""

from __future__ import annotations

import math
from pathlib import Path

import onnx
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSplitter, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from workbench.core.api import ModelDiff, read_quant_params, summarize_quantization
from workbench.qt.canvas.view import GraphCanvas
from workbench.qt.quant_tab import quant_info

COLUMNS = ["Float node", "SQNR (dB)", "Quantized node", "Op", "How"]
QUANT_COL = COLUMNS.index("Quantized node")
#: the top-level groups of the tree, in order
GROUPS = ("matched", "left float", "Q/DQ pairs", "DQ without Q", "folded or fused", "removed", "added")
#: colour-map value shown for a bit-exact tensor (+inf dB)
INF_DB = 100.0


def _row(parent: QTreeWidgetItem, float_node: str, quant_node: str, op: str, db: str, how: str) -> QTreeWidgetItem:
    cells = {"Float node": float_node, "SQNR (dB)": db, "Quantized node": quant_node, "Op": op, "How": how}
    return QTreeWidgetItem(parent, [cells[t] for t in COLUMNS])


def _db_text(db: float | None) -> str:
    if db is None:
        return ""
    return "exact" if db == math.inf else f"{db:.2f}"


class DiffTab(QWidget):
    """The diff of ``float_name`` vs the quantized file ``path`` (``proto``)."""

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
        self.canvas = GraphCanvas(self)
        split.addWidget(self.canvas)
        self.groups: dict[str, QTreeWidgetItem] = {}
        self._fill()
        for col in range(len(COLUMNS)):
            self.tree.resizeColumnToContents(col)
        split.setSizes([560, 640])
        params = read_quant_params(proto)
        tensor_info, kernels, node_info = quant_info(summarize_quantization(proto, params), params, proto)
        for f, q in diff.tensors.items():
            if f in diff.sqnr:
                tensor_info[q] = f"SQNR {_db_text(diff.sqnr[f])} dB vs float {f}" + (
                    f"; {tensor_info[q]}" if q in tensor_info else "")
        self.canvas.set_quant_info(tensor_info, kernels, node_info)
        values = {n: (INF_DB if db == math.inf else db) for n, db in diff.node_sqnr().items() if db > -math.inf}
        self.canvas.set_node_values(errors=values, error_label="SQNR vs float (dB)")
        # each edge carries a tapped tensor of the quantized file: its measured SQNR colours it
        self.canvas.set_edge_values({diff.tensors[f]: (INF_DB if db == math.inf else db)
                                     for f, db in diff.sqnr.items() if db > -math.inf and f in diff.tensors})
        self.canvas.set_color_mode("error")
        self.canvas.set_model(proto, collapse_qdq=True)
        self.tree.itemClicked.connect(self._on_item)

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
                else:
                    _row(g, name, "", op, "", "")
        for key in ("matched", "left float", "folded or fused"):
            self.groups[key].setExpanded(True)

    def rows(self, group: str) -> list[dict[str, str]]:
        """The rows under ``group`` (one of :data:`GROUPS`), each {column title: text}."""
        g = self.groups[group]
        return [{t: g.child(i).text(c) for c, t in enumerate(COLUMNS)} for i in range(g.childCount())]

    def _on_item(self, item: QTreeWidgetItem, _column: int) -> None:
        name = item.text(QUANT_COL)
        if name:
            self.canvas.select_nodes([name], center=True)

    def shutdown(self) -> None:
        self.canvas.shutdown()
