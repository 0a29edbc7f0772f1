"""The exported file's tab (View > Open Exported Model) says when the recipe or the calibration data changed
after that export: its title ends "(outdated)" and a line above the graph names what changed. It said nothing,
so an outdated file read as the current settings. An edit undone back to the exported recipe is no change;
exporting again reads the file again in the open tab, which is then current."""

from __future__ import annotations

from bundled_example import EXAMPLE
from diff_app import calibrate_example
from latency_fakes import fixed_latency
from test_app_flow import run_job, search

from workbench.qt.quant_tab import QuantModelTab
from workbench.qt.tabs import shown_text

RECIPE_NOTE = "Exported before the recipe changed: export again (Ctrl+E) to see the current settings."


def _export(qtbot, win, path) -> dict:
    status, res = run_job(qtbot, win, lambda: win.export_to(path), timeout=300_000)
    assert status == "succeeded", res
    return res


def _shown(win, tab: QuantModelTab) -> tuple[str, str]:
    """(the tab's title as drawn, its header line; "" while hidden)."""
    title = shown_text(win.tabs.tabText(win.tabs.indexOf(tab)))
    return title, tab.stale.text() if tab.stale.isVisibleTo(tab) else ""


def test_exported_tab_says_what_changed_since_the_export(qtbot, window, open_file, tmp_path, monkeypatch):
    fixed_latency(monkeypatch)
    win = window
    calibrate_example(qtbot, win, open_file)
    out = tmp_path / "digits.qdq.onnx"
    _export(qtbot, win, out)
    tab = win.open_exported()
    qtbot.waitUntil(lambda: tab.canvas._state is not None, timeout=300_000)
    assert _shown(win, tab) == ("Exported: digits.qdq.onnx", "")

    exported = win.doc.recipe.to_json()
    win.tabs.setCurrentIndex(0)  # the search selects in the shown graph
    search(qtbot, win, "/f/f.7/Conv")
    win.inspector.roles["activation"].dtype.setCurrentText("int16")
    assert win.doc.recipe.to_json() != exported
    assert _shown(win, tab) == ("Exported: digits.qdq.onnx (outdated)", RECIPE_NOTE)
    assert win.tabs.tabToolTip(win.tabs.indexOf(tab)) == RECIPE_NOTE

    win.doc.undo_stack.undo()  # back to the recipe the file holds: current again
    assert win.doc.recipe.to_json() == exported
    assert _shown(win, tab) == ("Exported: digits.qdq.onnx", "")
    win.doc.undo_stack.redo()
    assert _shown(win, tab)[0].endswith("(outdated)")

    # other calibration rows as well: both named
    win.calibration.set_data_spec({"kind": "npz", "path": str(EXAMPLE / "digits_cnn_calib.npz")}, 8)
    win._on_spec_changed()
    assert win.doc.samples == 8
    assert _shown(win, tab)[1] == ("Exported before the recipe and the calibration data changed: export again "
                                   "(Ctrl+E) to see the current settings.")

    # the graph tab in front: exporting again reads the file again in the open tab, which is current, and stays behind
    stamp = tab.stamp
    _export(qtbot, win, out)
    fresh = win.tabs.exported_tab(out)
    assert fresh is not tab and fresh.stamp != stamp and win.tabs.currentIndex() == 0
    assert [isinstance(win.tabs.widget(i), QuantModelTab) for i in range(win.tabs.count())] == [False, True]
    assert _shown(win, fresh) == ("Exported: digits.qdq.onnx", "")
    int16 = {n.input[0] for n in fresh.proto.graph.node if n.op_type == "DequantizeLinear"
             and any(i.name == n.input[2] and i.data_type == 5 for i in fresh.proto.graph.initializer)}
    assert int16  # the file now holds the int16 edit (zero points of type INT16)
