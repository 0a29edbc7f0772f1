"""Background job of the canvas: read the graph, lay it out, build the scene geometry."""

from __future__ import annotations

import logging
import traceback
from pathlib import Path

import onnx
from PySide6.QtCore import QObject, QRunnable, Signal

from workbench.core.api import edge_quantization, find_quantized, graph_structure, layout_graph
from workbench.core.errors import Cancelled, WorkbenchError
from workbench.core.progress import CancelToken
from workbench.qt.canvas.scene_data import build_scene_data

log = logging.getLogger(__name__)


class JobSignals(QObject):
    """Lives in the GUI thread; emitted from the worker, delivered queued."""

    finished = Signal(int, object)  # generation, SceneData
    failed = Signal(int, str)  # generation, message


class LayoutJob(QRunnable):
    """Runs :func:`graph_structure`, :func:`layout_graph` (when no positions) and
    :func:`build_scene_data` in a thread-pool thread."""

    def __init__(self, generation: int, proto: onnx.ModelProto, positions: dict | None, *,
                 collapse_qdq: bool, cache_dir: Path | None, cancel: CancelToken):
        super().__init__()
        self.setAutoDelete(False)
        self.generation = generation
        self.proto = proto
        self.positions = positions
        self.collapse_qdq = collapse_qdq
        self.cache_dir = cache_dir
        self.cancel = cancel
        self.signals = JobSignals()

    def run(self) -> None:
        try:
            data = prepare(self.proto, self.positions, collapse_qdq=self.collapse_qdq,
                           cache_dir=self.cache_dir, cancel=self.cancel)
        except Cancelled:
            return
        except WorkbenchError as exc:
            self.signals.failed.emit(self.generation, str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - report any crash of the job to the GUI, never lose it
            log.error("canvas layout failed:\n%s", traceback.format_exc())
            self.signals.failed.emit(self.generation, f"Graph layout failed: {exc.__class__.__name__}: {exc}")
            return
        if not self.cancel.cancelled:
            self.signals.finished.emit(self.generation, data)


def prepare(proto, positions, *, collapse_qdq=False, cache_dir=None, cancel=None):
    """Structure, positions (computed when ``positions`` is None) and scene geometry of ``proto``."""
    structure = graph_structure(proto, collapse_qdq=collapse_qdq)
    if positions is None:
        positions = layout_graph(structure, cache_dir=cache_dir, cancel=cancel)
    data = build_scene_data(structure, positions)
    if find_quantized(proto):  # the dtypes and quantized tensors the file's edges carry
        data.edge_quant = edge_quantization(proto, structure)
    return data
