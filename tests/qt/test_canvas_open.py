"""Opening a graph in the canvas: layout in a child process, GUI work in slices, cancel, errors,
and the piecewise transfer of the scene data (pytest-qt, offscreen)."""

from __future__ import annotations

import multiprocessing
import os
import time

import numpy as np
import onnx
import pytest
from bundled_example import EXAMPLE_MODEL
from onnx import TensorProto, helper

pytest.importorskip("PySide6")

from PySide6.QtCore import QTimer  # noqa: E402

from workbench.qt.canvas import transfer as canvas_transfer  # noqa: E402
from workbench.qt.canvas.slices import dismantle  # noqa: E402
from workbench.qt.canvas.transfer import Assembler, split  # noqa: E402
from workbench.qt.canvas.worker import prepare, proto_pieces  # noqa: E402

LAYOUT_PROCESS = "workbench-canvas-layout"


@pytest.fixture
def canvas(make_canvas):
    return make_canvas(900, 700)


def residual_model(n: int) -> onnx.ModelProto:
    """A chain of ``n`` nodes with an Add every 5 nodes reaching back 3 (flat names: blocks)."""
    nodes, outs = [], ["x"]
    for i in range(n):
        if i % 5 == 4 and i > 4:
            nodes.append(helper.make_node("Add", [outs[-1], outs[-4]], [f"t{i}"], name=f"n{i}"))
        else:
            nodes.append(helper.make_node(("Conv", "Relu", "Mul")[i % 3], [outs[-1]], [f"t{i}"], name=f"n{i}"))
        outs.append(f"t{i}")
    graph = helper.make_graph(nodes, "residual", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info(outs[-1], TensorProto.FLOAT, None)])
    return helper.make_model(graph)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def layout_children() -> list:
    return [p for p in multiprocessing.active_children() if p.name == LAYOUT_PROCESS]


@pytest.mark.slow
def test_gui_thread_keeps_running_while_20000_nodes_open(qtbot, canvas, monkeypatch):
    ticks: list[float] = []
    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    feeds: list[float] = []  # the GUI thread's unpickling of the layout result, piece by piece
    real_feed = Assembler.feed

    def feed(self, piece):
        feeds.append(time.perf_counter())
        real_feed(self, piece)

    monkeypatch.setattr(canvas_transfer.Assembler, "feed", feed)
    ready: list[tuple[float, int]] = []
    canvas.layoutReady.connect(lambda: ready.append((time.perf_counter(), len(ticks))))
    timer.start()
    canvas.set_model(residual_model(20_000))
    qtbot.waitUntil(lambda: bool(ready), timeout=540_000)
    timer.stop()
    ready_at, ticks_before = ready[0]
    assert ticks_before > 0  # the timer ran while the graph was being laid out
    assert len(feeds) > 100  # the result came in pieces...
    # ...and the event loop ran between them: the GUI-thread part was not one block
    assert any(feeds[0] < t < ready_at for t in ticks)
    assert len(canvas.node_names()) == 20_000


def test_second_model_during_layout_shows_only_the_second(qtbot, canvas):
    ready, failed = [], []
    canvas.layoutReady.connect(lambda: ready.append(canvas.node_names()))
    canvas.layoutFailed.connect(failed.append)
    canvas.set_model(residual_model(20_000))
    qtbot.waitUntil(lambda: bool(layout_children()), timeout=540_000)  # the first layout is running
    first = layout_children()[0].pid
    canvas.set_model(onnx.load(EXAMPLE_MODEL))
    qtbot.waitUntil(lambda: bool(ready), timeout=540_000)
    qtbot.waitUntil(lambda: not pid_alive(first), timeout=300_000)  # cancelling killed it
    qtbot.wait(200)
    assert failed == [] and len(ready) == 1
    assert len(ready[0]) == 10 and ready[0][0] == "/f/f.0/Conv"
    assert canvas.node_names() == ready[0]


def test_a_layout_failure_is_one_line(qtbot, canvas):
    proto = onnx.load(EXAMPLE_MODEL)
    with qtbot.waitSignal(canvas.layoutFailed, timeout=300_000) as blocker:
        canvas.set_model(proto, positions={"/f/f.0/Conv": ("left", "top")})  # not numbers
    message = blocker.args[0]
    assert message.startswith("Graph layout failed: ValueError") and "\n" not in message
    assert "Traceback" not in message and canvas.node_names() == [] and not canvas.opening()
    with qtbot.waitSignal(canvas.layoutReady, timeout=300_000):  # the canvas still opens the next model
        canvas.set_model(proto)
    assert len(canvas.node_names()) == 10


def test_a_layout_ready_handler_may_open_another_model(qtbot, canvas):
    shown = []

    def again():
        shown.append(canvas.node_names())
        if len(shown) == 1:
            canvas.set_model(residual_model(30))  # from inside the open's last step

    canvas.layoutReady.connect(again)
    canvas.set_model(onnx.load(EXAMPLE_MODEL))
    qtbot.waitUntil(lambda: len(shown) == 2, timeout=300_000)
    assert [len(names) for names in shown] == [10, 30] and not canvas.opening()


def test_child_geometry_equals_the_in_process_one(qtbot, canvas):
    proto = onnx.load(EXAMPLE_MODEL)
    with qtbot.waitSignal(canvas.layoutReady, timeout=300_000):
        canvas.set_model(proto)
    local = prepare(proto, None)
    assert canvas.node_names() == local.names
    for i, name in enumerate(local.names):
        if local.shown(i):
            assert canvas.node_scene_rect(name) == local.rect(i)
    assert canvas.scene_bounds() == local.bounds


def test_proto_pieces_rebuild_the_graph_without_weight_values():
    proto = onnx.load(EXAMPLE_MODEL)
    light = onnx.ModelProto()
    for piece in proto_pieces(proto):
        light.MergeFromString(piece)
    assert [n.SerializeToString() for n in light.graph.node] == [n.SerializeToString() for n in proto.graph.node]
    assert [v.name for v in light.graph.input] == [v.name for v in proto.graph.input]
    assert [v.name for v in light.graph.output] == [v.name for v in proto.graph.output]
    for full, part in zip(proto.graph.initializer, light.graph.initializer, strict=True):
        assert (part.name, part.data_type, list(part.dims)) == (full.name, full.data_type, list(full.dims))
        assert not part.raw_data and not part.float_data and not part.int64_data  # no values


def test_split_and_assemble_rebuild_the_scene_data():
    data = prepare(residual_model(4000), None)
    pieces = split(data)
    assert len(pieces) > 20 and max(len(p) for p in pieces) < 400_000
    assembler = Assembler()
    for piece in pieces:
        assembler.feed(piece)
    copy = assembler.result()
    assert type(copy) is type(data) and copy is not data
    for name in ("x0", "y0", "x1", "y1", "gx0", "gy1"):
        assert np.array_equal(getattr(copy, name), getattr(data, name), equal_nan=True)
    assert copy.structure.edges == data.structure.edges and copy.index == data.index
    assert copy.plan.hierarchy.paths == data.plan.hierarchy.paths
    assert {g: c.rows for g, c in copy.plan.containers.items()} == {g: c.rows for g, c in data.plan.containers.items()}
    assert copy.straight_edges == data.straight_edges and copy.bounds == data.bounds
    assert [t.segments for t in copy.edge_tiles] == [t.segments for t in data.edge_tiles]
    steps = sum(1 for _ in dismantle(copy))
    assert steps >= 4 and copy.structure.edges == [] and copy.index == {}
    assert len(data.structure.edges) > 4000  # the original is untouched
