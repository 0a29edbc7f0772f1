"""Zooming in on a narrow chain shows no horizontal scroll bar while the chain fits the view's width: the fit
made the scene rectangle what the viewport showed at the fitted scale (a 2,000-node chain: about 1.3 million
scene units across), so the first zoom step in made it wider than the view and a horizontal bar appeared with
nothing to scroll to. Each zoom step now keeps the scene rectangle, along an axis where the graph fits the
view, to what the view shows."""

from __future__ import annotations


def _zoomed_in(qtbot, view, steps: int) -> None:
    view.fit()
    for _ in range(steps):
        view.zoom_in()
    qtbot.wait(10)  # Qt shows or hides the scroll bars from a queued call


def test_no_horizontal_bar_while_the_chain_fits_across(qtbot, tall):
    for steps in (1, 5, 20):
        _zoomed_in(qtbot, tall, steps)
        bounds = tall.drawn_bounds().adjusted(-30, -30, 30, 30)
        assert bounds.width() * tall.transform().m11() < tall.viewport().width()
        assert not tall.horizontalScrollBar().isVisible(), steps
        assert tall.verticalScrollBar().isVisible()  # the chain is taller than the view: that bar stays
        shown = tall.mapToScene(tall.viewport().rect()).boundingRect()
        assert shown.left() <= bounds.left() and bounds.right() <= shown.right()  # the whole width on screen


def test_the_chain_still_scrolls_from_end_to_end(qtbot, tall):
    _zoomed_in(qtbot, tall, 20)
    bar = tall.verticalScrollBar()
    bar.setValue(bar.minimum())
    top = tall.mapToScene(tall.viewport().rect()).boundingRect()
    bar.setValue(bar.maximum())
    bottom = tall.mapToScene(tall.viewport().rect()).boundingRect()
    bounds = tall.scene_bounds()
    assert top.top() <= bounds.top() and bottom.bottom() >= bounds.bottom()  # the first and the last node


def test_zooming_out_again_comes_back_to_the_fit(qtbot, tall):
    tall.fit()
    fitted = tall.transform().m11()
    for _ in range(6):
        tall.zoom_in()
    for _ in range(12):
        tall.zoom_out()
    qtbot.wait(10)
    assert tall.transform().m11() == fitted
    assert not tall.horizontalScrollBar().isVisible() and not tall.verticalScrollBar().isVisible()
