"""The text a QTreeWidget column's delegate draws for an item (after its eliding), for tests of lists."""

from __future__ import annotations

from PySide6.QtWidgets import QStyleOptionViewItem


def shown_text(tree, item, col: int) -> str:
    """The text ``tree``'s delegate of column ``col`` draws for ``item`` at its current width."""
    index = tree.indexFromItem(item, col)
    option = QStyleOptionViewItem()
    option.initFrom(tree)
    option.rect = tree.visualRect(index)
    option.widget = tree
    tree.itemDelegateForColumn(col).initStyleOption(option, index)
    return option.text
