"""The histogram shown while F5 runs is drawn again with the calibration's results: its clip range, or why
there is none. Found by a new user following the README tutorial: after F5 the caption still said "no clip
range yet: calibrate (Run > Calibrate, F5) to see it"; on ppocr_mobile_v2_cls, whose Conv@0 the latency
check kept float (every unit, measured slower quantized), it asked to calibrate instead of saying so."""

from __future__ import annotations

from bundled_example import EXAMPLE
from latency_fakes import quantized_faster, slow_quantized
from test_app_flow import run_job

from workbench.core import api
from workbench.qt.clip_note import no_clip_reason

ASK = "no clip range yet: calibrate"


def _shown(qtbot, win, node: str) -> None:
    with qtbot.waitSignal(win.runs.histogramReady, timeout=300_000):
        win.focus_node(node)
    assert win.errors.hist_title.text().endswith(f"; {ASK} (Run > Calibrate, F5) to see it")


def test_the_shown_histogram_gets_the_clip_range_without_a_new_histogram(qtbot, window, open_file, monkeypatch):
    quantized_faster(monkeypatch)  # no unit kept float by a timing on a loaded machine
    win = window
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    win.calibration.choose_first.setChecked(False)
    win.calibration.samples.setValue(20)
    win.calibration.analysis_samples.setValue(4)
    _shown(qtbot, win, "/f/f.3/Conv")
    asked: list[str] = []
    monkeypatch.setattr(win.runs, "histogram", lambda tensor, **_k: asked.append(tensor))  # none is drawn anew
    status, res = run_job(qtbot, win, win.act_calibrate.trigger, timeout=300_000)
    assert status == "succeeded", res
    qtbot.waitUntil(lambda: "clip [" in win.errors.hist_title.text(), timeout=60_000)
    qp = api.QParams.from_json(win.doc.qparams["/f/f.5/Relu_output_0"])
    text = win.errors.hist_title.text()
    assert ASK not in text and text.endswith("; range from 20 calibration rows; histogram of the first 8 of 20 "
                                             "calibration rows"), text
    assert f"scale {float(qp.scale.ravel()[0]):.3g}" in text, text


def test_a_unit_the_latency_check_kept_float_says_so(qtbot, window, open_file, corpus, monkeypatch):
    slow_quantized(monkeypatch)  # the quantized model measures 1.5x float: every island is kept float
    win = window
    open_file(win, corpus / "ppocr_mobile_v2_cls" / "model.onnx")
    win.calibration.samples.setValue(16)
    win.calibration.analysis_samples.setValue(4)
    _shown(qtbot, win, "Conv@0")
    status, res = run_job(qtbot, win, win.act_calibrate.trigger, timeout=540_000)
    assert status == "succeeded", res
    assert "Conv@0" in res["latency_kept"] and not win.doc.qparams  # nothing quantized
    expected = ("; no clip range: Conv@0 is kept float by the latency check (measured slower quantized; "
                "View > Problems says more)")
    qtbot.waitUntil(lambda: win.errors.hist_title.text().endswith(expected), timeout=120_000)
    win.act_undo.trigger()  # the latency check's edit undone: the recipe quantizes it, the results are of another
    assert not win.doc.recipe.overrides.get("Conv@0") or not win.doc.recipe.overrides["Conv@0"].exclude
    assert not win.errors.hist_title.text().endswith(expected)


def test_no_clip_reason_names_the_latency_check_only_for_its_units(tmp_path):
    import onnx
    from onnx import TensorProto, helper

    w = helper.make_tensor("w", TensorProto.FLOAT, [2, 1, 1, 1], [1.0, 2.0])
    graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="c")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 2, 2])], [w])
    path = tmp_path / "conv.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    model = api.open_model(path)
    recipe = api.make_recipe("cpu-u8s8")
    recipe.overrides["c"] = api.NodeSettings(exclude=True)
    plan = api.plan(model, recipe)
    model = model.proto
    assert no_clip_reason(plan, model.graph, "y", True, {"c"}) == (
        "no clip range: c is kept float by the latency check (measured slower quantized; View > Problems says more)")
    assert no_clip_reason(plan, model.graph, "y", True) == "no clip range: c is excluded (kept float) by the recipe"
    assert no_clip_reason(plan, model.graph, "y", False, {"c"}).startswith(ASK)
