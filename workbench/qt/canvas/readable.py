"""The least zoom at which the canvas's labels are readable.

The canvas draws three kinds of label: the op type on a node box (``items._Fonts.op``), the title of
a collapsed group box (``groups_item._Fonts.title``) and the title bar of an open group
(``groups_item._Fonts.frame``). Their fonts are sized in scene units, so on screen a label is its
font's pixel size times the view scale. :func:`readable_scale` is the scale that draws the smallest
label the picture shows at :data:`READABLE_PX` pixels.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtGui import QFont, QFontInfo

from workbench.qt.canvas import groups_item, items

#: pixel size of the smallest label on screen at the zoom a model opens with (at least)
READABLE_PX = 9.0


def font_px(font: QFont) -> float:
    """Height of ``font`` in pixels at scale 1 (its pixel size, or its point size at the screen's DPI)."""
    if font.pixelSize() > 0:
        return float(font.pixelSize())
    return float(QFontInfo(font).pixelSize())


def label_px(data) -> dict[str, float]:
    """The kinds of label ``data`` (a SceneData) draws -> their font's pixel height at scale 1:
    ``"node"`` (op type on a shown node), ``"box"`` (collapsed group title), ``"frame"`` (open
    group title)."""
    items._Fonts.ensure()
    groups_item._Fonts.ensure()
    out: dict[str, float] = {}
    if len(data) and not np.isnan(np.asarray(data.x0, dtype=float)).all():
        out["node"] = font_px(items._Fonts.op)
    placement = data.placement
    if placement is not None and data.group_ids:
        if any(g in placement.collapsed for g in data.group_ids):
            out["box"] = font_px(groups_item._Fonts.title)
        if any(g not in placement.collapsed for g in data.group_ids):
            out["frame"] = font_px(groups_item._Fonts.frame)
    return out


def readable_scale(data) -> float:
    """View scale at which the smallest label ``data`` draws is :data:`READABLE_PX` pixels high
    (1.0 for an empty picture)."""
    sizes = label_px(data)
    return READABLE_PX / min(sizes.values()) if sizes else 1.0
