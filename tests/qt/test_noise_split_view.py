"""The Errors dock says whether the weights or the activations hold the output noise."""

from __future__ import annotations

from test_app_stale_results import calibrated, calibrated_digits

from workbench.core import api


def test_errors_summary_names_the_share_of_the_weights_and_survives_reopening(qtbot, window, open_file, corpus,
                                                                              tmp_path):
    win = calibrated_digits(qtbot, window, open_file, corpus)
    # the same model the app analysed: the bare preset on the first 8 rows, measured on 8 rows of calib.npz
    folder = corpus / "digits_cnn"
    model = api.open_model(folder / "model_opset17.onnx")
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(folder / "calib.npz"), samples=8)
    split = api.noise_split(result.float_model or model, result.proto, str(folder / "calib.npz"), samples=8)
    share = split.weights_share
    text = f" Output noise: {share:.0%} from the weights, {1 - share:.0%} from the activations."
    assert win.doc.split["weights_db"] == split.weights_db and win.doc.split["samples"] == 8
    assert text in win.errors.summary.text()
    assert f"({split.weights_db:.1f} dB)" in win.errors.summary.toolTip()
    proj = win.save_project_to(tmp_path / "job.wbproj")
    open_file(win, corpus / "digits_mlp" / "model_opset17.onnx")
    assert "Output noise" not in win.errors.summary.text()
    open_file(win, proj)
    qtbot.waitUntil(lambda: bool(win.errors.rows), timeout=300_000)
    assert text in win.errors.summary.text()


def test_results_without_a_split_show_no_noise_line(qtbot, window, open_file, corpus):
    """Results of a project saved before the split existed have no "split" key."""
    win = window
    res = calibrated(qtbot, win, open_file, corpus / "digits_cnn/model_opset17.onnx")
    assert res["split"] is not None
    win.doc.set_results({k: v for k, v in res.items() if k != "split"})
    qtbot.waitUntil(lambda: bool(win.errors.rows), timeout=60_000)
    qtbot.waitUntil(lambda: "Output noise" not in win.errors.summary.text(), timeout=60_000)


def test_a_bar_tooltip_gives_the_units_weight_error(qtbot, window, open_file, corpus):
    win = calibrated_digits(qtbot, window, open_file, corpus)
    folder = corpus / "digits_cnn"
    model = api.open_model(folder / "model_opset17.onnx")
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(folder / "calib.npz"), samples=8)
    expected = {e.node: e for e in api.weight_errors(result.plan, model.proto, result.proto)}
    index = next(i for i, r in enumerate(win.errors.rows) if r.node in expected)
    e = expected[win.errors.rows[index].node]
    tip = win.errors.bar_tooltip(index)
    assert f"; weight {e.sqnr_db:.1f} dB (worst of {e.channels} output channels: #{e.worst_channel}, " \
           f"{e.worst_channel_db:.1f} dB)" in tip
    pool = next(i for i, r in enumerate(win.errors.rows) if r.node == "/f/f.9/AveragePool")  # no weight
    assert win.errors.bar_tooltip(pool).startswith("/f/f.9/AveragePool (AveragePool): output SQNR ")
    assert "weight" not in win.errors.bar_tooltip(pool)
