"""The --node-data files load in Model Explorer (ai-edge-model-explorer with model-explorer-onnx).

The slow test starts Model Explorer's own server on 127.0.0.1, asks it (the HTTP API its web app
uses) for nudenet_320n's graph through the ONNX adapter and for the node-data file, and checks
that every node id of the file is a node of that graph, of the unit's op type, one per unit.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pytest

from workbench import cli


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 120.0):
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (127.0.0.1 only)
        return resp.read().decode()


def _wait_healthy(base: str, proc: subprocess.Popen, seconds: float = 400.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"Model Explorer's server exited with {proc.returncode}: {proc.stdout.read()}")
        try:
            if _get(base + "/check_health", timeout=2) == "model_explorer_ok":
                return
        except OSError:
            time.sleep(0.5)
    raise AssertionError("Model Explorer's server did not answer /check_health")


@pytest.mark.slow
def test_node_data_ids_are_nodes_of_model_explorer_onnx_graph(corpus, tmp_path, capsys):
    d = corpus / "nudenet_320n"
    model = d / "model.onnx"
    out = tmp_path / "nudenet.json"
    rows_json = tmp_path / "rows.json"
    assert cli.main(["analyze", str(model), "--data", str(d / "calib.npz"), "--eval", str(d / "eval.npz"),
                     "--samples", "4", "--eval-samples", "2", "--json", str(rows_json),
                     "--node-data", str(out), "--top", "0"]) == 0
    rows = json.loads(rows_json.read_text())
    # 144: the size guard keeps the 11 anchor-grid units of /model.22 float (and one Add island after them)
    assert "144 nodes of graph 'main_graph'" in capsys.readouterr().err
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    sqnr_file = tmp_path / "nudenet.sqnr.json"
    proc = subprocess.Popen([sys.executable, "-m", "model_explorer", "--host", "127.0.0.1", "--port", str(port),
                             "--no_open_in_browser", "--extensions", "model_explorer_onnx", str(model),
                             "--node_data_paths", str(sqnr_file)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path)
    try:
        _wait_healthy(base, proc)
        extensions = json.loads(_get(base + "/api/v1/get_extensions"))
        assert "onnx_adapter" in [e["id"] for e in extensions]
        cmd = {"extensionId": "onnx_adapter", "cmdId": "convert", "modelPath": str(model), "settings": {},
               "deleteAfterConversion": False}
        graphs = json.loads(_get(base + "/api/v1/send_command?json=" + urllib.parse.quote(json.dumps(cmd))))
        # the web app reads a node-data file given by path through read_text_file
        served = json.loads(_get(base + "/api/v1/read_text_file?path=" + urllib.parse.quote(str(sqnr_file))))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    assert "error" not in graphs, graphs
    main = graphs["graphs"][0]
    labels = {n["id"]: n["label"] for n in main["nodes"]}
    for figure in ("sqnr", "sensitivity"):
        doc = json.loads((tmp_path / f"nudenet.{figure}.json").read_text())
        assert list(doc) == [main["id"]]
        results = doc[main["id"]]["results"]
        assert len(results) == len(rows) == 144
        missing = [k for k in results if k not in labels]
        assert missing == [], missing[:5]
        # each id is the node of that unit: same op type (the adapter labels a node by its op type)
        assert {k: labels[k] for k in results} == {r["node"]: r["op_type"] for r in rows}
    served_doc = json.loads(served["content"])
    results = served_doc[main["id"]]["results"]
    assert {k: v["value"] for k, v in results.items()} == {r["node"]: round(r["sqnr_db"], 4) for r in rows}
