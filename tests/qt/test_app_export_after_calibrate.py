"""Export after Calibrate (F5) writes the model the calibration analysed, at once: it ran the whole quantize
pipeline again, latency check included (ppocrv4_rec: 9-19 s), and when that check kept units float the
file was not the model the Errors bars showed, and the app started the analysis again. An edit made after
the calibration still quantizes again, and the status line says why."""

from __future__ import annotations

from latency_fakes import fixed_latency, quantized_faster
from test_app_flow import run_job, search
from test_app_stale_results import calibrated


def _export(qtbot, win, path) -> tuple[dict, list[str], list[str]]:
    """Export to ``path``: the job's result, the titles started and the progress messages of the export."""
    titles: list[str] = []
    messages: list[str] = []
    win.runs.started.connect(titles.append)
    win.runs.progress.connect(lambda _d, _t, m: messages.append(m))
    status, res = run_job(qtbot, win, lambda: win.export_to(path), timeout=300_000)
    assert status == "succeeded", res
    win.runs.started.disconnect(titles.append)
    return res, titles, messages


def test_export_after_calibrate_writes_the_analysed_model_as_it_is(qtbot, window, open_file, corpus, tmp_path,
                                                                   monkeypatch):
    fixed_latency(monkeypatch)  # the model faster quantized, each probed unit slower: the 4 attention MatMuls float
    win = window
    calibrated(qtbot, win, open_file, corpus / "digits_transformer/model_opset17.onnx", samples=16)
    kept = sorted(n for n, o in win.doc.recipe.overrides.items() if o.exclude)
    assert len(kept) == 4 and all("MatMul" in n for n in kept)
    assert f"The latency check kept {len(kept)} units float" in win.status_label.text()
    assert not {r.node for r in win.errors.rows} & set(kept)  # the bars are of the model written
    assert win.doc.results_current and win.doc.written is not None
    undo = win.doc.undo_stack.count()

    out = tmp_path / "app.onnx"
    res, titles, messages = _export(qtbot, win, out)
    assert titles == ["Export to app.onnx"]
    assert messages and all(m.startswith("Writing") for m in messages)  # no planning, calibrating or latency
    assert out.read_bytes() == win.doc.written["model"]
    assert res["units"] == win.doc.written["units"] and res["units"][1] - res["units"][0] >= len(kept)
    assert "The file is the model calibrated and analysed, written as it is (its latency check reused: " \
        in win.status_label.text()
    assert win.doc.undo_stack.count() == undo and win.doc.results_current  # nothing to adopt, nothing to measure
    assert not win.runs.busy


def test_an_edit_after_calibrating_quantizes_again_and_says_so(qtbot, window, open_file, corpus, tmp_path,
                                                                monkeypatch):
    quantized_faster(monkeypatch)  # digits_cnn quantized also where it measures slower than float
    win = window
    calibrated(qtbot, win, open_file, corpus / "digits_cnn/model_opset17.onnx")
    first = tmp_path / "first.onnx"
    _export(qtbot, win, first)
    search(qtbot, win, "Conv")
    win.inspector.roles["activation"].dtype.setCurrentText("int16")

    res, titles, messages = _export(qtbot, win, tmp_path / "edited.onnx")
    assert titles == ["Export to edited.onnx (quantizing again: the recipe was edited since the calibration)"]
    assert any(m.startswith("Quantizing") for m in messages)
    assert res["rerun"] == "the recipe was edited since the calibration" and not res["reused"]
    assert "Quantized again with the latency check: the recipe was edited since the calibration." \
        in win.status_label.text()
    assert (tmp_path / "edited.onnx").read_bytes() != first.read_bytes()
