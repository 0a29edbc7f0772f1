"""Subgraph bodies open in tabs (double-click an If node); Netron shows the model on 127.0.0.1."""

from __future__ import annotations

import urllib.request
from urllib.parse import urlparse

import pytest

from workbench.qt.app_window import MainWindow


@pytest.fixture
def window(qtbot):
    win = MainWindow()
    qtbot.addWidget(win)
    yield win
    win.close()


def _open(qtbot, win, path):
    with qtbot.waitSignal(win.modelOpened, timeout=540_000):
        win.open_path(path)
    qtbot.waitUntil(lambda: bool(win.canvas.node_names()), timeout=540_000)


def test_if_branches_open_in_tabs(qtbot, window, cases):
    _open(qtbot, window, cases / "20_if_subgraph_matmul.onnx")
    if_nodes = [n for n in window.canvas.node_names() if window.doc.model.node(n).op_type == "If"]
    assert if_nodes
    window.canvas.nodeActivated.emit(if_nodes[0])
    titles = [window.tabs.tabText(i) for i in range(window.tabs.count())]
    assert titles[0] == "Graph"
    assert sorted(titles[1:]) == sorted([f"{if_nodes[0]}: then_branch", f"{if_nodes[0]}: else_branch"])
    node = window.doc.model.node(if_nodes[0])
    for i in (1, 2):
        body = window.tabs.widget(i)
        branch = next(a.g for a in node.attribute if window.tabs.tabText(i).endswith(a.name))
        qtbot.waitUntil(lambda b=body: bool(b.node_names()), timeout=300_000)
        assert sorted(body.node_names()) == sorted(n.name for n in branch.node)
        assert "MatMul" in {n.op_type for n in branch.node}
    window._close_tab(2)
    window._close_tab(1)
    assert window.tabs.count() == 1
    window._close_tab(0)  # the main graph cannot be closed
    assert window.tabs.count() == 1


def test_netron_tab_serves_the_open_model_on_loopback(qtbot, window, corpus):
    path = corpus / "digits_cnn" / "model_opset17.onnx"
    _open(qtbot, window, path)
    url = window.open_in_netron()
    assert urlparse(url).hostname == "127.0.0.1"
    assert window.tabs.currentWidget() is window.netron
    with urllib.request.urlopen(url, timeout=60) as resp:
        assert resp.status == 200
    server = window.netron.server
    window.close()
    assert server.url is None or not server.running
