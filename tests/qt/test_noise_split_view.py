"""The Errors dock says whether the weights or the activations hold the output noise."""

from __future__ import annotations

from latency_fakes import quantized_faster
from test_app_stale_results import calibrated, calibrated_digits

from workbench.core import api


def test_errors_summary_names_the_share_of_the_weights_and_survives_reopening(qtbot, window, open_file, corpus,
                                                                              tmp_path, monkeypatch):
    quantized_faster(monkeypatch)  # no unit kept float by a timing on a loaded machine
    win = calibrated_digits(qtbot, window, open_file, corpus, choose=False)  # the bare preset
    # the same model the app analysed: the recipe F5 left (its choice, bias correction and any units the latency
    # check kept float) on the first 8 rows, measured on 8 rows of calib.npz
    folder = corpus / "digits_cnn"
    model = api.open_model(folder / "model_opset17.onnx")
    result = api.quantize(model, win.doc.recipe, data=str(folder / "calib.npz"), samples=8)
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


def test_results_without_a_split_show_no_noise_line(qtbot, window, open_file, corpus, monkeypatch):
    """Results of a project saved before the split existed have no "split" key."""
    quantized_faster(monkeypatch)  # a split to show, whatever the machine's load
    win = window
    res = calibrated(qtbot, win, open_file, corpus / "digits_cnn/model_opset17.onnx")
    assert res["split"] is not None
    win.doc.set_results({k: v for k, v in res.items() if k != "split"})
    qtbot.waitUntil(lambda: bool(win.errors.rows), timeout=60_000)
    qtbot.waitUntil(lambda: "Output noise" not in win.errors.summary.text(), timeout=60_000)


def test_a_bar_tooltip_gives_the_units_weight_error(qtbot, window, open_file, corpus, monkeypatch):
    quantized_faster(monkeypatch)  # every unit quantized, whatever the machine's load
    win = calibrated_digits(qtbot, window, open_file, corpus, choose=False)  # the bare preset: the pool is a unit
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


def test_a_split_whose_parts_do_not_add_is_called_rough(qtbot, window, open_file, corpus, monkeypatch):
    """NoiseSplit JSON with additive False (both quantized 40.7 dB, the parts added 34.3: a saturated output):
    the summary and its tooltip say the shares are rough, with the parts' sum."""
    quantized_faster(monkeypatch)  # a split to show, whatever the machine's load
    win = window
    res = calibrated(qtbot, win, open_file, corpus / "digits_cnn/model_opset17.onnx")
    split = dict(res["split"], weights_share=0.25, weights_db=38.7, activations_db=34.3, all_db=40.7,
                 parts_db=33.0, additive=False)
    win.doc.set_results({**res, "split": split})
    # the new split shown: "rough" (the real share may be 25 % too: digits_cnn's is 25 % with its corrected biases matched)
    qtbot.waitUntil(lambda: "rough" in win.errors.summary.text(), timeout=60_000)
    assert (" Output noise: 25% from the weights, 75% from the activations (the two do not add up on this model: "
            "rough shares).") in win.errors.summary.text()
    assert "(here they do not: added they give 33.0 dB, so the shares are rough)" in win.errors.summary.toolTip()
    win.doc.set_results({**res, "split": dict(split, additive=True)})
    qtbot.waitUntil(lambda: "rough" not in win.errors.summary.text(), timeout=60_000)


def test_a_bar_tooltip_gives_the_noise_the_unit_adds_itself(qtbot, window, open_file, corpus, tmp_path, monkeypatch):
    """The calibrate job's local SQNR (1/local = 1/SQNR_out - 1/SQNR_in, traced upstream) is each bar's
    'own noise', equal to what analyze computes on the same model and rows."""
    quantized_faster(monkeypatch)  # every Conv quantized, whatever the machine's load
    win = calibrated_digits(qtbot, window, open_file, corpus, choose=False)  # the bare preset
    folder = corpus / "digits_cnn"
    model = api.open_model(folder / "model_opset17.onnx")
    result = api.quantize(model, win.doc.recipe, data=str(folder / "calib.npz"), samples=8)  # the recipe F5 left
    rows = api.analyze(model, result, str(folder / "calib.npz"), samples=8)
    local = {s.node: s.local_sqnr_db for s in api.local_sensitivity(result.plan, rows, graph=model.proto.graph)}
    conv = next(i for i, r in enumerate(win.errors.rows) if r.node == "/f/f.3/Conv")
    assert f"; its own noise {local['/f/f.3/Conv']:.1f} dB (local SQNR)" in win.errors.bar_tooltip(conv)
    first = next(i for i, r in enumerate(win.errors.rows) if r.node == "/f/f.0/Conv")  # reads the graph input
    assert f"; its own noise {win.errors.rows[first].sqnr_db:.1f} dB" in win.errors.bar_tooltip(first)
    tip = win.errors.bar_tooltip(conv)
    proj = win.save_project_to(tmp_path / "local.wbproj")
    open_file(win, corpus / "digits_mlp" / "model_opset17.onnx")
    open_file(win, proj)
    qtbot.waitUntil(lambda: bool(win.errors.rows), timeout=300_000)
    conv = next(i for i, r in enumerate(win.errors.rows) if r.node == "/f/f.3/Conv")
    assert win.errors.bar_tooltip(conv) == tip  # saved in the project's results
