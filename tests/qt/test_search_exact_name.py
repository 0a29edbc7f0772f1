"""A search text that is a node's whole name selects that node alone (pytest-qt, offscreen).

"Conv@5" was a substring search: it selected Conv@5, Conv@50, Conv@51 and Conv@52 together, so typing a
node's name and Enter could not pick that node. As a graph viewer's find does, the exact name now wins:
it alone is selected and centred, the partial matches follow it in the Search Hits list, F3 steps to
them, and the status line says how many there are. An op type ("Relu") still selects every node of it,
and a text naming no node whole is the substring search it was.
"""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper
from PySide6.QtCore import Qt

NAMES = [f"act@{k}" for k in range(56)]  # act@5 and act@50 .. act@55


def chain() -> onnx.ModelProto:
    nodes, prev = [], "x"
    for name in NAMES:
        nodes.append(helper.make_node("Relu", [prev], [name], name=name))
        prev = name
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def enter(qtbot, win, text: str) -> list[str]:
    win.search.setText(text)
    qtbot.keyClick(win.search, Qt.Key.Key_Return)
    return win.canvas.selected_nodes()


def test_the_exact_name_wins_and_partial_matches_follow(qtbot, window, open_file, tmp_path):
    win = window
    path = tmp_path / "chain.onnx"
    onnx.save(chain(), path)
    open_file(win, path)
    partial = ["act@50", "act@51", "act@52", "act@53", "act@54", "act@55"]

    assert enter(qtbot, win, "act@5") == ["act@5"]
    assert win.status_label.text() == ("Selected act@5: its exact name; 6 other nodes contain 'act@5' (the Search "
                                       "Hits tab lists them after it; F3 steps to them).")
    assert win.search_hits.names() == ["act@5"] + partial
    assert win.canvas.search_hits() == ["act@5"] + partial and win.canvas.exact_hits() == 1
    win.step_search(1)  # F3: the first partial match
    assert win.canvas.selected_nodes() == ["act@50"]
    assert win.status_label.text() == "Hit 2 of 7: act@50"

    assert enter(qtbot, win, "ACT@55") == ["act@55"]  # case-insensitive, as every search
    assert win.status_label.text() == "Selected act@55: its exact name."

    assert enter(qtbot, win, "act@") == NAMES  # no whole name: every node containing it
    assert win.canvas.exact_hits() == 0
    assert enter(qtbot, win, "Relu") == NAMES  # an op type: every node of it
    assert enter(qtbot, win, "act@5*") == ["act@5"] + partial  # a glob: every match, none ranked
