"""Mouse, keyboard and tooltip handling of the graph canvas (a mixin of ``GraphCanvas``).

Click selects, Shift+click adds, Ctrl+click toggles, a drag on empty space draws a rubber band
(Shift/Ctrl add to the selection), middle-drag or Alt+drag pans, the wheel zooms under the mouse,
double-click activates a node, Ctrl+A selects all, Esc clears (before it cancels a running job), +/- zoom (toward
the selection, else around the view's centre). On a group: a click on
the chevron (or a double-click on a box or an open group's title bar) opens / collapses it; a
click on a collapsed box selects its nodes.
"""

from __future__ import annotations

import html

from PySide6.QtCore import QEvent, QPoint, QRect, QSize, Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QToolTip

from workbench.qt.canvas.group_figures import sqnr_text
from workbench.qt.canvas.groups_item import chevron_rect
from workbench.qt.canvas.scene_data import TITLE_BAR


class CanvasInteraction:
    """Event handlers; expects the attributes and helpers of ``GraphCanvas``."""

    def _node_at(self, pos: QPoint) -> int | None:
        return self._state.data.at(self.mapToScene(pos)) if self._state else None

    def _group_hit(self, pos: QPoint) -> tuple[int, str] | None:
        """(group, part) under ``pos``: part is ``"chevron"``, ``"box"`` (collapsed), ``"title"``
        (an open group's title bar) or ``"frame"`` (inside an open group)."""
        if self._state is None or self._state.data.plan is None:
            return None
        point = self.mapToScene(pos)
        d = self._state.data
        g = d.group_at(point)
        if g is None:
            return None
        box = d.group_rect(g)
        if chevron_rect(box).contains(point):
            return g, "chevron"
        if g in d.placement.collapsed:
            return g, "box"
        return g, "title" if point.y() <= box.top() + TITLE_BAR else "frame"

    def mousePressEvent(self, event) -> None:
        pos = event.position().toPoint()
        if event.button() == Qt.MouseButton.MiddleButton or (
                event.button() == Qt.MouseButton.LeftButton and event.modifiers() & Qt.KeyboardModifier.AltModifier):
            self._pan_last = pos
            self.viewport().setCursor(Qt.CursorShape.ClosedHandCursor)
            return
        if event.button() != Qt.MouseButton.LeftButton or self._state is None:
            return super().mousePressEvent(event)
        i = self._node_at(pos)
        mods = event.modifiers()
        hit = self._group_hit(pos) if i is None else None
        if hit is not None and hit[1] == "chevron":
            self.toggle_group(self._state.data.hierarchy.paths[hit[0]])
            return
        if hit is not None and hit[1] == "box":
            members = set(self._state.data.hierarchy.members(hit[0]).tolist())
            additive = mods & (Qt.KeyboardModifier.ShiftModifier | Qt.KeyboardModifier.ControlModifier)
            self._set_selection(self._state.selected | members if additive else members)
            return
        if i is None:
            e = self._edge_at(pos)
            if e is not None:  # a click on an edge (its midpoint, where a Q/DQ badge sits)
                self.select_edge(e)
                return
            self._band_origin = pos
            self._band.setGeometry(QRect(pos, QSize()))
            self._band.show()
            return
        sel = set(self._state.selected)
        if mods & Qt.KeyboardModifier.ControlModifier:
            sel ^= {i}
        elif mods & Qt.KeyboardModifier.ShiftModifier:
            sel.add(i)
        else:
            sel = {i}
        self._set_selection(sel)

    def mouseMoveEvent(self, event) -> None:
        pos = event.position().toPoint()
        if self._pan_last is not None:
            delta = pos - self._pan_last
            self._pan_last = pos
            self.horizontalScrollBar().setValue(self.horizontalScrollBar().value() - delta.x())
            self.verticalScrollBar().setValue(self.verticalScrollBar().value() - delta.y())
        elif self._band_origin is not None:
            self._band.setGeometry(QRect(self._band_origin, pos).normalized())
        else:
            super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event) -> None:
        if self._pan_last is not None:
            self._pan_last = None
            self.viewport().unsetCursor()
            return
        if self._band_origin is None or self._state is None:
            return super().mouseReleaseEvent(event)
        rect = QRect(self._band_origin, event.position().toPoint()).normalized()
        self._band_origin = None
        self._band.hide()
        mods = event.modifiers()
        additive = bool(mods & (Qt.KeyboardModifier.ShiftModifier | Qt.KeyboardModifier.ControlModifier))
        hits = set()
        if rect.width() > 2 or rect.height() > 2:
            scene_rect = self.mapToScene(rect).boundingRect()
            hits = set(self._state.data.in_rect(scene_rect).tolist())
            hits |= set(self._state.data.hidden_in_rect(scene_rect).tolist())  # nodes of collapsed boxes
        self._set_selection(self._state.selected | hits if additive else hits)

    def wheelEvent(self, event) -> None:
        """Zoom around the point under the mouse, which stays under it (Qt's own anchor under the mouse read the
        scene point of the last mouse move it saw, which without mouse tracking is the last drag's)."""
        self._zoom(1.0015 ** event.angleDelta().y(), event.position())

    def mouseDoubleClickEvent(self, event) -> None:
        pos = event.position().toPoint()
        i = self._node_at(pos)
        if i is not None:
            self.nodeActivated.emit(self._state.data.names[i])
            return
        hit = self._group_hit(pos)
        if hit is not None and hit[1] in ("box", "title"):
            self.toggle_group(self._state.data.hierarchy.paths[hit[0]])

    def event(self, event) -> bool:
        """Esc with nodes selected is the canvas's (it clears them), not a window shortcut's: Run > Cancel took it
        while a job ran, cancelling the job and keeping the selection. With nothing selected Esc cancels."""
        if (event.type() == QEvent.Type.ShortcutOverride and event.key() == Qt.Key.Key_Escape
                and self._state is not None and self._state.selected):
            event.accept()
            return True
        return super().event(event)

    def keyPressEvent(self, event) -> None:
        if self._state is not None and event.matches(QKeySequence.StandardKey.SelectAll):
            self._set_selection(set(range(len(self._state.data))))
        elif event.key() == Qt.Key.Key_Escape:
            self._set_selection(set())
        elif event.key() in (Qt.Key.Key_Plus, Qt.Key.Key_Equal):
            self.zoom_in()
        elif event.key() == Qt.Key.Key_Minus:
            self.zoom_out()
        else:
            super().keyPressEvent(event)

    def viewportEvent(self, event) -> bool:
        if event.type() == QEvent.Type.ToolTip and self._state is not None:
            i = self._node_at(event.pos())
            hit = self._group_hit(event.pos()) if i is None else None
            e = self._edge_at(event.pos()) if i is None and (hit is None or hit[1] == "frame") else None
            if i is not None:
                QToolTip.showText(event.globalPos(), self._tooltip(i), self.viewport())
            elif hit is not None and hit[1] != "frame":
                QToolTip.showText(event.globalPos(), self._group_tooltip(hit[0]), self.viewport())
            elif e is not None:
                QToolTip.showText(event.globalPos(), self.edge_tooltip(e), self.viewport())
            else:
                QToolTip.hideText()
            return True
        return super().viewportEvent(event)

    def _group_tooltip(self, g: int) -> str:
        s = self._state
        h = s.data.hierarchy
        head = h.paths[g] if h.source == "scopes" else h.titles[g]  # a block's path is only its number
        lines = [f"<b>{html.escape(head)}</b>", f"{len(h.members(g))} nodes"]
        if g in s.group_texts:
            lines.append(html.escape(s.group_texts[g]))
        lines.append("double-click or click \u25b8 to " + ("open" if g in s.data.placement.collapsed else "collapse"))
        return "<br>".join(lines)

    def _tooltip(self, i: int) -> str:
        st = self._state.data.structure
        name = st.names[i]
        lines = [f"<b>{html.escape(st.op_types[i])}</b> {html.escape(name)}"]
        if i < len(st.out_shapes) and st.out_shapes[i]:
            lines.append(f"output shape: {html.escape(st.out_shapes[i])}")
        if name in self._dtypes:
            lines.append(f"activation dtype: {html.escape(self._dtypes[name])}")
        if name in self._figures:  # a ranked figure (the sensitivity sweep's): its value, not the colour's
            value = self._figures[name]
            shown = "exact" if value == float("inf") else f"{value:.1f} dB"
            lines.append(f"{html.escape(self._value_label.removesuffix(' (dB)'))}: {shown}")
        elif name in self._errors:  # "SQNR", or the figure the values are ("Own noise, local SQNR")
            lines.append(f"{html.escape(self._value_label.split(' (dB)')[0])}: {sqnr_text(self._errors[name])}")
        if i in st.node_tags:
            lines.append(f"collapsed Q/DQ: {html.escape(st.node_tags[i])}")
        lines += self._node_quant_lines(name)
        if st.has_subgraph[i]:
            lines.append("has a body graph (double-click to open)")
        return "<br>".join(lines)

    def tooltip_text(self, name: str) -> str:
        """The tooltip of node ``name`` (rich text). Raises KeyError for an unknown name."""
        if self._state is None:
            raise KeyError(name)
        return self._tooltip(self._state.data.index[name])
