"""The diff tab's list opened in a 1024x700 window shows node names whole: its name column is
diff_view.NAME_READABLE px wide, the panes keeping diff_view.MIN_PANE_WIDTH each.

The list opened at its share of the tab (LIST_MAX_SHARE, 187 px of 726): a name column of 108 px shortened 61 of
ppocrv4_rec's 378 matched names ("p2o.GlobalAveragePool.0", "p2o.HardSigmoid.1") and drew
"p2o.BatchNormalization.0" as "…Batc…on.0". Offscreen; the quantized file is our QDQ export (diff_app)."""

from __future__ import annotations

from diff_app import PPOCR, ppocr_qdq, settle
from item_text import shown_text

from workbench.qt import diff_view
from workbench.qt.diff_rows import FLOAT_COL, SQNR_COL


def test_names_whole_in_a_small_window(qtbot, window, compare_in_app, tmp_path, corpus):
    win = window
    win.resize(1024, 700)
    settle()
    tab = compare_in_app(win, PPOCR / "model.onnx", PPOCR / "calib.npz", ppocr_qdq(tmp_path), 4)
    with qtbot.waitSignal(tab.panesReady, timeout=540_000):
        pass
    settle()
    assert (win.width(), win.height()) == (1024, 700)
    tree = tab.tree
    assert (
        tree.columnWidth(FLOAT_COL) >= diff_view.NAME_READABLE - 5
    )  # 108 px before (the panes may take 5 px)
    matched = tab.groups["matched"]
    rows = [matched.child(i) for i in range(matched.childCount())]
    cut = [r.text(FLOAT_COL) for r in rows if shown_text(tree, r, FLOAT_COL) != r.text(FLOAT_COL)]
    assert len(rows) == 378 and len(cut) <= 2, cut  # 61 before; p2o.GlobalAveragePool.0 and .2 still are
    sqnr_right = tree.header().sectionViewportPosition(SQNR_COL) + tree.columnWidth(SQNR_COL)
    assert (
        sqnr_right <= tree.viewport().width() and tree.horizontalScrollBar().value() == 0
    )  # SQNR beside them
    for canvas in (tab.float_canvas, tab.canvas):
        assert canvas.width() >= diff_view.MIN_PANE_WIDTH, canvas.width()
