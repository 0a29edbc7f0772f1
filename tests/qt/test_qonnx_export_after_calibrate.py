"""QONNX export after Calibrate (F5) writes from the calibration the document keeps, as the QDQ export does.

The QONNX export ran the whole quantize pipeline again (calibration pass, latency check) even when the model,
recipe, data and sample count were those of the calibration: the user waited for a second calibration. It now
rebuilds the calibrated model from its recipe and ranges and writes that, the same bytes as
``workbench-cli quantize --format qonnx`` with that recipe and data.
"""

from __future__ import annotations

import pytest
from cli_projects import cli_quantize
from latency_fakes import fixed_latency
from test_app_flow import run_job
from test_app_stale_results import calibrated

from workbench.core.pipeline import calibrate_pass


@pytest.fixture
def calibration_runs(monkeypatch) -> list[int]:
    """One entry per calibration pass over the data (the model run with its tensors observed)."""
    runs: list[int] = []
    real = calibrate_pass.run_calibration

    def counting(*args, **kwargs):
        runs.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(calibrate_pass, "run_calibration", counting)
    return runs


@pytest.mark.parametrize(("name", "samples"), [("digits_cnn", 8), ("digits_transformer", 16)])
def test_qonnx_export_after_calibrate_calibrates_nothing_and_writes_the_cli_bytes(
    qtbot, window, open_file, corpus, tmp_path, monkeypatch, calibration_runs, name, samples
):
    fixed_latency(
        monkeypatch
    )  # the app's jobs in this process, its latency measurements fixed (as the CLI's below)
    model = corpus / name / "model_opset17.onnx"
    calibrated(qtbot, window, open_file, model, samples=samples, choose=False)
    passes = len(calibration_runs)
    assert passes >= 1  # the calibration's own
    assert window.doc.written is not None and window.doc.results_current

    titles: list[str] = []
    window.runs.started.connect(titles.append)
    out = tmp_path / "app.qonnx.onnx"
    status, res = run_job(qtbot, window, lambda: window.export_to(out, "qonnx"), timeout=300_000)
    assert status == "succeeded", res
    assert titles == ["Export to app.qonnx.onnx"]  # one job, not "(quantizing again: ...)"
    assert len(calibration_runs) == passes  # no calibration pass again
    assert res["reused"] is True and res["rerun"] is None and res["units"] == window.doc.written["units"]
    assert "written as QONNX from its ranges" in window.status_label.toolTip()

    cli = tmp_path / "cli.qonnx.onnx"
    cli_quantize(
        model,
        "--data",
        model.with_name("calib.npz"),
        "--samples",
        samples,
        "--no-auto",
        "--format",
        "qonnx",
        "-o",
        cli,
        fixed_latency=True,
    )
    assert out.read_bytes() == cli.read_bytes()
