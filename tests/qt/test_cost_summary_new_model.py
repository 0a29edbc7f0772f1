"""The Cost dock's summary never shows the totals, or the name, of the model open before.

Found by a bug hunt: with digits_cnn's totals in the dock, opening digits_transformer while the dock was hidden left
digits_cnn's 'Total over ...' line over an empty table until the dock was shown again; a model opened while the
first model's count ran read 'Computing the cost of' the first model's file."""

from __future__ import annotations

import threading

from workbench.core import api
from workbench.qt import cost_panel


def _shown_cost(qtbot, win):
    cost = win.docks["Cost"]
    cost.show()
    cost.raise_()
    panel = cost.widget()
    qtbot.waitUntil(lambda: panel.job is None and "Total over" in panel.summary.text(), timeout=120_000)
    return panel


def _totals(path, calib) -> str:
    """The MACs total of ``path`` at the shapes of ``calib``'s first sample, as the summary writes it."""
    model = api.open_model(path)
    return f"{api.model_cost(model.proto, input_values=api.data_sample(model, str(calib))).macs:,} MACs"


def test_a_model_opened_while_the_dock_is_hidden_shows_no_totals_of_the_one_before(qtbot, window, open_file, corpus):
    win = window
    cnn, transformer = corpus / "digits_cnn", corpus / "digits_transformer"
    open_file(win, cnn / "model_opset17.onnx")
    panel = _shown_cost(qtbot, win)
    first = panel.summary.text()
    assert _totals(cnn / "model_opset17.onnx", cnn / "calib.npz") in first

    win.docks["Cost"].hide()
    open_file(win, transformer / "model_opset17.onnx")
    assert "Total over" not in panel.summary.text() and panel.table.rowCount() == 0
    assert panel.summary.text() == ("The cost of model_opset17.onnx is counted when this panel is shown "
                                    "(View > Cost).")
    assert _totals(transformer / "model_opset17.onnx", transformer / "calib.npz") in _shown_cost(qtbot, win).summary.text()


def test_a_model_opened_while_a_count_runs_says_it_counts_that_model(qtbot, window, open_file, corpus, monkeypatch):
    win, cnn = window, corpus / "digits_cnn"
    release = threading.Event()
    count = cost_panel._float_cost

    def held_count(model, data):
        release.wait(60)  # the count runs until the test lets it end
        return count(model, data)

    monkeypatch.setattr(cost_panel, "_float_cost", held_count)
    open_file(win, cnn / "model_opset17.onnx")
    cost = win.docks["Cost"]
    cost.show()
    cost.raise_()
    panel = cost.widget()
    assert panel.job is not None and panel.summary.text() == "Computing the cost of model_opset17.onnx..."
    open_file(win, cnn / "model_opset13.onnx")  # while the first model's count runs
    assert panel.job is not None and panel.summary.text() == "Computing the cost of model_opset13.onnx..."
    release.set()
    assert _totals(cnn / "model_opset13.onnx", cnn / "calib.npz") in _shown_cost(qtbot, win).summary.text()
