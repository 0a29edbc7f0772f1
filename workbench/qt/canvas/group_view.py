"""Groups and pictures of the graph canvas (a mixin of ``GraphCanvas``).

Groups are addressed by their scope path (``"model.22/cv3.2"``, ``Hierarchy.paths``). Opening or
closing one rebuilds the scene geometry from the layout plan made by the worker
(``workbench.core.api.place``) and keeps the view's centre; see
``workbench.core.graph.group_layout`` for what moves. ``export_picture`` writes the current view as
PNG or SVG (File > Export Picture and ``workbench-cli render``), with the colour legend drawn into it
where the canvas shows it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import QPoint, QPointF, QRect, QRectF
from PySide6.QtGui import QPainter, QTransform

from workbench.core.api import expanded_to_depth
from workbench.qt.canvas.picture import write_picture
from workbench.qt.canvas.readable import readable_scale
from workbench.qt.canvas.scene_data import build_scene_data


class CanvasGroups:
    """Group and picture methods; expects the attributes and helpers of ``GraphCanvas``."""

    # ----------------------------------------------------------------- pictures
    def export_picture(self, path: str | Path) -> tuple[int, int]:
        """Write what the view shows now as PNG or SVG (by the suffix of ``path``), atomically
        (a temporary file in the same folder, then renamed), the colour legend included (drawn
        where the canvas shows it, as text in an SVG; every op type listed, no line asking for a click:
        ``LegendOverlay.set_picture``) unless View > Legend hides it. Returns the
        picture size in pixels. Raises what :func:`write_picture` raises (a bad suffix, a folder
        that cannot be written).
        """
        legend, shown = self.legend_overlay, self.legend_overlay.picture
        legend.set_picture(True)  # every op type, no "click to list" line (a fitted view is fitted to it)
        try:
            return self._write_picture(path)
        finally:
            legend.set_picture(shown)

    def _write_picture(self, path: str | Path) -> tuple[int, int]:
        """:meth:`export_picture` with the legend as it is now."""
        self._sync_items()
        size = self.viewport().size()

        def pixmap():
            picture = self.viewport().grab()
            painter = QPainter(picture)
            self._paint_legend(painter)
            painter.end()
            return picture

        def paint(painter: QPainter) -> None:
            titles = self._groups_item.titles if self._groups_item is not None else None
            if titles is not None:  # render() paints the items with no widget, as the minimap does
                titles.picture = True
            try:
                self.render(painter, QRectF(0, 0, size.width(), size.height()), self.viewport().rect())
            finally:
                if titles is not None:
                    titles.picture = False
            self._paint_legend(painter)

        return write_picture(path, size, pixmap, paint, self.group_hover())

    def group_hover(self) -> list[tuple[QRectF, str]]:
        """Each shown group's box or frame in viewport pixels (clipped to the viewport) with its full title and,
        for groups of name scopes, its scope path when it differs: the ``<title>`` of an SVG picture's hover area, since the drawn title
        is elided to the box (``"Conv.16 – Mul.1…"``). Outer groups first, so inner ones lie on top."""
        d = self._state.data if self._state is not None else None
        if d is None or d.hierarchy is None or not d.group_ids:
            return []
        h, view = d.hierarchy, QRectF(self.viewport().rect())
        out = []
        for k, g in sorted(enumerate(d.group_ids), key=lambda kg: h.depth[kg[1]]):
            box = QRectF(float(d.gx0[k]), float(d.gy0[k]), float(d.gx1[k] - d.gx0[k]), float(d.gy1[k] - d.gy0[k]))
            rect = QRectF(self.mapFromScene(box).boundingRect()).intersected(view)
            if rect.isEmpty():
                continue
            title, path = h.titles[g], h.paths[g]  # a path of flat-name blocks ("#0-9") means nothing to a reader
            out.append((rect, f"{title}\n{path}" if h.source == "scopes" and path != title else title))
        return out

    def legend_rect(self) -> QRect:
        """Where the colour legend sits in the viewport (and in exported pictures), pixels; empty when hidden."""
        legend = self.legend_overlay
        if legend.isHidden():
            return QRect()
        return QRect(legend.pos() - self.viewport().pos(), legend.size())

    def _paint_legend(self, painter: QPainter) -> None:
        """Draw the legend overlay (a child of the view, not of the viewport) into a picture of the viewport."""
        rect = self.legend_rect()
        if not rect.isEmpty():
            self.legend_overlay.render(painter, QPoint(rect.topLeft()))

    # ----------------------------------------------------------------- groups
    def groups(self) -> list[str]:
        """Scope paths of all groups (``"model.22/cv3.2"``), parents first; [] for a flat picture."""
        h = self._state.data.hierarchy if self._state else None
        return list(h.paths) if h is not None else []

    def shown_groups(self) -> dict[str, bool]:
        """Shown group path -> True when drawn collapsed (a box), False when open (a frame)."""
        if self._state is None or self._state.data.plan is None:
            return {}
        d = self._state.data
        return {d.hierarchy.paths[g]: g in d.placement.collapsed for g in d.group_ids}

    def expanded_groups(self) -> list[str]:
        """Paths of the open groups, parents first."""
        if self._state is None or self._state.data.plan is None:
            return []
        h = self._state.data.hierarchy
        return [h.paths[g] for g in sorted(self._state.data.expanded)]

    def group_of(self, name: str) -> str | None:
        """Path of the innermost group holding node ``name`` (None: top level or flat picture)."""
        d = self._state.data if self._state else None
        if d is None or d.plan is None or name not in d.index:
            return None
        g = d.hierarchy.node_group[d.index[name]]
        return d.hierarchy.paths[g] if g >= 0 else None

    def group_members(self, path: str) -> list[str]:
        """Names of all nodes inside group ``path``. Raises KeyError for an unknown path."""
        d = self._state.data if self._state else None
        if d is None or d.plan is None:
            raise KeyError(path)
        g = d.hierarchy.paths.index(path) if path in d.hierarchy.paths else None
        if g is None:
            raise KeyError(path)
        return [d.names[i] for i in d.hierarchy.members(g).tolist()]

    def group_scene_rect(self, path: str) -> QRectF:
        """Box or frame of a shown group. Raises KeyError when ``path`` is unknown or not shown."""
        d = self._state.data if self._state else None
        if d is None or d.plan is None or path not in d.hierarchy.paths:
            raise KeyError(path)
        g = d.hierarchy.paths.index(path)
        if g not in d.placement.boxes:
            raise KeyError(path)
        return d.group_rect(g)

    def node_shown(self, name: str) -> bool:
        """False when node ``name`` is hidden inside a collapsed group. Raises KeyError for an unknown name."""
        if self._state is None:
            raise KeyError(name)
        return self._state.data.shown(self._state.data.index[name])

    def _group_id(self, path: str) -> int:
        d = self._state.data if self._state else None
        if d is None or d.plan is None or path not in d.hierarchy.paths:
            raise KeyError(f"no group {path!r}")
        return d.hierarchy.paths.index(path)

    def set_expanded(self, paths) -> None:
        """Open exactly the groups ``paths`` (others collapse). Raises KeyError for an unknown path."""
        self._apply_expanded({self._group_id(p) for p in paths})

    def expand_group(self, path: str) -> None:
        """Open group ``path`` and its ancestors; nodes outside it keep their x, and nothing
        above it moves (see ``workbench.core.graph.group_layout``)."""
        g = self._group_id(path)
        h = self._state.data.hierarchy
        opened = set(self._state.data.expanded)
        while g >= 0:
            opened.add(g)
            g = h.parent[g]
        self._apply_expanded(opened)

    def collapse_group(self, path: str) -> None:
        """Draw group ``path`` as one box again."""
        self._apply_expanded(set(self._state.data.expanded) - {self._group_id(path)})

    def toggle_group(self, path: str) -> None:
        if self._group_id(path) in self._state.data.expanded:
            self.collapse_group(path)
        else:
            self.expand_group(path)

    def expand_all(self) -> None:
        """Open every group and keep looking where the view looked (:meth:`_replace_in_place`; a
        whole-graph fit of every node was unreadable)."""
        if self._state is None or self._state.data.plan is None:
            return
        self._replace_in_place(set(range(len(self._state.data.hierarchy))))

    def _replace_in_place(self, expanded: set[int]) -> None:
        """Re-place the graph with ``expanded`` open, keeping the selected node (else the node or group
        box nearest the view's centre) where it was drawn (its group box when it is hidden in one), at
        the current zoom or the readable one (``readable.readable_scale``, 100 % at most) when that is
        closer; moved clear of the legend and the minimap when it was out of view."""
        anchor = self._anchor_node()
        at = self.mapFromScene(self._drawn_rect(anchor).center()) if anchor is not None else None
        self._apply_expanded(expanded)
        d = self._state.data
        target = max(self._scale(), min(1.0, readable_scale(d)))
        self.setTransform(QTransform.fromScale(target, target))
        if anchor is None:
            self._sync_items()
            self._minimap.update()
            return
        rect = self._drawn_rect(anchor)
        spot = QPointF(at) if QRectF(self.viewport().rect()).contains(QPointF(at)) else self._clear_spot(rect)
        self._show_at(rect.center(), spot)

    def view_anchor(self) -> dict | None:
        """What :meth:`restore_view_anchor` needs to look at the same place after the graph is drawn
        again (Q/DQ shown as nodes or folded): the anchor node (:meth:`_anchor_node`) by name, whether
        it was drawn as a node, where on the viewport, the zoom, the open groups and the selection.
        None without a graph."""
        if self._state is None:
            return None
        d = self._state.data
        i = self._anchor_node()
        if i is None:
            return None
        return {"name": d.names[i], "shown": bool(d.shown(i)), "at": self.mapFromScene(self._drawn_rect(i).center()),
                "scale": self._scale(), "expanded": set(self.expanded_groups()),
                "selected": [d.names[k] for k in sorted(self._state.selected)]}

    def restore_view_anchor(self, anchor: dict | None) -> bool:
        """Open the groups that were open (same paths, and those holding the anchor node when it was
        drawn as a node), select what was selected and show the anchor node where it was, at the
        zoom it had or the readable one when that is closer (as :meth:`expand_all`). False (nothing
        done) when the anchor node is not in this graph."""
        d = self._state.data if self._state else None
        if anchor is None or d is None or anchor["name"] not in d.index:
            return False
        i = d.index[anchor["name"]]
        if d.plan is not None:
            h = d.hierarchy
            opened = {g for g, p in enumerate(h.paths) if p in anchor["expanded"]}
            if anchor["shown"]:
                opened.update(h.ancestors(i))
            self._apply_expanded(opened)
        self.select_nodes(anchor["selected"])
        target = max(anchor["scale"], min(1.0, readable_scale(self._state.data)))
        self.setTransform(QTransform.fromScale(target, target))
        rect = self._drawn_rect(i)
        at = QPointF(anchor["at"])
        spot = at if QRectF(self.viewport().rect()).contains(at) else self._clear_spot(rect)
        self._show_at(rect.center(), spot)  # also after the scroll bars the new scene rectangle shows or hides
        return True

    def _drawn_rect(self, i: int) -> QRectF:
        """Scene rectangle node ``i`` is drawn as: its box, or its collapsed group's box when hidden."""
        d = self._state.data
        return d.rect(i) if d.shown(i) else d.group_rect(int(d.placement.rep[i]))

    def _anchor_node(self) -> int | None:
        """The node a re-placement keeps in view: the first selected one, else the shown node nearest
        the view's centre, else the first member of the group box nearest it (None: nothing drawn)."""
        d = self._state.data
        if self._state.selected:
            return min(self._state.selected)
        centre = self.mapToScene(self.viewport().rect().center())
        best, best_d = None, None
        shown = np.flatnonzero(~np.isnan(np.asarray(d.x0, dtype=float)))
        if len(shown):
            cx = (np.asarray(d.x0)[shown] + np.asarray(d.x1)[shown]) / 2 - centre.x()
            cy = (np.asarray(d.y0)[shown] + np.asarray(d.y1)[shown]) / 2 - centre.y()
            k = int(np.argmin(cx * cx + cy * cy))
            best, best_d = int(shown[k]), float(cx[k] ** 2 + cy[k] ** 2)
        if d.placement is not None:
            for k, g in enumerate(d.group_ids):
                if g not in d.placement.collapsed:
                    continue
                gx = (d.gx0[k] + d.gx1[k]) / 2 - centre.x()
                gy = (d.gy0[k] + d.gy1[k]) / 2 - centre.y()
                if best_d is None or gx * gx + gy * gy < best_d:
                    best, best_d = int(d.hierarchy.members(g)[0]), float(gx * gx + gy * gy)
        return best

    def collapse_all(self) -> None:
        """Draw every top-level group as one box, keeping looking where the view looked
        (:meth:`_replace_in_place`: a whole-graph fit was unreadable on a long model)."""
        if self._state is not None and self._state.data.plan is not None:
            self._replace_in_place(set())

    def expand_to_depth(self, depth: int) -> None:
        """Open every group of depth <= ``depth`` (0: all collapsed); deeper groups show as boxes.
        The view keeps looking where it looked (:meth:`_replace_in_place`), readable."""
        if self._state is not None and self._state.data.plan is not None:
            self._replace_in_place(set(expanded_to_depth(self._state.data.hierarchy, depth)))

    def _apply_expanded(self, expanded: set[int]) -> None:
        """Re-place the graph with ``expanded`` open, keeping the view's centre (one group opened or
        closed where the user looks)."""
        d = self._state.data if self._state else None
        if d is None or d.plan is None or frozenset(expanded) == d.expanded:
            return
        center = self.mapToScene(self.viewport().rect().center())
        selected = set(self._state.selected)
        data = build_scene_data(d.structure, plan=d.plan, expanded=frozenset(expanded))
        data.edge_quant = d.edge_quant  # the file's per-edge dtypes do not depend on what is open
        self.scene().clear()  # deletes the items: drop every reference before anything can paint or scroll
        self._overview, self._container, self._edges, self._groups_item = None, None, None, None
        self._items.clear()
        self._build_scene(data, selected)
        self.centerOn(center)
        self._sync_items()

    def _refresh_group_selection(self) -> None:
        d = self._state.data
        if d.placement is None:
            return
        rep = d.placement.rep
        self._state.group_selected = {int(rep[i]) for i in self._state.selected if rep[i] >= 0}
        if self._groups_item is not None:
            self._groups_item.update()

    def scene_bounds(self) -> QRectF:
        """Scene rectangle of everything drawn (nodes and group boxes); empty before :attr:`layoutReady`."""
        return QRectF(self._state.data.bounds) if self._state else QRectF()

    def drawn_bounds(self) -> QRectF:
        """:meth:`scene_bounds` and the group titles drawn at screen size at the view's current scale (a
        title placed left of its frame can reach past the graph's left edge); scene units, empty before
        :attr:`layoutReady`."""
        if self._state is None:
            return QRectF()
        self._sync_items()
        bounds = self.scene_bounds()
        return self._groups_item.labels_bounds() if self._groups_item is not None else bounds

    def screen_title_rects(self) -> list[QRectF]:
        """Scene rectangles of the group titles drawn at screen size at the view's current scale ([] when the
        titles are drawn in the scene's own font, or before :attr:`layoutReady`)."""
        if self._state is None or self._groups_item is None:
            return []
        return [QRectF(label.rect) for label in self._groups_item.screen_labels(self._scale())]

    def node_op_types(self) -> list[str]:
        """Op types of the shown nodes, aligned with :meth:`node_names`."""
        return list(self._state.data.structure.op_types) if self._state else []

    def node_names(self) -> list[str]:
        """Names of the shown nodes in model order ([] until :attr:`layoutReady`)."""
        return list(self._state.data.names) if self._state else []
