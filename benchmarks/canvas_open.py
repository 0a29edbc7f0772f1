"""Time to open a graph in the canvas with groups on: layout (worker), scene build, first paint.

Prints, for synthetic graphs of 5,000 and 20,000 nodes (flat names: op-type-run blocks) and for
the nudenet_320n and MiniLM corpus models (name scopes): the core steps alone (read graph,
``build_hierarchy``, ``plan_group_layout``, geometry at the opening depth), open = ``set_model``
until ``layoutReady`` (worker: all of those), first paint = grab of the viewport after ``fit()``,
the longest GUI-thread stall while the worker ran, and opening one group (GUI thread: place +
geometry + paint). Targets on a 2-core box: <= 2 s for 20,000 nodes open + first paint, stalls
<= 100 ms. Prints only; never asserts.

Run: ``QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/canvas_open.py``
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from workbench.core.api import open_model  # noqa: E402
from workbench.core.graph.group_layout import plan_group_layout  # noqa: E402
from workbench.core.graph.hierarchy import auto_depth, build_hierarchy, expanded_to_depth  # noqa: E402
from workbench.core.graph.layout import graph_structure  # noqa: E402
from workbench.qt.canvas import GraphCanvas  # noqa: E402
from workbench.qt.canvas.scene_data import build_scene_data  # noqa: E402

MODELS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "models"
CORPUS = ("nudenet_320n", "minilm_l6_v2")


def synthetic_model(n: int, seed: int = 0) -> onnx.ModelProto:
    """A DAG of ``n`` nodes shaped like a deep network: a main chain, residual Adds reaching back
    2-12 nodes, and every 40 nodes a three-way branch merged by a Concat."""
    rng = random.Random(seed)
    nodes, last = [], "x"
    produced = ["x"]
    while len(nodes) < n:
        i = len(nodes)
        if i % 40 == 39 and n - i > 8:
            outs = []
            for b in range(3):
                t = last
                for k in range(2):
                    out = f"t{i}_{b}_{k}"
                    nodes.append(helper.make_node(rng.choice(["Relu", "Sigmoid", "Conv"]), [t], [out],
                                                  name=f"n{i}_{b}_{k}"))
                    t = out
                outs.append(t)
            last = f"t{i}_cat"
            nodes.append(helper.make_node("Concat", outs, [last], name=f"n{i}_cat", axis=1))
        elif i % 5 == 4 and len(produced) > 12:
            other = produced[-rng.randint(2, 12)]
            out = f"t{i}"
            nodes.append(helper.make_node("Add", [last, other], [out], name=f"n{i}"))
            last = out
        else:
            out = f"t{i}"
            nodes.append(helper.make_node(rng.choice(["Conv", "Relu", "MatMul", "Mul"]), [last], [out], name=f"n{i}"))
            last = out
        produced.append(last)
    graph = helper.make_graph(nodes[:n], "synthetic",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info(nodes[n - 1].output[0], TensorProto.FLOAT, None)])
    return helper.make_model(graph)


def open_in_canvas(app: QApplication, canvas: GraphCanvas, proto: onnx.ModelProto) -> tuple[float, float, float]:
    """(open seconds, first paint seconds, longest GUI-thread stall while opening, seconds)."""
    ready: list[float] = []
    canvas.layoutReady.connect(lambda: ready.append(time.perf_counter()))
    t0 = time.perf_counter()
    canvas.set_model(proto)
    last, stall = time.perf_counter(), 0.0
    while not ready:
        app.processEvents()
        time.sleep(0.002)
        now = time.perf_counter()
        stall, last = max(stall, now - last - 0.002), now
    canvas.layoutReady.disconnect()
    t1 = time.perf_counter()
    canvas.fit()
    canvas.viewport().grab()
    t2 = time.perf_counter()
    return ready[0] - t0, t2 - t1, stall


def bench(app: QApplication, label: str, proto: onnx.ModelProto) -> None:
    t = time.perf_counter()
    structure = graph_structure(proto)
    t_structure = time.perf_counter() - t
    t = time.perf_counter()
    hierarchy = build_hierarchy(structure.names, structure.op_types)
    t_hier = time.perf_counter() - t
    t = time.perf_counter()
    plan = plan_group_layout(hierarchy, len(structure.names), structure.edges)
    t_plan = time.perf_counter() - t
    depth = auto_depth(hierarchy)
    t = time.perf_counter()
    build_scene_data(structure, plan=plan, expanded=frozenset(expanded_to_depth(hierarchy, depth)))
    t_geometry = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as cache:
        canvas = GraphCanvas(layout_cache_dir=cache)
        canvas.resize(1200, 800)
        canvas.show()
        open_s, paint_s, stall = open_in_canvas(app, canvas, proto)
        names = canvas.node_names()
        shown = canvas.shown_groups()
        boxes = [p for p, collapsed in shown.items() if collapsed]
        t = time.perf_counter()
        if boxes:
            canvas.expand_group(boxes[len(boxes) // 2])
        canvas.viewport().grab()
        t_expand = time.perf_counter() - t
        t = time.perf_counter()
        canvas.select_nodes([names[len(names) // 2]], center=True)  # 100 % zoom on the middle node
        canvas.viewport().grab()
        first_zoom = time.perf_counter() - t
        print(f"{label}: nodes={len(names)} edges={len(structure.edges)} groups={len(hierarchy)} "
              f"({hierarchy.source}) opened to depth {depth}: {len(shown)} groups shown\n"
              f"  read graph {t_structure:.3f}s | hierarchy {t_hier:.3f}s | group layout {t_plan:.3f}s | "
              f"geometry {t_geometry:.3f}s\n"
              f"  OPEN {open_s:.3f}s + FIRST PAINT {paint_s:.3f}s = {open_s + paint_s:.3f}s\n"
              f"  longest GUI-thread stall while the worker ran: {stall:.3f}s\n"
              f"  open one group + paint {t_expand:.3f}s (GUI thread) | reveal + zoom to a node + paint "
              f"{first_zoom:.3f}s ({canvas.detailed_item_count()} node items built)")
        canvas.close()


def main() -> None:
    app = QApplication.instance() or QApplication(sys.argv)
    print(f"cpus={os.cpu_count()}")
    import igraph  # noqa: F401 - imported once up front (1.2 s), as the app's first layout does

    for n in (5000, 20000):
        bench(app, f"synthetic {n}", synthetic_model(n))
    for name in CORPUS:
        path = MODELS / name / "model.onnx"
        if not path.is_file():
            print(f"skipped {name}: {path} not found")
            continue
        t = time.perf_counter()
        proto = open_model(path).proto
        print(f"{name} open_model: {time.perf_counter() - t:.3f}s")
        bench(app, name, proto)


if __name__ == "__main__":
    main()
