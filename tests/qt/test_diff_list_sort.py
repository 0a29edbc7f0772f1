"""The diff tab's list sorts by any column and keeps long node names apart.

A two-layer MLP whose node names differ only in their middle ("/model/encoder/layer.0/attention/output/
dense/MatMul" and "layer.1/..."), our QDQ export of it (cpu-u8s8) and 32 random calibration rows; the
SQNR of every matched node is measured by ``compare_models`` on those rows (onnxruntime). The list could
not be sorted at all, and its 150 px name column showed both layers' MatMul as "/model/enco…dense/MatMul".
"""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication, QStyleOptionViewItem

from workbench.core import api
from workbench.core.api import compare_models, open_model
from workbench.qt.diff_rows import FLOAT_COL, QUANT_COL, SQNR_COL, sort_key
from workbench.qt.diff_view import GROUPS, DiffTab

SCOPE = "/model/encoder/layer.{k}/attention/output/dense/"


def _mlp() -> onnx.ModelProto:
    rng = np.random.default_rng(7)
    nodes, inits, x = [], [], "x"
    for k in range(2):
        scope = SCOPE.format(k=k)
        w = numpy_helper.from_array(rng.normal(0, 0.5, (16, 16)).astype(np.float32), f"w{k}")
        b = numpy_helper.from_array(rng.normal(0, 0.1, (16,)).astype(np.float32), f"b{k}")
        inits += [w, b]
        nodes += [helper.make_node("MatMul", [x, f"w{k}"], [f"m{k}"], name=scope + "MatMul"),
                  helper.make_node("Add", [f"m{k}", f"b{k}"], [f"a{k}"], name=scope + "Add"),
                  helper.make_node("Relu", [f"a{k}"], [f"r{k}"], name=scope + "Relu")]
        x = f"r{k}"
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["N", 16])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def mlp_diff(tmp_path_factory):
    folder = tmp_path_factory.mktemp("diff_sort")
    float_path, calib, out = folder / "mlp.onnx", folder / "calib.npz", folder / "mlp.qdq.onnx"
    onnx.save(_mlp(), float_path)
    np.savez(calib, x=np.random.default_rng(3).normal(0, 1, (32, 16)).astype(np.float32))
    api.export(api.quantize(api.open_model(float_path), api.make_recipe("cpu-u8s8"), data=str(calib), samples=32), out)
    diff = compare_models(open_model(float_path), open_model(out).proto, str(calib), samples=32, quant_label=str(out))
    return diff, out


def _column(tab: DiffTab, group: str, col: int) -> list[str]:
    g = tab.groups[group]
    return [g.child(i).text(col) for i in range(g.childCount())]


def _shown(tab: DiffTab, item, col: int) -> str:
    """The text the name column's delegate draws for ``item``."""
    index = tab.tree.indexFromItem(item, col)
    option = QStyleOptionViewItem()
    option.initFrom(tab.tree)
    option.rect = tab.tree.visualRect(index)
    option.widget = tab.tree
    tab.tree.itemDelegateForColumn(col).initStyleOption(option, index)
    return option.text


def test_sqnr_sort_puts_figureless_rows_last_and_exact_best():
    values = [12.5, None, math.inf, -math.inf, 9.75, math.nan]
    up = sorted(values, key=lambda v: sort_key(v, False))
    assert up[:4] == [-math.inf, 9.75, 12.5, math.inf] and up[4] is None and math.isnan(up[5])
    # Qt compares the other way round for a descending sort: the rows without a figure still go last
    down = sorted(values, key=lambda v: sort_key(v, True), reverse=True)
    assert down[:4] == [math.inf, 12.5, 9.75, -math.inf] and down[4] is None and math.isnan(down[5])


def test_diff_list_sorts_by_value_and_keeps_long_names_apart(qtbot, mlp_diff):
    diff, out = mlp_diff
    tab = DiffTab(diff, diff.quant_proto, out, "mlp.onnx")
    qtbot.addWidget(tab)
    tab.resize(1400, 900)
    tab.show()
    try:
        with qtbot.waitSignal(tab.panesReady, timeout=540_000):
            pass
        matched = tab.groups["matched"]
        measured = {m.quant_node: db for m in diff.matches
                    for t, db in diff.sqnr.items() if diff.producers.get(t) == m.quant_node}
        assert len(measured) == matched.childCount() == 6  # MatMul, Add, Relu of both layers, all measured
        # the list opens in the diff's order; a click on the SQNR title sorts by value, worst first
        assert _column(tab, "matched", FLOAT_COL) == [m.float_node for m in diff.matches]
        header = tab.tree.header()
        qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton,
                         pos=QPoint(header.sectionViewportPosition(SQNR_COL) + 10, header.height() // 2))
        assert (tab.tree.sortColumn(), header.sortIndicatorOrder()) == (SQNR_COL, Qt.SortOrder.AscendingOrder)
        order = [measured[q] for q in _column(tab, "matched", QUANT_COL)]
        assert order == sorted(measured.values())
        assert _column(tab, "matched", SQNR_COL) == [f"{v:.2f}" if math.isfinite(v) else "exact" for v in order]
        tab.tree.sortByColumn(SQNR_COL, Qt.SortOrder.DescendingOrder)
        assert [measured[q] for q in _column(tab, "matched", QUANT_COL)] == sorted(measured.values(), reverse=True)
        # the groups keep their order, whichever way the rows are sorted
        titles = [tab.tree.topLevelItem(i).text(0).rsplit(" (", 1)[0] for i in range(tab.tree.topLevelItemCount())]
        assert titles == list(GROUPS)
        tab.tree.sortByColumn(FLOAT_COL, Qt.SortOrder.AscendingOrder)
        assert _column(tab, "matched", FLOAT_COL) == sorted(m.float_node for m in diff.matches)

        # a 150 px name column: the layer that tells two MatMuls apart stays, the whole name is the tooltip
        tab.tree.setColumnWidth(FLOAT_COL, 150)
        QApplication.processEvents()
        rows = {matched.child(i).text(FLOAT_COL): matched.child(i) for i in range(matched.childCount())}
        metrics = tab.tree.fontMetrics()
        shown = {}
        for k in range(2):
            name = SCOPE.format(k=k) + "MatMul"
            assert metrics.horizontalAdvance(name) > 150  # too long for the column
            item = rows[name]
            assert item.toolTip(FLOAT_COL) == name
            shown[k] = _shown(tab, item, FLOAT_COL)
            assert f"layer.{k}/" in shown[k] and shown[k].endswith("MatMul"), shown[k]
            assert metrics.horizontalAdvance(shown[k]) <= 150
        assert shown[0] != shown[1]

        # after sorting, a click on a row still selects that row's pair in both panes
        tab.tree.sortByColumn(SQNR_COL, Qt.SortOrder.AscendingOrder)
        first = matched.child(0)
        worst = min(measured, key=measured.get)
        assert first.text(QUANT_COL) == worst
        tab.tree.scrollToItem(first)
        rect = tab.tree.visualItemRect(first)
        qtbot.mouseClick(tab.tree.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(rect.left() + 20, rect.center().y()))
        qtbot.waitUntil(lambda: tab.canvas.selected_nodes() == [worst], timeout=10_000)
        assert tab.float_canvas.selected_nodes() == [first.text(FLOAT_COL)]
    finally:
        tab.shutdown()
