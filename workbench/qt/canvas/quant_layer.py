"""What the canvas shows of an already-quantized model (a mixin of ``GraphCanvas``).

* edges coloured by the dtype they carry (:class:`DtypeEdgesItem`, shown in the "dtype" mode);
* integer kernels marked on their nodes ("INT" pill; QDQ units onnxruntime fuses into one too);
* edges can be hovered (tooltip: dtype, scale, zero point, axis, block size read from the file)
  and clicked (``edgeSelected(tensor)``; the inspector shows that tensor's parameters).

Edge hit tests use the point at t = 1/2 of each edge's curve (where collapsed Q/DQ badges sit on
edges that do not bow).
"""

from __future__ import annotations

import html

import numpy as np
from PySide6.QtCore import QPoint
from PySide6.QtGui import QColor

from workbench.qt.canvas import colors
from workbench.qt.canvas.edge_colors import NEUTRAL, DtypeEdgesItem, ErrorEdgesItem, edge_midpoint
from workbench.qt.canvas.items import EDGE_COLOR

#: how close (view pixels) the mouse must be to an edge's midpoint to hit it
EDGE_HIT_PX = 14.0


class CanvasQuant:
    """Edge dtypes, kernel marks, edge hover and selection; expects ``GraphCanvas``'s attributes."""

    def _quant_init(self) -> None:
        self._dtype_edges: DtypeEdgesItem | None = None
        self._kernels: dict[str, str] = {}
        self._compute: dict[str, str] = {}
        self._tensor_info: dict[str, str] = {}
        self._node_info: dict[str, list[str]] = {}
        self._edge_errors: dict[str, float] = {}
        self._error_edges: ErrorEdgesItem | None = None
        self._selected_edge: int | None = None
        self._mids: np.ndarray | None = None

    def set_quant_info(self, tensor_info: dict[str, str], kernels: dict[str, str],
                       node_info: dict[str, list[str]] | None = None, compute: dict[str, str] | None = None) -> None:
        """Per quantized tensor a line of its parameters (tooltips of edges), node -> integer
        kernel ("QLinearConv", "QDQ -> QLinearConv") for the "INT" marks, and node -> lines of the
        parameters it reads or writes (node tooltips). {} clears.

        ``compute`` (``QuantSummary.compute``: node -> ``"uint8/int8"``, activation/weight) is given for
        a model quantized elsewhere: its group boxes in the dtype mode then say which quantized kernels
        they hold ("ConvInteger u8/u8") instead of the fraction of their nodes quantized."""
        self._tensor_info = dict(tensor_info)
        self._node_info = dict(node_info or {})
        self._kernels = dict(kernels)
        compute = dict(compute or {})
        changed, self._compute = compute != self._compute, compute
        if self._state is not None:
            self._apply_kernels()
            if changed:
                self._refresh_fills()  # the group boxes' texts name the kernels

    def set_edge_values(self, errors: dict[str, float]) -> None:
        """Tensor -> SQNR (dB) measured on it: the edges carrying those tensors take the SQNR colour
        in the "error" mode (the float-vs-quantized diff). {} clears."""
        self._edge_errors = {k: float(v) for k, v in errors.items()}
        if self._state is not None:
            self._install_error_edges()

    def _install_error_edges(self) -> None:
        if self._error_edges is not None:
            self.scene().removeItem(self._error_edges)
            self._error_edges = None
        if not self._edge_errors:
            return
        values = [self._edge_errors.get(t) for t in self._state.data.structure.edge_tensors]
        self._error_edges = ErrorEdgesItem(self._state.data, values)
        self._error_edges.setVisible(self._mode == "error")
        self.scene().addItem(self._error_edges)

    def edge_error(self, e: int) -> float | None:
        """SQNR (dB) of edge ``e`` given by :meth:`set_edge_values`, or None."""
        return self._edge_errors.get(self._state.data.structure.edge_tensors[e]) if self._state else None

    def _map_kernels(self) -> None:
        """The state's node-index maps of the kernels and quantized compute nodes."""
        index = self._state.data.index
        self._state.kernels = {index[n]: k for n, k in self._kernels.items() if n in index}
        self._state.compute = {index[n]: d for n, d in self._compute.items() if n in index}

    def _apply_kernels(self) -> None:
        self._map_kernels()
        for item in self._items.values():
            item.update()
        if self._overview is not None:  # its kernel bars
            self._overview.update()

    def _install_quant_items(self) -> None:
        """Called by ``_show``: the coloured edges of the new scene and the kernel marks."""
        data = self._state.data
        self._selected_edge, self._mids = None, None
        self._dtype_edges, self._error_edges = None, None
        self._apply_kernels()
        self._install_error_edges()
        if data.edge_quant is None:
            return
        self._dtype_edges = DtypeEdgesItem(data, data.edge_quant.dtypes)
        self._dtype_edges.setVisible(self._mode == "dtype")
        self.scene().addItem(self._dtype_edges)

    def _sync_quant_mode(self) -> None:
        if self._dtype_edges is not None:
            self._dtype_edges.setVisible(self._mode == "dtype")
        if self._error_edges is not None:
            self._error_edges.setVisible(self._mode == "error")

    # ----------------------------------------------------------------- edges
    def edge_count(self) -> int:
        return len(self._state.data.structure.edges) if self._state else 0

    def edge_index(self, producer: str, consumer: str) -> int:
        """Index of the drawn edge ``producer -> consumer``. Raises KeyError when there is none."""
        if self._state is None:
            raise KeyError((producer, consumer))
        index = self._state.data.index
        pair = (index[producer], index[consumer])
        return self._state.data.structure.edges.index(pair) if pair in self._state.data.structure.edges \
            else _missing(producer, consumer)

    def edge_dtype(self, e: int) -> str:
        """The dtype edge ``e`` carries (the file's truth for a quantized model; "" when not known)."""
        q = self._state.data.edge_quant if self._state else None
        return q.dtypes[e] if q is not None else ""

    def edge_tensor(self, e: int) -> str:
        """The quantized tensor of edge ``e`` ("" when it carries none)."""
        q = self._state.data.edge_quant if self._state else None
        return q.tensors[e] if q is not None else ""

    def edge_color(self, e: int) -> QColor:
        """The colour edge ``e`` is drawn with now (the dtype's in the "dtype" mode, else grey)."""
        if self._mode == "error" and self._error_edges is not None and self.edge_error(e) is not None:
            return colors.error_color(round(self.edge_error(e) * 4) / 4)
        dtype = self.edge_dtype(e)
        if self._mode != "dtype" or self._dtype_edges is None or dtype in NEUTRAL:
            return QColor(EDGE_COLOR)
        return colors.dtype_color(dtype)

    def edge_colour_keys(self) -> list[str]:
        """The dtypes that have coloured edges now (for the legend)."""
        return self._dtype_edges.dtypes_drawn() if self._dtype_edges is not None else []

    def _edge_at(self, pos: QPoint) -> int | None:
        if self._state is None or not self._state.data.structure.edges:
            return None
        if self._mids is None:  # edges inside one collapsed box are never hit
            d = self._state.data
            mids = [edge_midpoint(d, e) for e in range(len(d.structure.edges))]
            self._mids = np.array([m if m is not None else (np.inf, np.inf) for m in mids], dtype=np.float64)
        p = self.mapToScene(pos)
        dist = np.hypot(self._mids[:, 0] - p.x(), self._mids[:, 1] - p.y())
        best = int(np.argmin(dist))
        return best if dist[best] * self._scale() <= EDGE_HIT_PX else None

    def select_edge(self, e: int | None) -> None:
        """Select edge ``e`` (None clears); emits ``edgeSelected`` with its quantized tensor ("" none)."""
        if self._state is None:
            return
        if e is not None:
            self._set_selection(set())
        self._selected_edge = e
        for item in (self._dtype_edges, self._error_edges):
            if item is not None:
                item.set_selected_edge(e)
        self._minimap.selection_changed()
        self.edgeSelected.emit(self.edge_tensor(e) if e is not None else "")

    def selected_edge(self) -> int | None:
        return self._selected_edge

    def edge_tooltip(self, e: int) -> str:
        """Rich text: the edge's end nodes, tensor, dtype and the quantization parameters of the file."""
        st = self._state.data.structure
        a, b = st.edges[e]
        lines = [f"<b>{html.escape(st.names[a])}</b> &rarr; <b>{html.escape(st.names[b])}</b>",
                 f"tensor {html.escape(st.edge_tensors[e])}"]
        dtype = self.edge_dtype(e)
        if dtype:
            lines.append(f"carries: {html.escape(dtype)}")
        if e in st.edge_badges:
            lines.append(f"collapsed Q/DQ: {html.escape(st.edge_badges[e])}")
        for key in dict.fromkeys((st.edge_tensors[e], self.edge_tensor(e))):
            info = self._tensor_info.get(key)
            if info:
                lines.append(html.escape(info))
        return "<br>".join(lines)

    def _node_quant_lines(self, name: str) -> list[str]:
        kernel = self._kernels.get(name)
        lines = [f"integer kernel: {html.escape(kernel)}"] if kernel else []
        return lines + [html.escape(t) for t in self._node_info.get(name, [])[:6]]


def _missing(producer: str, consumer: str) -> int:
    raise KeyError((producer, consumer))
