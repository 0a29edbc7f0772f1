"""File > Export Report...: a background job with progress that writes the HTML report atomically,
says where it wrote, and leaves nothing behind when cancelled."""

from __future__ import annotations

import re

from bundled_example import EXAMPLE_MODEL
from latency_fakes import quantized_faster
from PySide6.QtWidgets import QFileDialog

from workbench.core import api


def _run(qtbot, win, start) -> tuple[list, list]:
    ends: list = []
    steps: list = []
    win.runs.succeeded.connect(lambda kind, res: ends.append(("succeeded", kind, res)))
    win.runs.failed.connect(lambda kind, err: ends.append(("failed", kind, err)))
    win.runs.cancelled.connect(lambda kind: ends.append(("cancelled", kind, None)))
    win.runs.progress.connect(lambda d, t, m: steps.append(m))
    with qtbot.waitSignal(win.runs.finished, timeout=540_000):
        start()
    return ends, steps


def test_export_report_action_writes_the_page_and_says_where(qtbot, window, open_file, tmp_path, monkeypatch):
    open_file(window, EXAMPLE_MODEL)
    assert window.doc.data  # the example's calibration data beside the model
    target = tmp_path / "digits.report.html"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(target), "")))
    assert window.act_export_report.isEnabled() and window.act_export_report.shortcut().toString() == "Ctrl+Shift+R"
    ends, steps = _run(qtbot, window, window.act_export_report.trigger)
    assert [e[:2] for e in ends] == [("succeeded", "report")], ends
    assert any(m.startswith("Report: Per-unit SQNR") for m in steps)  # progress reached the status bar
    text = target.read_text(encoding="utf-8")
    assert re.findall(r'<section id="(\w+)"', text) == [sid for sid, _ in api.REPORT_SECTIONS]
    assert str(target) in window.status_label.text()
    assert sorted(p.name for p in tmp_path.iterdir()) == [target.name]  # no temp file left
    assert window.act_export_report.isEnabled()  # enabled again once the job ended


def test_cancelled_report_leaves_nothing(qtbot, window, open_file, tmp_path):
    open_file(window, EXAMPLE_MODEL)
    target = tmp_path / "cancelled.html"

    def start_and_cancel():
        window.export_report_to(target)
        assert not window.act_export_report.isEnabled()  # one main job at a time
        window.act_cancel.trigger()

    ends, _ = _run(qtbot, window, start_and_cancel)
    assert [e[:2] for e in ends] == [("cancelled", "report")], ends
    assert list(tmp_path.iterdir()) == []


def test_report_uses_the_evaluate_settings_and_the_autotune_curve(qtbot, window, open_file, tmp_path):
    """The report was measured on the calibration data with its default metric and never held the app's
    autotune curve: it now takes the Evaluate panel's eval data, samples and metric (top1 on the eval
    split), and the Autotune panel's finished curve."""
    eval_npz = EXAMPLE_MODEL.with_name("digits_cnn_eval.npz")
    open_file(window, EXAMPLE_MODEL)
    settings = window.evaluate_panel.settings
    settings.data.setText(str(eval_npz))
    settings.set_metric("top1")
    settings.samples.setValue(40)
    point = {"trial": 0, "promoted": 0, "metric": 0.95, "fraction_int8": 1.0, "weight_bytes": 26232, "bops": 1,
             "latency": None, "accepted": True, "pareto": True, "levels": {}}
    panel = window.autotune_panel
    panel.start("top1", {"max_drop": 0.01, "promote_to": "int16,float"}, settings.evaluation())
    panel.set_result({"curve": [{"point": point, "recipe": window.doc.recipe.to_json(), "metric_float": 0.96}],
                      "metric_float": 0.96, "recipe": window.doc.recipe.to_json(), "met": True, "promoted": [],
                      "levels": {}, "metric_before": 0.95, "metric_after": 0.95})
    target = tmp_path / "r.html"
    ends, _ = _run(qtbot, window, lambda: window.export_report_to(target))
    assert [e[:2] for e in ends] == [("succeeded", "report")], ends
    text = target.read_text(encoding="utf-8")
    metrics = text.split('<section id="metrics"', 1)[1].split("</section>", 1)[0]
    assert "40 samples of" in metrics and eval_npz.name in metrics and ">top1<" in metrics
    tune = text.split('<section id="autotune"', 1)[1].split("</section>", 1)[0]
    assert "No autotune curve" not in tune and "<img" in tune and "40 samples of" in tune


def test_export_takes_the_calibration_path_as_shown_and_errors_reach_the_status_line(qtbot, window, open_file,
                                                                                      tmp_path, dialogs):
    """A path typed in the Calibration panel without Enter was ignored by Export and Export Report (they
    used the last accepted one; Calibrate and Evaluate took the typed one); and an error from a menu
    action left the status line showing an older, unrelated message."""
    import shutil

    data = tmp_path / "typed.npz"
    shutil.copy(EXAMPLE_MODEL.with_name("digits_cnn_calib.npz"), data)
    open_file(window, EXAMPLE_MODEL)
    window.calibration.path.setText(str(data))  # typed, no Enter
    assert window.doc.data["path"] != str(data)
    ends, _ = _run(qtbot, window, lambda: window.export_to(tmp_path / "q.onnx"))
    assert [e[:2] for e in ends] == [("succeeded", "export")], ends
    assert window.doc.data["path"] == str(data)
    window.set_status("Opened something earlier.")
    window.export_node_data_dialog()  # guarded, refused at once: no per-unit figures yet
    shown = dialogs.texts()
    assert shown and window.status_label.text() != "Opened something earlier."
    assert window.status_label.text().split(".")[0] in shown
    dialogs.clear()


def test_reopening_a_project_says_what_it_restored(qtbot, window, open_file, tmp_path, monkeypatch):
    """Reopening a project said only "Opened model.onnx: 10 nodes." though its results came back."""
    quantized_faster(monkeypatch)  # digits_cnn quantized whatever this machine measures (latency_fakes)
    open_file(window, EXAMPLE_MODEL)
    with qtbot.waitSignal(window.runs.finished, timeout=540_000):
        window.act_calibrate.trigger()
    proj = window.save_project_to(tmp_path / "job.wbproj")
    open_file(window, proj)
    assert "Project job.wbproj: per-unit results, calibration cache restored." in window.status_label.text()
    assert window.doc.errors and window.doc.project_path == proj


def test_the_histogram_says_why_it_is_empty(qtbot, window, open_file):
    """With several nodes selected (or none) the histogram was a blank 0-1 plot with no word."""
    open_file(window, EXAMPLE_MODEL)
    assert window.errors.hist_title.text() == "Select one node to see the histogram of its output."
    window.canvas.select_nodes(["/f/f.0/Conv", "/f/f.3/Conv", "/f/f.7/Conv"])
    qtbot.waitUntil(lambda: window.errors.hist_title.text().startswith("3 nodes selected"), timeout=10_000)
    assert window.errors.hist_title.text() == "3 nodes selected: select one node to see the histogram of its output."
