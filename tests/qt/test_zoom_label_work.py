"""A zoom step's screen-size label work follows what the view shows, not the size of the graph (offscreen).

With every group of a 20,000-node graph open, placing the screen-size titles took 100-400 ms per zoom step: every
group's title was placed, the overlap test against the nodes looked up thousands of grid cells per title zoomed
out, and a paint whose level of detail differed from the view's scale in its last digits placed them a second
time. Now the titles of the groups in and around the view are placed, once per scale (and per pan of more than
``groups_item.REGION_PX`` pixels), when they are painted.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QRectF  # noqa: E402
from PySide6.QtGui import QTransform  # noqa: E402
from PySide6.QtWidgets import QStyleOptionGraphicsItem  # noqa: E402

from workbench.qt.canvas import groups_item  # noqa: E402
from workbench.qt.canvas.group_labels import NodeIndex  # noqa: E402

SCALE = 0.08  # frame titles 17 px x 0.08: drawn at screen size


@pytest.fixture
def placements(monkeypatch):
    """(scale, rows handed) of every :func:`place_labels` call the groups item makes."""
    calls: list[tuple[float, int]] = []
    real = groups_item.place_labels

    def counted(boxes, titles, collapsed, scale, **kwargs):
        calls.append((scale, len(titles)))
        return real(boxes, titles, collapsed, scale, **kwargs)

    monkeypatch.setattr(groups_item, "place_labels", counted)
    return calls


@pytest.fixture
def expanded(open_blocks):
    """A 900 x 700 canvas of 60 open scopes of 30 nodes (a column 60 x 30 nodes tall) at :data:`SCALE`."""
    view = open_blocks(60, 30)
    assert not any(view.shown_groups().values()) and len(view.shown_groups()) == 60
    view.setTransform(QTransform.fromScale(SCALE, SCALE))
    return view


def _show(view, name: str) -> None:
    view.centerOn(view.node_scene_rect(name).center())
    view.viewport().grab()


def test_a_zoom_step_places_the_titles_once(expanded, placements):
    view = expanded
    _show(view, "/blk57/Relu_10")  # far down: the paint's level of detail differs from the scale in its last digits
    placements.clear()
    view.zoom_in()
    view.viewport().grab()
    scale = view.transform().m11()
    lod = QStyleOptionGraphicsItem.levelOfDetailFromTransform(view.viewportTransform())
    assert lod != scale and lod == pytest.approx(scale, rel=1e-9)  # what placed them twice before
    assert len(placements) == 1
    assert placements[0][0] == pytest.approx(scale, rel=1e-9)
    assert view.screen_title_rects()  # titles drawn
    view.viewport().grab()  # painted again at the same scale and place: nothing placed
    assert len(placements) == 1


def _meeting(view, rect: QRectF) -> int:
    return sum(view.group_scene_rect(p).intersects(rect) for p in view.shown_groups())


def test_titles_are_placed_for_what_the_view_shows(expanded, placements):
    view = expanded
    _show(view, "/blk30/Relu_15")
    scale = view.transform().m11()
    shown = view.mapToScene(view.viewport().rect()).boundingRect()
    margin = groups_item.REGION_PX / scale
    handed = placements[-1][1]
    assert _meeting(view, shown) <= handed <= _meeting(view, shown.adjusted(-margin, -margin, margin, margin))
    assert handed <= 60 // 4  # was every one of the 60 frames
    # in the view, the same titles as placed for the whole graph
    culled = {(lab.k, lab.text) for lab in view._groups_item.screen_labels(scale) if lab.rect.intersects(shown)}
    whole = {(lab.k, lab.text) for lab in view._groups_item._place(scale, None) if lab.rect.intersects(shown)}
    assert culled == whole and len(culled) >= 2
    # the titles item's bounds, widened per scale without placing, hold every title placed
    bounds = view._groups_item.titles.boundingRect()
    assert all(bounds.contains(lab.rect) for lab in view._groups_item.screen_labels(scale))


def test_a_pan_past_the_region_places_them_again(expanded, placements):
    view = expanded
    _show(view, "/blk30/Relu_15")
    placements.clear()
    bar = view.verticalScrollBar()
    bar.setValue(bar.value() + 100)  # within REGION_PX
    view.viewport().grab()
    assert placements == []
    bar.setValue(bar.value() + 3 * view.viewport().height())
    view.viewport().grab()
    assert len(placements) == 1
    shown = view.mapToScene(view.viewport().rect()).boundingRect()
    assert any(r.intersects(shown) for r in view.screen_title_rects())


@pytest.mark.parametrize("seed", [0, 1])
def test_node_index_answers_as_the_brute_force_test_at_every_zoom(seed):
    rng = np.random.default_rng(seed)
    x0, y0 = rng.uniform(-40_000, 40_000, 3000), rng.uniform(-10_000, 90_000, 3000)
    rects = np.stack([x0, y0, x0 + 150.0, y0 + 54.0], axis=1)
    index = NodeIndex(rects)
    answers = []
    for _ in range(3000):
        scale = 10 ** rng.uniform(-3.3, 0.3)
        left, top = rng.uniform(-45_000, 45_000) * scale, rng.uniform(-15_000, 95_000) * scale
        r = (left, top, left + rng.uniform(1, 300), top + rng.uniform(1, 30))
        brute = ((rects[:, 0] * scale < r[2]) & (r[0] < rects[:, 2] * scale)
                 & (rects[:, 1] * scale < r[3]) & (r[1] < rects[:, 3] * scale)).any()
        assert index.covers(r, scale) == bool(brute), (r, scale)
        answers.append(bool(brute))
    assert 0.1 < np.mean(answers) < 0.9  # both answers tested
