"""Read-only "Quantization parameters" group of the node inspector, for already-quantized models.

Shows, for the selected nodes, what :func:`workbench.core.inspection.quant_reader.read_quant_params`
recovers from the model (dtype, scale, zero point, axis, block size of every quantized tensor the
node reads or writes). Hidden for float models and for nodes without quantized tensors.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGroupBox, QLabel, QVBoxLayout, QWidget

from workbench.core.api import QuantTensor, format_param, params_around_nodes
from workbench.core.wording import count
from workbench.qt.break_marks import breakable, keep_copies_clean

log = logging.getLogger(__name__)

MAX_NODES = 8


def quant_params_text(by_node: dict[str, list[QuantTensor]], nodes: list[str]) -> str:
    """Plain text for the selected ``nodes``: a header line per node and one line per tensor."""
    lines: list[str] = []
    shown = [n for n in nodes if by_node.get(n)]
    for n in shown[:MAX_NODES]:
        lines.append(f"{n}:")
        lines += [f"  {format_param(p)}" for p in by_node[n]]
    if len(shown) > MAX_NODES:
        lines.append(f"... {count(len(shown) - MAX_NODES, 'more node')}")
    return "\n".join(lines)


class WrappingLabel(QLabel):
    """A word-wrapped label whose long names wrap at their dots, underscores, colons and slashes
    (:func:`workbench.qt.break_marks.breakable`) instead of widening the panel; :meth:`text` returns the text
    as set, without the marks."""

    def setText(self, text: str) -> None:  # noqa: N802 (Qt's name)
        self._plain = text
        super().setText(breakable(text))

    def text(self) -> str:
        return getattr(self, "_plain", "")


class QuantParamsBox(QGroupBox):
    """The group; :meth:`show_nodes` fills it from the document's model (read once per model). Its title is
    short enough for the inspector of a 1024 px window; it fits the panel's width however long the tensor
    names are (they wrap)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Quantization parameters", parent)
        self.setToolTip("Read from the model file: the dtype, scale and zero_point of each quantized tensor the "
                        "selected nodes read or write")
        lay = QVBoxLayout(self)
        self.label = WrappingLabel()
        self.label.setWordWrap(True)
        self.label.setMinimumWidth(1)  # the text wraps; the panel never scrolls sideways
        keep_copies_clean()
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.label.setStyleSheet("font-family: monospace;")
        lay.addWidget(self.label)
        self._model = None
        self._by_node: dict[str, list[QuantTensor]] = {}
        self.setVisible(False)

    def show_tensor(self, param: QuantTensor | None, tensor: str) -> None:
        """Show the parameters of one quantized tensor (a selected edge); None: "not quantized"."""
        self.label.setText(f"{param.node}:\n  {format_param(param)}" if param is not None
                           else f"{tensor or 'this edge'}: not quantized (float)")
        self.setVisible(True)

    def show_file_nodes(self, proto, nodes: list[str], params: list[QuantTensor]) -> None:
        """Show the parameters of ``nodes`` of the ONNX model ``proto`` (a file shown in a tab of its
        own, not the open model); ``params``: its :func:`read_quant_params`."""
        if proto is not self._model:
            self._model = proto
            self._by_node = params_around_nodes(proto, params)
        text = quant_params_text(self._by_node, nodes)
        self.label.setText(text)
        self.setVisible(bool(text))

    def show_nodes(self, model, nodes: list[str], params: list[QuantTensor] | None = None) -> None:
        """Show the recovered parameters of ``nodes`` of ``model`` (a PreparedModel or None);
        ``params``: its :func:`read_quant_params` when the caller has them (read once per model)."""
        if model is None or not getattr(model, "quantized", None):
            self._model, self._by_node = None, {}
        elif model is not self._model:
            self._model = model
            self._by_node = params_around_nodes(model.proto, params)  # Q/DQ looked through
        text = quant_params_text(self._by_node, nodes)
        self.label.setText(text)
        self.setVisible(bool(text))
