"""Screenshot of a --node-data file in Model Explorer's own web app (docs/model_explorer_overlay.png).

Starts Model Explorer's server (ai-edge-model-explorer + model-explorer-onnx) on 127.0.0.1 with the
model and the node-data file, opens the page in QtWebEngine (software WebGL) with one node selected
and its layers expanded, and saves the screen::

    workbench-cli analyze nudenet_320n/model.onnx --data nudenet_320n/calib.npz --samples 8 \\
        --eval nudenet_320n/eval.npz --eval-samples 4 --node-data /tmp/nudenet.json
    QTWEBENGINE_CHROMIUM_FLAGS="--no-sandbox --disable-gpu-compositing --use-gl=angle \\
        --use-angle=swiftshader --enable-unsafe-swiftshader --ignore-gpu-blocklist" \\
        xvfb-run -a -s "-screen 0 1600x1000x24" python scripts/model_explorer_shot.py \\
        nudenet_320n/model.onnx /tmp/nudenet.sqnr.json /model.22/cv3.2/cv3.2.0/conv/Conv docs/model_explorer_overlay.png
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

from PySide6.QtCore import QTimer, QUrl
from PySide6.QtWebEngineWidgets import QWebEngineView
from PySide6.QtWidgets import QApplication


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(base: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(base + "/check_health", timeout=2):  # noqa: S310 (127.0.0.1)
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit("Model Explorer's server did not start")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("node_data")
    p.add_argument("node", help="node id to select (its layers are expanded)")
    p.add_argument("out")
    p.add_argument("--wait", type=float, default=25.0, help="seconds for the page to load and lay out")
    args = p.parse_args()
    model, node_data = str(Path(args.model).resolve()), str(Path(args.node_data).resolve())
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([sys.executable, "-m", "model_explorer", "--host", "127.0.0.1", "--port", str(port),
                               "--no_open_in_browser", "--extensions", "model_explorer_onnx"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait(base)
        parts = args.node.strip("/").split("/")[:-1]
        layers = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
        graph_id = json.loads(Path(node_data).read_text()).popitem()[0]
        data = {"models": [{"url": model}], "nodeData": [node_data], "nodeDataTargets": [""],
                "uiState": {"paneStates": [{"deepestExpandedGroupNodeIds": layers, "selectedNodeId": args.node,
                                            "selectedGraphId": graph_id, "selectedCollectionLabel": Path(model).name,
                                            "widthFraction": 1}]}}
        app = QApplication([])
        view = QWebEngineView()
        view.resize(1600, 1000)
        view.show()
        view.load(QUrl(base + "/?data=" + urllib.parse.quote(json.dumps(data))))
        QTimer.singleShot(int(args.wait * 1000), lambda: (app.primaryScreen().grabWindow(0, 0, 0, view.width(), view.height()).save(args.out),
                                                          app.quit()))
        app.exec()
    finally:
        server.terminate()
        server.wait(20)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
