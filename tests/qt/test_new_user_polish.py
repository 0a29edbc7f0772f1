"""What a new user met first: the Calibration panel's button live with no model open, secondary
labels unreadable in the dark theme, SQNR bar colours without a legend, a Cost panel of zeros for
an already-quantized file, and "Computing the histogram..." left standing when the histogram failed."""

from __future__ import annotations

import re
from types import SimpleNamespace

from bundled_example import EXAMPLE_MODEL
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication

from workbench.core import api
from workbench.qt.error_view import ErrorView
from workbench.qt.tables import node_at, node_item, node_table
from workbench.qt.theme import apply_theme

CALIB = EXAMPLE_MODEL.with_name("digits_cnn_calib.npz")


def test_controls_that_need_a_model_are_off_until_one_is_open(window, open_file):
    win = window
    assert not win.calibration.start.isEnabled() and not win.act_calibrate.isEnabled()
    assert "open a model first" in win.calibration.start.toolTip()
    assert not win.act_same_type.isEnabled()
    open_file(win, EXAMPLE_MODEL)
    assert win.calibration.start.isEnabled() and win.act_calibrate.isEnabled() and win.act_same_type.isEnabled()
    assert win.calibration.start.toolTip() == "Calibrate (F5)"


def _text_color(label) -> QColor:
    label.ensurePolished()
    return label.palette().color(label.foregroundRole())


def test_secondary_labels_are_readable_in_both_themes(window, open_file):
    app = QApplication.instance()
    win = window
    open_file(win, EXAMPLE_MODEL)
    win.focus_node(win.canvas.node_names()[0])
    labels = [win.inspector.roles["activation"].source, win.inspector.exclude_source, win.recipe_panel.description]
    assert win.inspector.roles["activation"].source.text().startswith("preset ")
    try:
        win.set_theme("dark")
        window_colour = app.palette().color(app.palette().ColorRole.Window)
        for label in labels:
            assert _text_color(label).lightness() - window_colour.lightness() > 80, label.text()
        win.set_theme("light")
        window_colour = app.palette().color(app.palette().ColorRole.Window)
        for label in labels:
            assert window_colour.lightness() - _text_color(label).lightness() > 80, label.text()
    finally:
        apply_theme(app, "system")


def test_sqnr_bar_colours_have_a_legend_matching_the_bars(qtbot):
    view = ErrorView()
    qtbot.addWidget(view)
    text = view.bar_legend.text()
    swatches = [QColor(c) for c in re.findall(r"color: (#[0-9a-f]{6})", text)]
    stops = [float(v) for v in re.findall(r"&#9632;</span> (?:&lt;= |&gt;= )?(\d+)", text)]
    assert stops == [5.0, 15.0, 25.0, 35.0, 45.0] and len(swatches) == 5
    rows = [SimpleNamespace(node=f"n{db}", op_type="Conv", sqnr_db=db, tensor="") for db in (1.0, 15.0, 25.0, 35.0, 70.0)]
    view.set_rows(rows)
    drawn = [b.color() for b in view._bars.opts["brushes"]]  # worst first: 1 ... 70 dB
    assert [c.getRgb()[:3] for c in drawn] == [c.getRgb()[:3] for c in swatches]
    assert len({c.getRgb() for c in swatches}) == 5


def test_cost_panel_of_a_quantized_file_says_so_instead_of_zeros(qtbot, window, open_file, tmp_path):
    model = api.open_model(EXAMPLE_MODEL)
    out = tmp_path / "digits_cnn.qdq.onnx"
    api.export(api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(CALIB), samples=8), out)
    win = window
    open_file(win, out)
    win.docks["Cost"].show()
    assert win.cost.job is None and win.cost.table.rowCount() == 0
    assert win.cost.summary.text().startswith(f"{out.name} is already quantized")
    assert "0 MACs" not in win.cost.summary.text()


def test_failed_histogram_replaces_the_computing_text(qtbot, window, open_file):
    win = window
    open_file(win, EXAMPLE_MODEL)
    assert win.doc.data  # the example's calibration file beside it
    win.errors.clear_histogram("Computing the histogram of no_such_tensor...")
    with qtbot.waitSignal(win.runs.histogramFailed, timeout=540_000):
        win.runs.histogram("no_such_tensor")
    text = win.errors.hist_title.text()
    assert text.startswith("No histogram of no_such_tensor: ") and "Computing" not in text
    qtbot.waitUntil(lambda: win.runs.hist_job is None, timeout=300_000)


def _view_range(view) -> list:
    view.hist_plot.getPlotItem().vb.updateAutoRange()  # what the next paint would show
    return view.hist_plot.viewRange()


def test_histogram_axes_do_not_outlive_their_histogram(qtbot):
    view = ErrorView()
    qtbot.addWidget(view)
    counts = [5, 40, 80, 20]
    edges = [-3.0, -1.0, 1.0, 3.0, 5.0]
    view.set_histogram({"tensor": "t", "counts": counts, "edges": edges, "rmin": -3.0, "rmax": 5.0, "values": 145},
                       None)
    (x0, x1), (_y0, y1) = _view_range(view)
    assert x0 <= -3.0 and x1 >= 5.0 and y1 >= 80
    view.clear_histogram("Computing the histogram of u...")
    assert _view_range(view) == [[0.0, 1.0], [0.0, 1.0]]
    view.set_histogram({"tensor": "u", "counts": [3, 9], "edges": [10.0, 20.0, 30.0], "rmin": 10.0, "rmax": 30.0,
                        "values": 12}, None)
    (x0, x1), (_y0, y1) = _view_range(view)
    assert 5.0 <= x0 <= 10.0 and 30.0 <= x1 <= 35.0 and 9 <= y1 < 80
    assert view.hist_title.text().startswith("u: 12 values in [10, 30]")


def test_node_tables_keep_the_end_of_long_names_on_one_line(qtbot):
    table = node_table(["Node", "Op"])
    qtbot.addWidget(table)
    name = "/model.22/cv3.2/cv3.2.0/conv/Conv"
    table.setRowCount(1)
    table.setItem(0, 0, node_item(name, "kept in float"))
    assert table.textElideMode() == Qt.TextElideMode.ElideMiddle and not table.wordWrap()
    assert table.item(0, 0).toolTip() == f"{name}\nkept in float" and node_at(table, 0) == name
    plain = node_item(name)
    assert plain.toolTip() == name


def _link_color(label) -> QColor:
    return QColor(re.search(r'style="color: (#[0-9a-f]{6})"', label.text()).group(1))


def test_problems_link_takes_the_link_colour_of_the_theme_shown(qtbot, window, open_file, corpus):
    app = QApplication.instance()
    win = window
    open_file(win, corpus / "digits_transformer" / "model_opset17.onnx")  # one preparation note
    assert win.problems_link.text().endswith(">1 note</a>")
    try:
        win.set_theme("light")
        light = _link_color(win.problems_link)
        win.set_theme("dark")
        dark = _link_color(win.problems_link)
        assert dark == app.palette().color(app.palette().ColorRole.Link) and dark.lightness() > light.lightness()
        assert dark.lightness() - app.palette().color(app.palette().ColorRole.Window).lightness() > 60
        assert win.problems_link.text().endswith(">1 note</a>")
    finally:
        apply_theme(app, "system")
