"""A node whose own settings do not fit together (reduce_range ticked, then a 16-bit activation dtype) keeps its
settings on show beside the red line that says what is wrong, so the user can see and fix them in place.

Found by a user pass on ppocr_mobile_v2_cls: once Conv@0's activation was int16 with reduce_range, selecting it
alone hid its Weight, Activation and Bias sections (the exclude box kept the state of the node selected before),
and selected with other Convs its int16 was left out: the Activation section read uint8 for all of them."""

from __future__ import annotations

from PySide6.QtCore import Qt

from workbench.qt.inspector import MIXED

#: the red line of Conv@0 (it read "override: ...", naming no node, "Change the rule")
PROBLEM = ("override of node {}: invalid activation settings: reduce_range applies to 8-bit dtypes only, not int16. "
           "Change the override so the spec is consistent.")


def _int16_with_reduce_range(win, node: str = "Conv@0") -> None:
    """``node`` alone: reduce_range ticked (valid on uint8), then activation dtype int16 (reduce_range is 8-bit only)."""
    win.canvas.select_nodes([node])
    activation = win.inspector.roles["activation"]
    if not activation.expanded():
        activation.toggle.click()  # unfold the Activation section
    activation.reduce_range.click()
    activation.dtype.setCurrentText("int16")
    override = win.doc.recipe.overrides[node].activation
    assert (override.dtype, override.reduce_range) == ("int16", True)


def test_a_node_with_inconsistent_settings_shows_them_to_fix(qtbot, window, open_file, corpus):
    win = window
    open_file(win, corpus / "ppocr_mobile_v2_cls/model.onnx")
    inspector = win.inspector
    weight, activation, bias = (inspector.roles[r] for r in ("weight", "activation", "bias"))
    win.canvas.select_nodes(["Conv@1"])
    inspector.exclude.click()  # Conv@1 kept in float: the exclude box ticked
    assert win.doc.recipe.overrides["Conv@1"].exclude is True
    _int16_with_reduce_range(win)

    assert inspector.problems.text() == PROBLEM.format("Conv@0") and not inspector.problems.isHidden()
    for editor in (weight, activation, bias):  # all three were hidden
        assert not editor.isHidden() and editor.isEnabled()
    assert activation.expanded() and activation.dtype.currentText() == "int16"
    assert activation.reduce_range.checkState() == Qt.CheckState.Checked
    assert activation.source.text() == "override"
    assert weight.summary.text() == "int8, symmetric, per_channel, minmax (preset cpu-u8s8)"
    assert inspector.exclude.checkState() == Qt.CheckState.Unchecked  # was Conv@1's, ticked

    win.canvas.select_nodes(["Conv@1"])  # another node alone: its own settings
    assert inspector.exclude.checkState() == Qt.CheckState.Checked
    win.canvas.select_nodes(["Conv@0"])
    assert not activation.isHidden() and activation.dtype.currentText() == "int16"

    activation.reduce_range.click()  # fixed where it shows
    override = win.doc.recipe.overrides["Conv@0"].activation
    assert (override.dtype, override.reduce_range) == ("int16", False)
    assert inspector.problems.isHidden() and win.doc.plan_error is None
    assert activation.dtype.currentText() == "int16"
    assert activation.reduce_range.checkState() == Qt.CheckState.Unchecked


def test_a_selection_with_such_a_node_counts_its_settings(qtbot, window, open_file, corpus):
    win = window
    open_file(win, corpus / "ppocr_mobile_v2_cls/model.onnx")
    inspector = win.inspector
    activation = inspector.roles["activation"]
    _int16_with_reduce_range(win)

    win.canvas.select_nodes(["Conv@0", "Conv@1", "Conv@2"])
    assert inspector.problems.text() == PROBLEM.format("Conv@0")
    # uint8 and no reduce_range before: the values of Conv@1 and Conv@2 alone
    assert activation.dtype.currentIndex() == -1 and activation.dtype.placeholderText() == MIXED
    assert activation.reduce_range.checkState() == Qt.CheckState.PartiallyChecked
    assert activation.source.text() == "override, preset cpu-u8s8"
    activation.toggle.click()  # folded: the line counts each value
    assert activation.summary.text() == ("dtype mixed (uint8 on 2, int16 on 1), asymmetric, per_tensor, minmax, "
                                         "reduce_range on 1 of 3 (override, preset cpu-u8s8)")


def test_each_node_with_such_settings_is_named_in_the_red_line(qtbot, window, open_file, corpus):
    """Two selected nodes with the same inconsistent override: a line each, naming it (one line before, "override:
    ...", which did not say which of the selected nodes to fix)."""
    win = window
    open_file(win, corpus / "ppocr_mobile_v2_cls/model.onnx")
    _int16_with_reduce_range(win, "Conv@0")
    _int16_with_reduce_range(win, "Conv@1")
    win.canvas.select_nodes(["Conv@0", "Conv@1", "Conv@2"])
    assert win.inspector.problems.text() == "\n".join(PROBLEM.format(n) for n in ("Conv@0", "Conv@1"))
