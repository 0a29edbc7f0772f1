"""A quantized model shown as it is, in a tab of its own (View > Open Exported Model).

The tab holds the banner (how the file is quantized), a graph canvas in the "dtype" colour mode
with Q/DQ pairs folded into edge badges, and a line under it with the quantization parameters of
the clicked edge or node (scale, zero point, axis, block size as the file holds them).
:func:`quant_info` builds the texts the canvas shows on hover, for this tab and the main graph.
"""

from __future__ import annotations

from pathlib import Path

import onnx
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from workbench.core.api import (
    QuantSummary,
    QuantTensor,
    format_param,
    params_around_nodes,
    read_quant_params,
    summarize_quantization,
)
from workbench.core.errors import ModelError
from workbench.qt.canvas.view import GraphCanvas
from workbench.qt.quant_banner import QuantBanner


def quant_info(summary: QuantSummary, params: list[QuantTensor], proto) -> tuple[dict, dict, dict]:
    """(tensor -> parameter line, node -> integer kernel, node -> parameter lines, Q/DQ looked
    through) for :meth:`GraphCanvas.set_quant_info`; ``proto`` is the model ``params`` were read from."""
    tensor_info = {p.tensor: format_param(p) for p in params}
    node_info = {n: [format_param(p) for p in ps] for n, ps in params_around_nodes(proto, params).items()}
    return tensor_info, dict(summary.kernels), node_info


class QuantModelTab(QWidget):
    """Banner + canvas + parameter line for the quantized file ``path``.

    Raises
    ------
    ModelError
        ``path`` cannot be read as ONNX (the message names it).
    """

    def __init__(self, path: str | Path, parent: QWidget | None = None):
        super().__init__(parent)
        self.path = Path(path)
        try:
            self.proto = onnx.load(str(self.path))
        except Exception as exc:  # noqa: BLE001 - protobuf raises its own types
            raise ModelError(f"{self.path}: cannot read the model ({exc}).", hint="Export it again.") from None
        params = read_quant_params(self.proto)
        self.params = {p.tensor: p for p in params}
        self.summary = summarize_quantization(self.proto, params)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.banner = QuantBanner(self)
        self.banner.show_summary(self.summary, self.path.name)
        lay.addWidget(self.banner)
        self.canvas = GraphCanvas(self)
        self.canvas.set_quant_info(*quant_info(self.summary, params, self.proto))
        self.canvas.set_node_values(dtypes=self.summary.node_dtypes)
        self.canvas.set_color_mode("dtype")
        lay.addWidget(self.canvas, 1)
        self.details = QLabel("Click an edge or a node to see its scale and zero point.")
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details.setStyleSheet("font-family: monospace;")
        self.details.setWordWrap(True)
        lay.addWidget(self.details)
        self.canvas.edgeSelected.connect(self._on_edge)
        self.canvas.selectionChangedNames.connect(self._on_nodes)
        self.canvas.set_model(self.proto, collapse_qdq=True)

    def _on_edge(self, tensor: str) -> None:
        p = self.params.get(tensor)
        self.details.setText(f"{p.node}: {format_param(p)}" if p is not None else "This edge carries float.")

    def _on_nodes(self, names: list) -> None:
        by_node = params_around_nodes(self.proto, list(self.params.values()))
        lines = [f"{n}: {format_param(p)}" for n in names[:4] for p in by_node.get(n, [])]
        self.details.setText("\n".join(lines) or "No quantization parameters on the selection.")

    def shutdown(self) -> None:
        self.canvas.shutdown()
