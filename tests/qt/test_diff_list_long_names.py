"""The diff tab's list opens wide enough for long scoped node names, read with one cut at most.

minilm_l6_v2's names ("/bert/encoder/layer.3/attention/self/value/MatMul") in the list of the default window
(1400 x 900: the list 188 px, its name column about 110 px) were cut twice, the shared start and then the
middle of a segment ("…emb…ape", "…word…ther"); at 1024 x 700 (a 130 px list) the name column's 80 px floor
also pushed the SQNR column past the list's edge. The list now opens as wide as its names (up to
NAME_COLUMN_MAX) and their SQNR need, up to LIST_MAX_SHARE of the tab. The model here is a BERT-like chain with
those names; the quantized file is our QDQ export of it (cpu-u8s8). Offscreen."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

pytest.importorskip("PySide6")

from item_text import shown_text  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from workbench.core import api  # noqa: E402
from workbench.qt import diff_view  # noqa: E402
from workbench.qt.diff_rows import FLOAT_COL, SQNR_COL  # noqa: E402

ELLIPSIS = "\u2026"


def _bert_like(folder):
    """Six layers of query / key / value MatMul + Add, named as an exported BERT names them; 16 rows of data."""
    rng = np.random.default_rng(0)
    nodes, inits, prev = [], [], "x"
    for layer in range(6):
        for part in ("query", "key", "value"):
            scope = f"/bert/encoder/layer.{layer}/attention/self/{part}"
            w, b = f"{scope}.weight", f"{scope}.bias"
            inits += [numpy_helper.from_array(rng.standard_normal((16, 16)).astype(np.float32) * 0.3, w),
                      numpy_helper.from_array(rng.standard_normal(16).astype(np.float32) * 0.1, b)]
            nodes += [helper.make_node("MatMul", [prev, w], [f"{scope}/MatMul_output_0"], name=f"{scope}/MatMul"),
                      helper.make_node("Add", [f"{scope}/MatMul_output_0", b], [f"{scope}/Add_output_0"],
                                       name=f"{scope}/Add")]
            prev = f"{scope}/Add_output_0"
    graph = helper.make_graph(nodes, "bert_like", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 8, 16])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    float_path, calib, qdq = folder / "bert_like.onnx", folder / "calib.npz", folder / "bert_like.qdq.onnx"
    onnx.save(model, float_path)
    np.savez(calib, x=rng.standard_normal((16, 1, 8, 16)).astype(np.float32))
    api.export(api.quantize(api.open_model(float_path), api.make_recipe("cpu-u8s8"), data=str(calib), samples=16),
               qdq)
    return float_path, calib, qdq


@pytest.fixture(scope="module")
def bert_like(tmp_path_factory):
    return _bert_like(tmp_path_factory.mktemp("bert_like"))



def _cut_in_a_segment(label: str) -> bool:
    """True when ``label`` has a second ellipsis that cuts into a segment ("…emb…ape"), not one that stands
    for whole segments ("…layer.3/…/value/MatMul")."""
    at = [i for i, c in enumerate(label) if c == ELLIPSIS]
    return len(at) > 1 and any(label[i - 1:i] != "/" and label[i + 1:i + 2] != "/" for i in at[1:])


def _open(qtbot, window, compare_in_app, bert_like, size):
    window.resize(*size)
    tab = compare_in_app(window, *bert_like, 8)
    with qtbot.waitSignal(tab.panesReady, timeout=300_000):
        pass
    for _ in range(10):
        QApplication.processEvents()
    return tab


def _rows(tab):
    matched = tab.groups["matched"]
    return [matched.child(i) for i in range(matched.childCount())]


def test_long_names_read_with_one_cut_at_the_default_size(qtbot, window, compare_in_app, bert_like):
    tab = _open(qtbot, window, compare_in_app, bert_like, (1400, 900))
    tree = tab.tree
    metrics = tree.fontMetrics()
    assert max(metrics.horizontalAdvance(r.text(FLOAT_COL)) for r in _rows(tab)) > diff_view.NAME_COLUMN_MAX
    assert tree.columnWidth(FLOAT_COL) >= 180  # was 110 px
    port = tree.viewport().width()
    assert tree.header().sectionViewportPosition(SQNR_COL) + tree.columnWidth(SQNR_COL) <= port
    assert tree.width() <= diff_view.LIST_MAX_SHARE * tab.width() + 1
    for canvas in (tab.float_canvas, tab.canvas):
        assert canvas.width() >= diff_view.MIN_PANE_SHARE * tab.width(), (canvas.width(), tab.width())
    rows = _rows(tab)
    assert len(rows) == 36
    texts = [shown_text(tree, r, FLOAT_COL) for r in rows]
    assert len(set(texts)) == len(rows), Counter(texts).most_common(3)
    assert [t for t in texts if _cut_in_a_segment(t)] == []
    assert all(metrics.horizontalAdvance(t) <= tree.columnWidth(FLOAT_COL) for t in texts)


def test_the_sqnr_column_shows_beside_the_names_in_a_small_window(qtbot, window, compare_in_app, bert_like):
    tab = _open(qtbot, window, compare_in_app, bert_like, (1024, 700))
    tree = tab.tree
    port = tree.viewport().width()
    right = tree.header().sectionViewportPosition(SQNR_COL) + tree.columnWidth(SQNR_COL)
    assert right <= port, (right, port, [tree.columnWidth(c) for c in range(3)])  # was past the list's edge
    assert tree.horizontalScrollBar().value() == 0
    assert tree.columnWidth(FLOAT_COL) > diff_view.NAME_COLUMN_MIN  # the list is wider than LIST_SHARE
    for canvas in (tab.float_canvas, tab.canvas):  # a narrow tab: the list's names first (NAME_READABLE)
        least = min(diff_view.MIN_PANE_SHARE * tab.width(), diff_view.MIN_PANE_WIDTH)
        assert canvas.width() >= least, (canvas.width(), tab.width())
