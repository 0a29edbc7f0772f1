"""The app says when its per-unit figures are out of date, and shows the calibration data's warnings.

Found by a user pass: after an int16 edit, the Errors bars, their "worst ... at 38.4 dB" header and the
canvas coloured by SQNR still showed the uint8 run as current (the Evaluate panel alone said the recipe
had changed)."""

from __future__ import annotations

import pytest
from latency_fakes import fixed_latency, quantized_faster
from test_app_flow import run_job, search

from workbench.qt.error_view import STALE


@pytest.fixture(autouse=True)
def _latency_scripted(monkeypatch):
    """The app's jobs run in this process with the latency measured as quantized faster (latency_fakes): what
    these tests check does not depend on whether digits_cnn measures slower quantized on this machine (then the
    latency check would keep every unit float, and no bar would be drawn)."""
    quantized_faster(monkeypatch)


def calibrated(qtbot, win, open_file, path, samples: int = 8, choose: bool = True) -> dict:
    """``path`` open in ``win``, calibrated on ``samples`` rows and analysed on 8, its Errors bars
    shown; returns the calibrate job's result. ``choose``: F5 runs the recipe choice first (the default)."""
    open_file(win, path)
    win.calibration.choose_first.setChecked(choose)
    win.calibration.samples.setValue(samples)
    win.calibration.analysis_samples.setValue(8)
    status, res = run_job(qtbot, win, win.act_calibrate.trigger, timeout=300_000)
    assert status == "succeeded", res
    assert res["errors"], ("no unit quantized (the latency check kept them float?): use "
                           "latency_fakes.quantized_faster", res["latency_kept"])
    qtbot.waitUntil(lambda: bool(win.errors.rows), timeout=300_000)
    return res


def calibrated_digits(qtbot, win, open_file, corpus, choose: bool = True):
    """digits_cnn open in ``win``, calibrated and analysed on 8 rows, its Errors bars shown."""
    calibrated(qtbot, win, open_file, corpus / "digits_cnn/model_opset17.onnx", choose=choose)
    return win


def test_figures_of_an_earlier_recipe_are_marked_until_calibrated_again(qtbot, window, open_file, corpus):
    win = calibrated_digits(qtbot, window, open_file, corpus)
    win.errors.set_rank("accumulated")  # the button colours the canvas by the accumulated SQNR
    win.errors.color_button.click()
    assert not win.errors.stale and not win.errors.summary.text().startswith(STALE)
    assert win.canvas.error_label() == "SQNR (dB)"
    before = [r.sqnr_db for r in win.errors.rows]

    convs = search(qtbot, win, "Conv")
    win.inspector.roles["activation"].dtype.setCurrentText("int16")
    assert win.errors.stale and win.errors.summary.text().startswith(STALE)
    assert win.errors._bars.opacity() < 1.0
    assert "out of date" in win.canvas.error_label()
    assert [r.sqnr_db for r in win.errors.rows] == before  # still shown, marked

    win.act_undo.trigger()  # back to the recipe the figures were measured with: current again
    assert not win.errors.stale and win.canvas.error_label() == "SQNR (dB)"
    win.act_redo.trigger()
    assert win.errors.stale
    status, res = run_job(qtbot, win, win.act_calibrate.trigger)
    assert status == "succeeded", res
    qtbot.waitUntil(lambda: not win.errors.stale and win.canvas.error_label() == "SQNR (dB)", timeout=300_000)
    assert not win.errors.summary.text().startswith(STALE)
    assert {win.doc.plan.units[n].config.activation.dtype for n in convs} == {"int16"}


def test_nan_and_inf_in_the_calibration_data_reach_the_problems_dock(qtbot, window, open_file, cases):
    """Case 05: the CLI warns about samples 2 and 4; the app said 'Done: 1 node unit analysed.' and
    counted no problem (the warnings stayed in the calibration child's log)."""
    from workbench.qt.problems_panel import collect_problems

    win = window
    open_file(win, cases / "05_nan_inf_calibration.onnx")
    win.calibration.set_data_spec({"kind": "npz", "path": str(cases / "05_nan_inf_calibration.npz")}, None)
    status, res = run_job(qtbot, win, win.act_calibrate.trigger, timeout=120_000)
    assert status == "succeeded", res
    texts = [i.message for _, i in collect_problems(win.doc)]
    assert ("Calibration: input 'X' of the calibration data holds NaN/Inf: sample 2 (1), sample 4 (1). Check the "
            "calibration data.") in texts
    assert "Calibration: NaN/Inf of the calibration data left out of the ranges of the 2 tensors they reach: X, Y." \
        in texts
    assert "2 calibration data warnings (NaN/Inf or empty tensors): see View > Problems." in win.status_label.text()


def test_other_calibration_rows_drop_the_cached_ranges_and_mark_the_figures(qtbot, window, open_file, corpus):
    """A new sample count or data file kept the cached ranges: Export wrote the old rows' model, F6
    re-analysed it, and the Errors dock showed the figures as current."""
    win = calibrated_digits(qtbot, window, open_file, corpus)
    assert win.doc.calibration is not None and not win.errors.stale
    win.calibration.samples.setValue(5)
    assert win.doc.calibration is None  # the next job calibrates on the 5 rows
    assert win.errors.stale and win.errors.summary.text().startswith(STALE)
    win.calibration.samples.setValue(8)  # the rows the figures were measured on
    assert not win.errors.stale


def test_the_histogram_of_the_selected_unit_follows_new_results(qtbot, window, open_file, corpus):
    """After an int16 edit and Analyze, the histogram title kept the uint8 clip range and scale."""
    win = calibrated_digits(qtbot, window, open_file, corpus)
    with qtbot.waitSignal(win.runs.histogramReady, timeout=300_000):
        win.focus_node("/f/f.3/Conv")
    assert "(uint8, scale" in win.errors.hist_title.text()
    win.inspector.roles["activation"].dtype.setCurrentText("int16")
    status, res = run_job(qtbot, win, win.act_analyze.trigger, timeout=300_000)
    assert status == "succeeded", res
    qtbot.waitUntil(lambda: "(int16, scale" in win.errors.hist_title.text(), timeout=60_000)


def test_rows_changed_while_calibrating_leave_the_results_stale(qtbot, window, open_file, corpus):
    """Samples changed while F5 ran: the results arrived marked current, with the 8-row cache."""
    win = window
    open_file(win, corpus / "digits_cnn/model_opset17.onnx")
    win.calibration.samples.setValue(8)
    win.calibration.analysis_samples.setValue(8)

    def start_then_change():
        win.act_calibrate.trigger()
        win.calibration.samples.setValue(5)  # the field stays editable while the job runs

    status, res = run_job(qtbot, win, start_then_change, timeout=300_000)
    assert status == "succeeded", res
    qtbot.waitUntil(lambda: bool(win.errors.rows), timeout=300_000)
    assert win.doc.samples == 5 and win.doc.calibration is None  # not the 8-row cache
    assert not win.doc.results_current and win.errors.stale


def test_a_project_saved_after_an_export_replays_to_the_exported_bytes(qtbot, window, open_file, corpus, tmp_path,
                                                                      monkeypatch):
    """The export's latency check kept attention MatMuls float (4 on a quiet machine) but the recipe did not say so:
    the saved project replayed to a file with all 36 units quantized. (The measurements are fixed: latency_fakes.)"""
    from workbench.cli import main

    fixed_latency(monkeypatch)
    win = window
    open_file(win, corpus / "digits_transformer/model_opset17.onnx")
    win.calibration.samples.setValue(16)
    win.calibration.choose_first.setChecked(False)  # the preset as it is (an export would choose first)
    out = tmp_path / "app.onnx"
    status, res = run_job(qtbot, win, lambda: win.export_to(out), timeout=300_000)
    assert status == "succeeded", res
    kept = sorted(n for n, o in win.doc.recipe.overrides.items() if o.exclude)
    assert len(kept) == 4 and all("MatMul" in n for n in kept)  # each probed unit measured slower
    assert res["units"] == [36 - len(kept), 36]
    assert f"The latency check kept {len(kept)} units float" in win.status_label.text()
    proj = win.save_project_to(tmp_path / "job.wbproj")
    replay = tmp_path / "replay.onnx"
    assert main(["quantize", str(proj), "-o", str(replay)]) == 0
    assert replay.read_bytes() == out.read_bytes()
    win.act_undo.trigger()  # the user may quantize them anyway
    assert not any(o.exclude for o in win.doc.recipe.overrides.values())


def test_the_out_of_date_mark_survives_save_and_reopen(qtbot, window, open_file, corpus, tmp_path):
    """Figures of 8 rows saved with samples 5 came back marked current."""
    win = calibrated_digits(qtbot, window, open_file, corpus)
    win.calibration.samples.setValue(5)
    assert win.errors.stale
    proj = win.save_project_to(tmp_path / "job.wbproj")
    open_file(win, corpus / "digits_mlp" / "model_opset17.onnx")
    open_file(win, proj)
    qtbot.waitUntil(lambda: bool(win.errors.rows), timeout=300_000)
    assert win.doc.samples == 5 and not win.doc.results_current and win.errors.stale


def test_figures_current_before_an_export_that_keeps_units_float_are_measured_again(qtbot, window, open_file,
                                                                                     corpus, tmp_path, monkeypatch):
    """The export's latency check kept 4 MatMuls float (one undoable edit), and every figure the user had
    just measured turned 'out of date' until F5 was pressed again; now they are measured again at once.
    (F5 keeps them float itself and its export writes the model it analysed: these figures are of an
    analysis with the cached ranges, F6, which runs no latency check.)"""
    # fixed latency measurements (each unit probe measures its quantized form slower): timed, the export's
    # placement could keep other MatMuls float than the calibration's on a loaded machine
    fixed_latency(monkeypatch)
    win = window
    calibrated(qtbot, win, open_file, corpus / "digits_transformer/model_opset17.onnx", samples=16)
    assert any(o.exclude for o in win.doc.recipe.overrides.values())  # how many is a timing (4 on a quiet machine)
    win.act_undo.trigger()  # the calibration's latency exclusions undone: every unit quantized
    status, res = run_job(qtbot, win, win.act_analyze.trigger, timeout=300_000)
    assert status == "succeeded", res
    assert win.doc.results_current and win.doc.written is None
    measured = {r.node for r in win.errors.rows}
    status, res = run_job(qtbot, win, lambda: win.export_to(tmp_path / "app.onnx"), timeout=300_000)
    assert status == "succeeded", res
    assert "Measuring the figures again with them float." in win.status_label.text()
    kept = {n for n, o in win.doc.recipe.overrides.items() if o.exclude}
    assert kept  # how many is a timing (4 on a quiet machine)
    qtbot.waitUntil(lambda: not win.runs.busy and win.doc.results_current, timeout=300_000)
    qtbot.waitUntil(lambda: win.canvas.error_label() == "SQNR (dB)", timeout=60_000)  # set on a later turn
    assert not win.errors.stale
    assert f"analysed (measured again: the export to {tmp_path / 'app.onnx'} kept {len(kept)} units float)." \
        in win.status_label.text()
    assert {r.node for r in win.errors.rows} == measured - kept  # the kept units are float now: no figure


def test_the_histogram_drops_the_clip_range_of_an_earlier_recipe_or_data(qtbot, window, open_file, corpus):
    """After an int16 edit (before Analyze) the histogram of the selected unit still drew the uint8 clip range
    and scale as current; after a new sample count it still showed the values of the old rows."""
    win = calibrated_digits(qtbot, window, open_file, corpus)
    with qtbot.waitSignal(win.runs.histogramReady, timeout=300_000):
        win.focus_node("/f/f.3/Conv")
    shown = win.errors.hist_title.text()
    assert "clip [" in shown and "(uint8, scale" in shown
    win.inspector.roles["activation"].dtype.setCurrentText("int16")
    text = win.errors.hist_title.text()
    assert "clip [" not in text and "uint8" not in text
    assert text.endswith("; clip range not shown: the recipe or the calibration data changed since the last "
                         "calibration (F5 measures again).")
    assert len(win.errors.hist_plot.getPlotItem().items) == 1  # the histogram alone, no clip lines
    win.doc.undo_stack.undo()  # the measured recipe again: its clip range is current
    assert win.errors.hist_title.text() == shown
    with qtbot.waitSignal(win.runs.histogramReady, timeout=300_000):  # other rows: computed again
        win.calibration.samples.setValue(5)
    assert "clip [" not in win.errors.hist_title.text()
