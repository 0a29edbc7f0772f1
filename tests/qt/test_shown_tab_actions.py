"""The View and Edit actions act on the graph of the shown tab, or are off where they do not apply.

Fit, zoom, search, F3, Select all of this type, Show Q/DQ as Nodes and Export Picture all acted on the
model's graph (the Graph tab) while an Exported tab was shown; Colour by SQNR / Sensitivity coloured the
hidden graph. A dock's node row (Errors, Problems, ...) names a node of the model: its graph is brought
forward.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from bundled_example import EXAMPLE
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QFileDialog, QLabel


def _exported_tab(qtbot, win, qdq_file: Path, tmp_path: Path):
    exported = tmp_path / "digits.qdq.onnx"
    shutil.copy(qdq_file, exported)
    win._last_export = exported  # as a finished export sets it
    tab = win.open_exported()
    qtbot.waitUntil(lambda: tab.canvas._state is not None, timeout=300_000)
    assert win.tabs.currentWidget() is tab
    return tab


def test_actions_follow_the_exported_tab(qtbot, window, open_file, example_qdq_file, tmp_path, monkeypatch):
    win = window
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    main = win.canvas
    tab = _exported_tab(qtbot, win, example_qdq_file, tmp_path)
    c = tab.canvas
    main_scale = main.transform().m11()

    # zoom: the shown graph
    before = c.transform().m11()
    win.act_zoom_in.trigger()
    assert c.transform().m11() > before and main.transform().m11() == main_scale

    # search and F3: the exported graph's nodes (its QuantizeLinear drawn as badges: search its Conv nodes)
    win.search.setText("Conv")
    found = win.run_search()
    want = [n for n, o in zip(c.node_names(), c.node_op_types(), strict=True) if "conv" in n.lower() or
            "conv" in o.lower()]
    assert found == want and found and c.selected_nodes() == found and main.selected_nodes() == []
    win.act_find_next.trigger()
    assert c.selected_nodes() == [found[1]] and main.selected_nodes() == []  # Enter showed the first hit, F3 the next

    # Select all of this type: the exported graph's nodes of that op type
    relu = [n for n, o in zip(c.node_names(), c.node_op_types(), strict=True) if o == "Relu"]
    c.select_nodes([relu[0]])
    win.act_same_type.trigger()
    assert c.selected_nodes() == relu and len(relu) > 1 and main.selected_nodes() == []

    # colours by the model's figures are off here; on in the Graph tab
    assert not win.act_color_sqnr.isEnabled() and not win.act_color_sensitivity.isEnabled()

    # Show Q/DQ as Nodes redraws this tab only, and the check follows the tab shown
    assert win.act_show_qdq.isEnabled() and not win.act_show_qdq.isChecked()
    with qtbot.waitSignal(c.layoutReady, timeout=300_000):
        win.act_show_qdq.trigger()
    assert tab.qdq_nodes and "QuantizeLinear" in c.node_op_types()
    assert win._collapse_qdq()  # the model's graph keeps its badges

    # Export Picture: this tab's view, named after its file
    asked = []

    def fake(parent, title, start, *a, **k):
        asked.append(start)
        return str(tmp_path / "view.png"), "PNG picture (*.png)"

    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(fake))
    win.act_export_picture.trigger()
    assert Path(asked[0]).name == "digits.qdq.png"
    c.export_picture(tmp_path / "direct.png")
    main.export_picture(tmp_path / "main.png")
    assert QImage(str(tmp_path / "view.png")) == QImage(str(tmp_path / "direct.png"))
    assert QImage(str(tmp_path / "view.png")) != QImage(str(tmp_path / "main.png"))

    # back on the Graph tab: its own Q/DQ choice; the colour actions wait for figures (F5)
    win.tabs.setCurrentIndex(0)
    assert not win.act_show_qdq.isChecked() and "F5" in win.act_color_sqnr.toolTip()
    win.tabs.setCurrentWidget(tab)
    assert win.act_show_qdq.isChecked()

    # a dock's node row names a node of the model: the Graph tab comes forward with it selected
    win.focus_node("/f/f.3/Conv")
    assert win.tabs.currentWidget() is main and main.selected_nodes() == ["/f/f.3/Conv"]

    # the Search Hits dock shows the hits on the graph they were found in
    win.search_hits.nodeClicked.emit(found[-1])
    assert win.tabs.currentWidget() is tab and c.selected_nodes() == [found[-1]]
    win.tabs.close_tab(win.tabs.indexOf(tab))


def test_graph_actions_are_off_in_a_tab_without_a_graph(qtbot, window, open_file, dialogs):
    win = window
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    win.tabs.setCurrentIndex(win.tabs.addTab(QLabel("no graph"), "Other"))
    for name in ("fit", "zoom_in", "expand_all", "depth_1", "same_type", "find_next", "show_qdq", "export_picture",
                 "color_sqnr"):
        assert not getattr(win, f"act_{name}").isEnabled(), name
    assert win.act_legend.isEnabled()
    win.on_shown_canvas("fit")  # a call that bypasses the menu: one line, no crash
    assert [kind for kind, _t, _x in dialogs] == ["critical"]
    assert dialogs[0][2].splitlines()[0] == "The Other tab shows no single graph."
    dialogs.clear()
    win.tabs.setCurrentIndex(0)
    assert all(getattr(win, f"act_{n}").isEnabled() for n in ("fit", "same_type", "show_qdq", "export_picture"))


def test_a_tab_opened_with_the_legend_off_shows_none(qtbot, window, open_file, example_qdq_file, tmp_path):
    win = window
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    win.act_legend.trigger()  # View > Legend off
    assert not win.act_legend.isChecked() and win.canvas.legend_overlay.isHidden()
    tab = _exported_tab(qtbot, win, example_qdq_file, tmp_path)
    assert tab.canvas.legend_overlay.isHidden()
    win.act_legend.trigger()
    assert not tab.canvas.legend_overlay.isHidden()
    win.tabs.close_tab(win.tabs.indexOf(tab))


def test_search_in_a_tab_without_a_graph_says_so(qtbot, window, open_file):
    win = window
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    win.tabs.setCurrentIndex(win.tabs.addTab(QLabel("no graph"), "Other"))
    win.search.setText("Conv")
    assert win.run_search() == [] and win.canvas.selected_nodes() == []
    assert win.status_label.text().startswith("The Other tab has no graph to search")
