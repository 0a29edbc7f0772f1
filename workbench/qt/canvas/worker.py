"""Background job of the canvas: read the graph, lay it out and build the scene geometry in a
child process.

Why a process: a thread of the GUI process holds the GIL while it works (and during long C calls
such as igraph's ``layout_sugiyama`` or protobuf parsing it never lets go), so on a loaded machine
the GUI thread waited 20-300 ms at a time for a worker thread the OS had not scheduled. A child
process competes with the GUI for CPU only.

How: :class:`LayoutJob` (a ``QRunnable`` in the canvas's one-thread pool, so the waiting happens
off the GUI thread) starts a child from multiprocessing's *forkserver*, whose server process
imports this module and igraph once (:func:`warm_up`, called when a canvas is made), so a job
starts in tens of milliseconds instead of paying those imports each time; where forkserver is not
available (Windows, frozen bundles) the child is spawned. The model travels as :func:`proto_pieces`
(serialized in pieces by the GUI between events; initializers without their values, which the
layout never reads); the result comes back as ``transfer.split`` pieces, which
the GUI unpickles a few at a time. Cancel kills the child. The one step that reads tensor values,
``edge_quantization`` of an already-quantized model, runs in the GUI process
(:class:`EdgeQuantJob`) on the full model.
"""

from __future__ import annotations

import gc
import logging
import multiprocessing as mp
import signal
import sys
import traceback
from collections.abc import Iterator
from multiprocessing import forkserver
from pathlib import Path

import onnx
from PySide6.QtCore import QObject, QRunnable, Signal

from workbench.core.api import (
    auto_depth,
    build_hierarchy,
    edge_quantization,
    expanded_to_depth,
    find_quantized,
    graph_structure,
    layout_routed,
    plan_group_layout,
)
from workbench.core.errors import Cancelled, WorkbenchError
from workbench.core.progress import CancelToken
from workbench.qt.canvas.scene_data import build_scene_data
from workbench.qt.canvas.transfer import split

log = logging.getLogger(__name__)

#: Nodes, value infos or initializers serialized per piece of :func:`proto_pieces`.
PROTO_PIECE = 500
#: Modules the forkserver imports once, so each layout child starts without importing them.
#: ``__main__`` too: multiprocessing's children import the parent's main module (a script's
#: ``if __name__ == "__main__":`` block does not run there); imported once in the server, the
#: children it forks find it there already.
PRELOAD = ["__main__", "workbench.qt.canvas.worker", "igraph"]
#: How often (seconds) the waiting pool thread looks at the cancel flag.
POLL_S = 0.02

_context: mp.context.BaseContext | None = None


def layout_context() -> mp.context.BaseContext:
    """The multiprocessing context of layout children: forkserver (preloading :data:`PRELOAD`)
    where the platform has it, else spawn (also in a frozen bundle, where ``freeze_support``
    handles spawn's children)."""
    global _context
    if _context is None:
        if "forkserver" in mp.get_all_start_methods() and not getattr(sys, "frozen", False):
            ctx = mp.get_context("forkserver")
            ctx.set_forkserver_preload(PRELOAD)
        else:
            ctx = mp.get_context("spawn")
        _context = ctx
    return _context


def warm_up() -> None:
    """Start the forkserver now (it imports :data:`PRELOAD` in its own process, in the background),
    so the first layout does not wait for those imports. Does nothing with spawn."""
    if layout_context().get_start_method() == "forkserver":
        try:
            forkserver.ensure_running()
        except OSError as exc:  # the first layout tries again and reports a failure as one line
            log.warning("could not start the layout process server: %s", exc)


def proto_pieces(proto: onnx.ModelProto) -> Iterator[bytes]:
    """Serialized pieces of ``proto`` whose concatenation (``ModelProto.MergeFromString`` of each)
    is the model the layout needs: ir_version, opsets and the main graph's inputs, outputs, value
    infos, nodes (subgraphs inside) and initializers as name, dtype and dims only (the layout never
    reads their values; ``ByteSize`` or copying them would cost as much as serializing the weights,
    0.4 s for minilm_l6_v2's 86 MB). Each piece is a few short C calls (a generator: the GUI
    serializes between events)."""
    head = onnx.ModelProto()
    head.ir_version = proto.ir_version
    head.opset_import.extend(proto.opset_import)
    head.graph.name = proto.graph.name
    yield head.SerializeToString()
    g = proto.graph
    for name in ("input", "output", "value_info", "node"):
        items = getattr(g, name)
        for i in range(0, len(items), PROTO_PIECE):
            part = onnx.ModelProto()
            getattr(part.graph, name).extend(items[i:i + PROTO_PIECE])
            yield part.SerializeToString()
    for i in range(0, len(g.initializer), PROTO_PIECE):
        part = onnx.ModelProto()
        for t in g.initializer[i:i + PROTO_PIECE]:
            light = part.graph.initializer.add()
            light.name, light.data_type = t.name, t.data_type
            light.dims.extend(t.dims)
        yield part.SerializeToString()


class JobSignals(QObject):
    """Lives in the GUI thread; emitted from the pool thread, delivered queued."""

    finished = Signal(int, object)  # generation, (scene pieces, quantized) / EdgeQuant
    failed = Signal(int, str)  # generation, message


class LayoutJob(QRunnable):
    """Runs :func:`child_main` in a child process and waits for it in a thread-pool thread.

    ``pieces`` come from :func:`proto_pieces`; ``options`` are :func:`prepare`'s keywords. Emits
    ``signals.finished(generation, (scene pieces, quantized))`` or ``signals.failed(generation,
    one-line message)``; nothing after :attr:`cancel` is set (the child is killed).
    """

    def __init__(self, generation: int, pieces: list[bytes], positions: dict | None, options: dict):
        super().__init__()
        self.setAutoDelete(False)
        self.generation = generation
        self.pieces = pieces
        self.positions = positions
        self.options = options
        self.cancel = CancelToken()
        self.signals = JobSignals()

    def run(self) -> None:
        if self.cancel.cancelled:
            return
        try:
            outcome = self._in_child()
        except Exception as exc:  # noqa: BLE001 - report any failure of the job to the GUI, never lose it
            log.error("canvas layout process failed:\n%s", traceback.format_exc())
            outcome = ("error", f"Graph layout failed: {exc.__class__.__name__}: {exc}")
        if outcome is None or self.cancel.cancelled:
            return
        if outcome[0] == "ok":
            self.signals.finished.emit(self.generation, (outcome[1], outcome[2]))
        else:
            self.signals.failed.emit(self.generation, outcome[1])

    def _in_child(self) -> tuple | None:
        ctx = layout_context()
        conn, child_conn = ctx.Pipe()
        proc = ctx.Process(target=child_main, args=(child_conn,), name="workbench-canvas-layout", daemon=True)
        try:
            proc.start()
            child_conn.close()
            conn.send((self.pieces, self.positions, self.options))
            self.pieces = []
            while not self.cancel.cancelled:
                if conn.poll(POLL_S):
                    return conn.recv()
                if not proc.is_alive() and not conn.poll(0):
                    return ("error", f"Graph layout failed: its process ended unexpectedly "
                                     f"(exit code {proc.exitcode}); try opening the model again.")
            return None
        except EOFError:
            return ("error", f"Graph layout failed: its process ended unexpectedly (exit code {proc.exitcode}); "
                             "try opening the model again.")
        finally:
            conn.close()
            if proc.is_alive():
                proc.kill()
            proc.join()
            proc.close()


class EdgeQuantJob(QRunnable):
    """``edge_quantization(proto, structure)`` of an already-quantized model in a thread-pool
    thread (it reads scale and zero point values, so it needs the full model the GUI holds)."""

    def __init__(self, generation: int, proto: onnx.ModelProto, structure):
        super().__init__()
        self.setAutoDelete(False)
        self.generation = generation
        self.proto = proto
        self.structure = structure
        self.cancel = CancelToken()
        self.signals = JobSignals()

    def run(self) -> None:
        try:
            quant = edge_quantization(self.proto, self.structure)
        except Exception as exc:  # noqa: BLE001 - report any failure of the job to the GUI, never lose it
            log.error("reading the model's quantization failed:\n%s", traceback.format_exc())
            if not self.cancel.cancelled:
                self.signals.failed.emit(self.generation, f"Reading the model's quantized edges failed: "
                                                          f"{exc.__class__.__name__}: {exc}")
            return
        if not self.cancel.cancelled:
            self.signals.finished.emit(self.generation, quant)


def child_main(conn) -> None:
    """Entry point of a layout child: read ``(pieces, positions, options)`` from ``conn``, send
    back ``("ok", transfer.split(scene data), quantized)`` or ``("error", one-line message)``."""
    # the job allocates ~10 objects per node and frees almost nothing before the process ends:
    # the cyclic collector would only rescan them (a third of the job's time at 20,000 nodes)
    gc.disable()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl+C is the window's to handle
    try:
        pieces, positions, options = conn.recv()
        proto = onnx.ModelProto()
        for piece in pieces:
            proto.MergeFromString(piece)
        del pieces
        data = prepare(proto, positions, edge_quant=False, **options)
        conn.send(("ok", split(data), bool(find_quantized(proto))))
    except Cancelled:
        pass
    except WorkbenchError as exc:
        conn.send(("error", str(exc)))
    except Exception as exc:  # noqa: BLE001 - every failure goes back to the GUI as one line
        log.error("canvas layout failed:\n%s", traceback.format_exc())
        conn.send(("error", f"Graph layout failed: {exc.__class__.__name__}: {exc}"))
    finally:
        conn.close()


def prepare(proto, positions, *, collapse_qdq=False, cache_dir: Path | str | None = None, cancel=None,
            groups=True, depth=None, edge_quant=True, titles=None):
    """Structure, layout and scene geometry of ``proto``.

    With ``positions`` (node name -> centre) the picture is flat and uses them. Otherwise, with
    ``groups``, nodes are grouped by name scope (``build_hierarchy``), laid out hierarchically
    (``plan_group_layout``) and opened to ``depth`` (default ``auto_depth``: the deepest level
    that draws at most 80 boxes and nodes), each collapsed box as wide as its title needs in
    ``titles`` (a ``TitleMetrics`` the GUI measured; None: every box ``BOX_W`` wide); without ``groups``,
    the flat cached ``layout_routed`` (long edges routed through the layers they skip).
    With ``edge_quant`` an already-quantized model also gets the dtype each edge carries
    (``edge_quantization``, which reads scale and zero point values).
    """
    structure = graph_structure(proto, collapse_qdq=collapse_qdq)
    if positions is None and groups:
        hierarchy = build_hierarchy(structure.names, structure.op_types, structure.edges)
        plan = plan_group_layout(hierarchy, len(structure.names), structure.edges, titles=titles, cancel=cancel)
        open_depth = auto_depth(hierarchy) if depth is None else depth
        data = build_scene_data(structure, plan=plan, expanded=frozenset(expanded_to_depth(hierarchy, open_depth)))
    else:
        routes = None
        if positions is None:
            layout = layout_routed(structure, cache_dir=cache_dir, cancel=cancel)
            positions, routes = layout.positions, layout.routes
        data = build_scene_data(structure, positions, routes=routes)
    if edge_quant and find_quantized(proto):  # the dtypes and quantized tensors the file's edges carry
        data.edge_quant = edge_quantization(proto, structure)
    return data
