"""The app's graph commands: search hits dock and stepping, group actions, File > Export Picture."""

from __future__ import annotations

import onnx
import pytest
from PySide6.QtGui import QImage

from workbench.core.errors import WorkbenchError


def test_search_hits_dock_steps_and_export_picture(qtbot, window, open_file, corpus, tmp_path):
    win = window
    model = corpus / "digits_cnn" / "model_opset17.onnx"
    open_file(win, model)
    proto = onnx.load(str(model), load_external_data=False)
    convs = [n.name for n in proto.graph.node if n.op_type == "Conv"]
    win.search.setText("re:conv$")
    assert win.run_search() == convs
    assert win.search_hits.names() == convs and win.docks["Search Hits"].isVisible()
    win.act_find_next.trigger()  # the search showed hit 1: F3 goes on to hit 2
    assert win.canvas.selected_nodes() == [convs[1]] and f"Hit 2 of {len(convs)}" in win.status_label.text()
    win.act_find_previous.trigger()
    assert win.canvas.selected_nodes() == [convs[0]] and f"Hit 1 of {len(convs)}" in win.status_label.text()
    win.act_find_previous.trigger()  # before the first: the last
    assert win.canvas.selected_nodes() == [convs[-1]]
    win.search.setText("re:(")
    assert win.run_search() == [] and "invalid regular expression" in win.status_label.text()

    win.act_collapse_all.trigger()
    assert win.canvas.shown_groups() and all(win.canvas.shown_groups().values())
    win.act_expand_all.trigger()
    assert all(win.canvas.node_shown(n) for n in win.canvas.node_names())

    out = tmp_path / "view.png"
    w, h = win.export_picture_to(out)
    assert QImage(str(out)).size().toTuple() == (w, h) and "Wrote" in win.status_label.text()
    with pytest.raises(WorkbenchError, match="input file"):
        win.export_picture_to(model)  # never onto the open model
