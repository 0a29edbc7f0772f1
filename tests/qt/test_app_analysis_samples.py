"""The app measures each unit on as many samples as its "Analysis samples" field says, like
``workbench analyze --samples N --eval-samples M``.

Found by a user pass: with 4 calibration samples the app silently analysed 4 rows instead of the 12
asked for, so its SQNR figures differed from the CLI's (the HTML report, on 12 rows, disagreed too)."""

from __future__ import annotations

import math

from latency_fakes import quantized_faster
from test_app_flow import run_job

from workbench.core import api


def test_analysis_uses_the_analysis_samples_not_the_calibration_count(qtbot, window, open_file, corpus, monkeypatch):
    quantized_faster(monkeypatch)  # the latency placement keeps no unit float: the app analyses the recipe as it is
    model_path = corpus / "digits_cnn/model_opset17.onnx"
    win = window
    open_file(win, model_path)
    data = win.doc.data
    win.calibration.samples.setValue(4)
    win.calibration.analysis_samples.setValue(12)
    status, res = run_job(qtbot, win, win.act_calibrate.trigger, timeout=300_000)
    assert status == "succeeded", res
    app = {r.node: r.sqnr_db for r in win.doc.errors}

    model = api.open_model(str(model_path))
    plan = api.plan(model, win.doc.recipe, guard=True)
    calib = api.calibrate(model, plan, data, samples=4)
    result = api.quantize(model, win.doc.recipe, calibration=calib)
    on = {n: {r.node: r.sqnr_db for r in api.analyze(model, result, data, samples=n)} for n in (4, 12)}
    assert set(app) == set(on[12]) and len(app) > 3
    for node, db in app.items():
        assert math.isclose(db, on[12][node], rel_tol=1e-6, abs_tol=1e-6), node
    assert any(not math.isclose(on[4][n], on[12][n], abs_tol=1e-3) for n in app)  # 4 rows would differ
