"""Empty result docks show one line saying what fills them, not empty plot axes taking the room:
the Errors dock before a calibration, the Autotune dock before a run (offscreen)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("PySide6")


def test_errors_dock_is_one_line_until_rows_arrive(qtbot):
    from workbench.qt.error_view import ErrorView

    view = ErrorView()
    qtbot.addWidget(view)
    view.resize(900, 400)
    view.show()
    assert view.summary.text() == "No results yet: calibrate (Run > Calibrate, F5) to see each node unit's error."
    assert not view.bars_plot.isVisible() and not view.hist_plot.isVisible() and not view.color_button.isVisible()
    assert view.sizeHint().height() <= 80  # was 420 (empty bars and histogram axes)
    view.set_rows([SimpleNamespace(node="/f/f.0/Conv", op_type="Conv", sqnr_db=30.0)])
    assert view.bars_plot.isVisible() and view.color_button.isVisible()


def test_autotune_dock_shows_its_plot_once_a_point_arrives(qtbot, window):
    panel = window.autotune_panel
    window.evaluation.show_autotune()
    qtbot.waitUntil(panel.isVisible, timeout=10_000)
    assert panel.summary.text() == "No autotune yet: set a target, then Run > Autotune (Shift+F9)."
    assert not panel.plot.isVisible()  # was an empty 0.1-0.9 KiB plot, 40 % of the window
    panel.start("top1", {"max_drop": 0.01})
    panel.add_point({"point": {"metric": 0.9, "promoted": 0, "weight_bytes": 1000, "latency_ms": 1.0,
                               "model_bytes": 2000}, "recipe": {}, "metric_float": 0.91})
    assert panel.plot.isVisible()
    panel.set_running(False)
