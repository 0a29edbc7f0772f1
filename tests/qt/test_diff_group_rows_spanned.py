"""The diff list's group rows ("matched (7)", "folded or fused (3)") span both of its columns.

Found by a user pass at 1024 x 700: the list is about 120 px wide there and the group titles were drawn in the name
column alone, shortened to "matc... (7)", "fold... (3)", "remo... (0)": the span was set before the row was in
the tree, where Qt ignores it."""

from __future__ import annotations

from bundled_example import EXAMPLE


def test_group_rows_span_the_list(qtbot, window, compare_in_app, ort_qdq_file):
    window.resize(1024, 700)
    tab = compare_in_app(window, EXAMPLE / "digits_cnn.onnx", EXAMPLE / "digits_cnn_calib.npz", ort_qdq_file, 4)
    tree = tab.tree
    groups = [tree.topLevelItem(i) for i in range(tree.topLevelItemCount())]
    assert [g.text(0).split(" (")[0] for g in groups][:2] == ["matched", "left float"]
    both = tree.columnWidth(0) + tree.columnWidth(1)
    for group in groups:
        assert group.isFirstColumnSpanned(), group.text(0)  # False before
        assert tree.visualItemRect(group).width() >= both, (group.text(0), tree.visualItemRect(group), both)
