"""The window's central tabs: the model's graph (never closed), subgraph bodies and Netron.

:class:`ModelTabs` owns the tabs after the first: an If/Loop/Scan body opens in a tab of its own
(:meth:`ModelTabs.open_bodies`), an exported file in one tab however often it is shown
(:meth:`show_exported`), the Netron view is created on first use (:meth:`show_in_netron`),
and :meth:`follow_model` forgets the previous model's tabs when another model opens.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import onnx
from onnx import helper
from PySide6.QtWidgets import QTabWidget, QWidget

from workbench.core.errors import WorkbenchError
from workbench.qt.canvas.view import GraphCanvas
from workbench.qt.export_stale import STALE_SUFFIX
from workbench.qt.netron_view import NetronView
from workbench.qt.quant_tab import QuantModelTab
from workbench.qt.theme import colors_for, shown_theme


def drawn_as_is(text: str) -> str:
    """``text`` for a tab title, each '&' doubled: QTabBar reads a single one as a mnemonic marker ("Exported:
    R&D.onnx" was drawn "RD.onnx", the D underlined)."""
    return text.replace("&", "&&")


def exported_title(path: Path) -> str:
    """The title of the tab of the exported file ``path``."""
    return drawn_as_is(f"Exported: {Path(path).name}")


def shown_text(title: str) -> str:
    """The text a tab ``title`` draws: '&&' is one '&', a single '&' (a mnemonic marker) is not drawn."""
    return "&".join(part.replace("&", "") for part in title.split("&&"))

class ModelTabs(QTabWidget):
    """Tab 0 is ``canvas`` (the open model's graph); the other tabs come and go."""

    def __init__(self, canvas: GraphCanvas, parent: QWidget | None = None):
        super().__init__(parent)
        self.canvas = canvas
        self.netron: NetronView | None = None  # created on first use
        self.setTabsClosable(True)
        self.setDocumentMode(True)
        self.addTab(canvas, "Graph")
        self.tabBar().setTabButton(0, self.tabBar().ButtonPosition.RightSide, None)
        self.tabCloseRequested.connect(self.close_tab)

    def close_tab(self, index: int) -> None:
        """Close tab ``index`` (stops its Netron server or layout thread); the graph tab stays."""
        widget = self.widget(index)
        if index == 0 or widget is None:
            return
        self.removeTab(index)
        if widget is self.netron:
            self.netron.stop()
            self.netron = None
        elif callable(getattr(widget, "shutdown", None)):  # a graph, quantized-model or diff tab
            widget.shutdown()
        widget.deleteLater()

    def close_shown(self) -> None:
        """File > Close Tab (Ctrl+W): close the shown tab, unless it is the graph tab."""
        self.close_tab(self.currentIndex())

    def open_bodies(self, model, name: str) -> list[str]:
        """Open each graph attribute of node ``name`` of ``model`` (a PreparedModel) in a tab."""
        node = next((n for _path, n in model.iter_nodes() if n.name == name), None)
        if node is None:
            return []
        titles = []
        for attr in node.attribute:
            if attr.type != onnx.AttributeProto.GRAPH:
                continue
            view = GraphCanvas(self)
            colors = colors_for(shown_theme())
            view.set_theme_colors(colors.canvas_background, colors.canvas_edge)
            view.set_model(helper.make_model(attr.g, opset_imports=list(model.proto.opset_import)))
            title = f"{name}: {attr.name}"
            self.setCurrentIndex(self.addTab(view, drawn_as_is(title)))
            titles.append(title)
        return titles

    def shown_canvas(self) -> GraphCanvas | None:
        """The graph of the shown tab the View and Edit actions act on: the model's graph, a subgraph body
        or an exported file's graph; None for a diff tab (two panes) or the Netron tab."""
        widget = self.currentWidget()
        if isinstance(widget, QuantModelTab):
            return widget.canvas
        return widget if isinstance(widget, GraphCanvas) else None

    def index_of_canvas(self, canvas: GraphCanvas | None) -> int:
        """The index of the tab showing ``canvas`` (as :meth:`shown_canvas` gives it), -1 when its tab is closed."""
        for index in range(self.count()):
            widget = self.widget(index)
            if canvas is not None and (widget is canvas or getattr(widget, "canvas", None) is canvas):
                return index
        return -1

    def exported_tab(self, path: Path) -> QuantModelTab | None:
        """The open tab showing the exported file ``path`` (View > Open Exported Model), if any."""
        target = Path(path).resolve()
        for index in range(1, self.count()):
            widget = self.widget(index)
            if isinstance(widget, QuantModelTab) and widget.path.resolve() == target:
                return widget
        return None

    def show_exported(self, path: Path, *, forward: bool = True) -> tuple[QuantModelTab, str]:
        """Bring forward the tab of the exported file ``path``: the open one when the file is unchanged since
        it was read, a new one in its place when it was written again, else a new tab. Returns the tab and
        what was done ("shown", "reloaded" or "opened"). ``forward`` False: the shown tab stays in front
        (a tab reread in place stays in front when it was).

        Raises
        ------
        ModelError
            ``path`` cannot be read as ONNX (an open tab of it is left as it was).
        """
        old = self.exported_tab(path)
        if old is not None and not old.changed_on_disk():
            if forward:
                self.setCurrentWidget(old)
            return old, "shown"
        tab = QuantModelTab(path, self)
        title = exported_title(path)
        if old is None:
            index = self.addTab(tab, title)
            if forward:
                self.setCurrentIndex(index)
            return tab, "opened"
        index = self.indexOf(old)
        front = forward or self.currentWidget() is old
        self.insertTab(index, tab, title)
        if front:
            self.setCurrentIndex(index)
        self.close_tab(index + 1)
        return tab, "reloaded"

    def reread_exported(self, path: Path) -> QuantModelTab | None:
        """An export wrote ``path``: its open tab (if any) reads it again in place; the tab, None when none is open."""
        if self.exported_tab(path) is None:
            return None
        return self.show_exported(path, forward=False)[0]

    def mark_stale(self, note_for: Callable[[QuantModelTab], str]) -> None:
        """Each exported file's tab shows ``note_for(tab)`` (what changed since its export, "" nothing) above its
        graph, its title ending :data:`~workbench.qt.export_stale.STALE_SUFFIX` while there is one."""
        for index in range(1, self.count()):
            tab = self.widget(index)
            if isinstance(tab, QuantModelTab):
                note = note_for(tab)
                tab.set_stale(note)
                self.setTabText(index, exported_title(tab.path) + (drawn_as_is(STALE_SUFFIX) if note else ""))
                self.setTabToolTip(index, note)

    def show_in_netron(self, target: Path) -> str:
        """Show ``target`` in the Netron tab (created when missing) and bring it forward; the URL."""
        if self.netron is None:
            self.netron = NetronView(self)
            self.addTab(self.netron, "Netron")
        url = self.netron.show_model(target)
        self.setCurrentWidget(self.netron)
        return url

    def follow_model(self, path: Path) -> str | None:
        """Another model is open: close the subgraph tabs, show the graph tab, and point an open
        Netron tab at ``path``. Returns a note when Netron could not show it."""
        for index in range(self.count() - 1, 0, -1):
            if self.widget(index) is not self.netron:
                self.close_tab(index)
        self.setCurrentIndex(0)
        if self.netron is not None:
            try:
                self.netron.show_model(path)
            except WorkbenchError as exc:
                return f"Netron: {exc.message}"
        return None

    def shutdown(self) -> None:
        """Stop the Netron server and the subgraph tabs' layout threads (the window closes)."""
        if self.netron is not None:
            self.netron.stop()
        for i in range(1, self.count()):
            if self.widget(i) is not self.netron and callable(getattr(self.widget(i), "shutdown", None)):
                self.widget(i).shutdown()
