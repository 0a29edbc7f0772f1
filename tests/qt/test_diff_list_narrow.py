"""The diff tab's list at its opening width and narrower: node names stay apart, the SQNR column shows.

ppocrv4_rec's nodes are named "p2o.<Op>.<k>" (no "/" scopes): a list under ~125 px drew "p2o.Add.100" and
"p2o.Mul.100" both as "p2o…100" (22 of the 378 matched rows read like another at a 100 px name column),
and at the window's default size the name column's 130 px floor pushed the SQNR column (95 px for its
title "SQNR (dB)") past the list's 173 px viewport: it was seen only after a sideways scroll. The
quantized file is our QDQ export of ppocrv4_rec (cpu-u8s8, 4 calibration rows). Offscreen.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import shared_paths

pytest.importorskip("PySide6")

from item_text import shown_text  # noqa: E402
from PySide6.QtWidgets import QApplication, QTreeWidget  # noqa: E402

from workbench.core import api  # noqa: E402
from workbench.qt.diff_rows import FLOAT_COL, SQNR_COL  # noqa: E402
from workbench.qt.diff_view import LIST_MAX_SHARE  # noqa: E402
from workbench.qt.elide import distinct_labels, fine_segments  # noqa: E402

CORPUS = shared_paths.CORPUS / "ppocrv4_rec"


@pytest.fixture(scope="module")
def ppocr_qdq(tmp_path_factory, corpus) -> Path:
    out = tmp_path_factory.mktemp("ppocr_qdq") / "ppocr.qdq.onnx"
    model = api.open_model(CORPUS / "model.onnx")
    api.export(
        api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(CORPUS / "calib.npz"), samples=4), out
    )
    return out


def test_flat_names_keep_the_part_that_tells_them_apart(qapp):
    assert fine_segments("p2o.Add.100") == ["p2o.", "Add.", "100"]
    names = [f"p2o.{op}.{k}" for op in ("Add", "Mul", "Conv", "Clip") for k in (0, 10, 100, 110)]
    metrics = QTreeWidget().fontMetrics()
    width = metrics.horizontalAdvance("\u2026Conv.100") + 1  # "p2o.Add.100" does not fit
    labels = distinct_labels(names, [""] * len(names), metrics, width)
    assert len(set(labels)) == len(names), Counter(labels).most_common(3)
    assert all(metrics.horizontalAdvance(t) <= width for t in labels)
    shown = dict(zip(names, labels, strict=True))
    assert shown["p2o.Add.100"] == "\u2026Add.100" and shown["p2o.Mul.100"] == "\u2026Mul.100"
    assert metrics.horizontalAdvance("p2o.Add.100") > width
    assert shown["p2o.Add.0"] == "p2o.Add.0"  # what fits stays whole


def test_sqnr_column_shows_and_names_stay_apart(qtbot, window, compare_in_app, ppocr_qdq):
    win = window
    assert (win.width(), win.height()) == (1400, 900)
    tab = compare_in_app(win, CORPUS / "model.onnx", CORPUS / "calib.npz", ppocr_qdq, 4)
    with qtbot.waitSignal(tab.panesReady, timeout=540_000):
        pass
    for _ in range(10):
        QApplication.processEvents()
    tree = tab.tree
    port = tree.viewport().width()
    assert tree.width() <= LIST_MAX_SHARE * tab.width() + 1  # the list opens no wider: the panes get the room
    sqnr_right = tree.header().sectionViewportPosition(SQNR_COL) + tree.columnWidth(SQNR_COL)
    assert sqnr_right <= port, (sqnr_right, port, [tree.columnWidth(c) for c in range(3)])
    assert tree.horizontalScrollBar().value() == 0
    matched = tab.groups["matched"]
    rows = [matched.child(i) for i in range(matched.childCount())]
    assert len(rows) == 378
    texts = [shown_text(tree, r, FLOAT_COL) for r in rows]
    assert len(set(texts)) == len(rows), Counter(texts).most_common(3)
    # narrower still (the splitter dragged): a middle ellipsis made 22 pairs alike at 100 px
    metrics = tree.fontMetrics()
    for width in (100, 80):
        tree.setColumnWidth(FLOAT_COL, width)
        QApplication.processEvents()
        texts = [shown_text(tree, r, FLOAT_COL) for r in rows]
        assert len(set(texts)) == len(rows), (width, Counter(texts).most_common(3))
        assert all(metrics.horizontalAdvance(t) <= width for t in texts)
        by_name = dict(zip([r.text(FLOAT_COL) for r in rows], texts, strict=True))
        add, mul = by_name["p2o.Add.100"].lstrip("\u2026"), by_name["p2o.Mul.100"].lstrip("\u2026")
        assert add.startswith("A") and mul.startswith("M") and add.endswith("100") and mul.endswith("100")
