"""Time to open a graph in the canvas with groups on, and how long the GUI thread stalls meanwhile.

Prints, for synthetic graphs of 5,000 and 20,000 nodes (flat names: op-type-run blocks) and for
the nudenet_320n and MiniLM corpus models (name scopes): the core steps alone in this process
(read graph, ``build_hierarchy``, ``plan_group_layout``, geometry at the opening depth); then, per
run, OPEN = ``set_model`` until ``layoutReady`` (the layout process plus the GUI thread's slices),
FIRST PAINT = a grab of the viewport right after it, and the longest GUI-thread stall over the
WHOLE open, from just before ``set_model`` until the first paint is done.

How stalls are measured: the GUI thread runs ``processEvents()`` then sleeps 2 ms, over and over;
a stall is the time between two of those returns minus the 2 ms sleep, i.e. how long the event
loop could not have handled input, timers or paint. ``set_model`` itself, every slice, every
queued signal and the first paint fall inside some interval. Then opening one group (GUI thread:
place + geometry + paint). Targets on this 2-core box: <= 2 s for 20,000 nodes open + first
paint, stalls <= 100 ms. Prints the load average (``os.getloadavg``) with each run, since every
figure depends on it. Prints only; never asserts.

Run: ``QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/canvas_open.py [--runs N] [--sizes 5000,20000]``
"""

from __future__ import annotations

import argparse
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
    """(open seconds, first paint seconds, longest GUI-thread stall from set_model to first paint done)."""
    ready: list[float] = []
    canvas.layoutReady.connect(lambda: ready.append(time.perf_counter()))
    canvas.layoutFailed.connect(lambda msg: print(f"  layout failed: {msg}"))
    last = t0 = time.perf_counter()
    stall = 0.0
    canvas.set_model(proto)
    while not ready:
        app.processEvents()
        now = time.perf_counter()
        stall, last = max(stall, now - last), now
        time.sleep(0.002)
        last += 0.002  # the probe's own sleep is not a stall
    canvas.layoutReady.disconnect()
    canvas.layoutFailed.disconnect()
    t1 = time.perf_counter()
    canvas.viewport().grab()  # the first paint, synchronous
    t2 = time.perf_counter()
    stall = max(stall, t2 - last)
    return ready[0] - t0, t2 - t1, stall


def bench(app: QApplication, label: str, proto: onnx.ModelProto, runs: int) -> None:
    t = time.perf_counter()
    structure = graph_structure(proto)
    t_structure = time.perf_counter() - t
    t = time.perf_counter()
    hierarchy = build_hierarchy(structure.names, structure.op_types, structure.edges)
    t_hier = time.perf_counter() - t
    t = time.perf_counter()
    plan = plan_group_layout(hierarchy, len(structure.names), structure.edges)
    t_plan = time.perf_counter() - t
    depth = auto_depth(hierarchy)
    t = time.perf_counter()
    build_scene_data(structure, plan=plan, expanded=frozenset(expanded_to_depth(hierarchy, depth)))
    t_geometry = time.perf_counter() - t
    print(f"{label}: nodes={len(structure.names)} edges={len(structure.edges)} groups={len(hierarchy)} "
          f"({hierarchy.source}) opened to depth {depth}\n"
          f"  core steps in this process: read graph {t_structure:.3f}s | hierarchy {t_hier:.3f}s | "
          f"group layout {t_plan:.3f}s | geometry {t_geometry:.3f}s")
    totals, stalls = [], []
    for run in range(runs):
        with tempfile.TemporaryDirectory() as cache:
            canvas = GraphCanvas(layout_cache_dir=cache)
            canvas.resize(1200, 800)
            canvas.show()
            app.processEvents()
            load = os.getloadavg()[0]
            open_s, paint_s, stall = open_in_canvas(app, canvas, proto)
            totals.append(open_s + paint_s)
            stalls.append(stall)
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
            print(f"  run {run + 1} (load average {load:.2f}): OPEN {open_s:.3f}s + FIRST PAINT {paint_s:.3f}s = "
                  f"{open_s + paint_s:.3f}s | longest GUI-thread stall, set_model to first paint done: "
                  f"{1000 * stall:.0f} ms\n"
                  f"    {len(shown)} groups shown | open one group + paint {t_expand:.3f}s (GUI thread) | "
                  f"reveal + zoom to a node + paint {first_zoom:.3f}s ({canvas.detailed_item_count()} node items built)")
            canvas.close()
    if runs > 1:
        print(f"  over {runs} runs: open + first paint {min(totals):.3f}-{max(totals):.3f}s, "
              f"longest stall {1000 * min(stalls):.0f}-{1000 * max(stalls):.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1, help="opens per graph (default 1)")
    parser.add_argument("--sizes", default="5000,20000", help="synthetic graph sizes (default 5000,20000)")
    parser.add_argument("--no-corpus", action="store_true", help="skip the corpus models")
    args = parser.parse_args()
    app = QApplication.instance() or QApplication(sys.argv)
    print(f"cpus={os.cpu_count()} load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    # as the app does at start: the first canvas starts the layout processes' forkserver, which
    # imports the layout code and igraph once; wait for that with one small open
    warm = GraphCanvas()
    t = time.perf_counter()
    open_in_canvas(app, warm, synthetic_model(50))
    print(f"warm-up (layout process server start + a 50-node open): {time.perf_counter() - t:.3f}s")
    warm.close()
    for n in (int(x) for x in args.sizes.split(",") if x):
        bench(app, f"synthetic {n}", synthetic_model(n), args.runs)
    for name in () if args.no_corpus else CORPUS:
        path = MODELS / name / "model.onnx"
        if not path.is_file():
            print(f"skipped {name}: {path} not found")
            continue
        t = time.perf_counter()
        proto = open_model(path).proto
        print(f"{name} open_model: {time.perf_counter() - t:.3f}s")
        bench(app, name, proto, args.runs)


if __name__ == "__main__":
    main()
