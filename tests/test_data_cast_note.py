"""Calibration data cast to the model's input dtype (a float64 .npz for a float32 input) is said once, naming
the file, the input and the cast: on the CLI's stderr and in the job's issues, which the app lists.

It was cast without a word (the ranges were right, the user never learnt the file was twice the size it
needed to be, nor that an int64 array had been narrowed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from bundled_example import EXAMPLE

from workbench.cli import main
from workbench.core import api
from workbench.core.issues import IssueCode, Severity
from workbench.core.jobs import job_export
from workbench.core.progress import CancelToken


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


MODEL = EXAMPLE / "digits_cnn.onnx"
CALIB = EXAMPLE / "digits_cnn_calib.npz"


@pytest.fixture
def calib64(tmp_path) -> Path:
    with np.load(CALIB) as z:
        arrays = {k: z[k] for k in z.files}
    assert {a.dtype for a in arrays.values()} == {np.dtype(np.float32)}
    path = tmp_path / "calib64.npz"
    np.savez(path, **{k: a.astype(np.float64) for k, a in arrays.items()})
    return path


def _input() -> str:
    return api.open_model(MODEL).inputs[0].name


def test_quantize_notes_the_cast_once_and_writes_what_float32_data_writes(calib64, tmp_path, capsys):
    out64, out32 = tmp_path / "m64.onnx", tmp_path / "m32.onnx"
    assert main(["quantize", str(MODEL), "--data", str(calib64), "--samples", "16", "--no-latency-check",
                 "-o", str(out64)]) == 0
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if "cast to" in line]
    assert said == [f"note: {calib64}: array for input '{_input()}' is float64, cast to float32."], err
    assert main(["quantize", str(MODEL), "--data", str(CALIB), "--samples", "16", "--no-latency-check",
                 "-o", str(out32)]) == 0
    assert "cast to" not in capsys.readouterr().err
    assert out64.read_bytes() == out32.read_bytes()  # float64 values of float32 data: the same ranges


def test_the_issue_is_in_the_result_with_and_without_a_calibration_to_reuse(calib64):
    model = api.open_model(MODEL)
    recipe = api.make_recipe("cpu-u8s8")
    first = api.quantize(model, recipe, data=str(calib64), samples=16)
    casts = [i for i in first.issues if i.code == IssueCode.DATA_CAST]
    assert [(i.node, i.severity, i.message) for i in casts] == [
        ("", Severity.INFO, f"{calib64}: array for input '{_input()}' is float64, cast to float32.")]
    # every range reused (as after the recipe choice): the data is still what the job was given
    again = api.quantize(model, recipe, data=str(calib64), samples=16, calibration=first.calibration)
    assert again.calibration.reused and [i.message for i in again.issues if i.code == IssueCode.DATA_CAST] == \
        [casts[0].message]
    plain = api.quantize(model, recipe, data=str(CALIB), samples=16)
    assert not [i for i in plain.issues if i.code == IssueCode.DATA_CAST]


def test_analyze_prints_the_note_too(calib64, capsys):
    assert main(["analyze", str(MODEL), "--data", str(calib64), "--samples", "16", "--eval-samples", "8",
                 "--split-samples", "0"]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if "cast to" in line]
    assert said == [f"note: {calib64}: array for input '{_input()}' is float64, cast to float32."]


def test_the_apps_export_job_lists_it_among_its_problems(calib64, tmp_path):
    payload = {"model_path": str(MODEL), "recipe": api.make_recipe("cpu-u8s8").to_json(), "samples": 16,
               "data": {"kind": "npz", "path": str(calib64)}, "calibration": None, "reuse": True,
               "path": str(tmp_path / "out.onnx"), "format": "qdq", "latency_check": False}
    result = job_export(payload, lambda *a: None, CancelToken())
    casts = [p for p in result["problems"] if p.code == IssueCode.DATA_CAST]
    assert len(casts) == 1 and casts[0].message.endswith(f"array for input '{_input()}' is float64, cast to float32.")
    assert any("is float64, cast to float32." in text for text in result["issues"])


def test_the_apps_calibrate_job_lists_it_once(calib64):
    from workbench.core.jobs import job_calibrate

    payload = {"model_path": str(MODEL), "recipe": api.make_recipe("cpu-u8s8").to_json(), "samples": 16,
               "data": {"kind": "npz", "path": str(calib64)}, "calibration": None, "reuse": True,
               "analysis_samples": 8, "choose": True}
    result = job_calibrate(payload, lambda *a: None, CancelToken())
    casts = [p for p in result["problems"] if p.code == IssueCode.DATA_CAST]
    assert [(p.severity, p.message) for p in casts] == [
        (Severity.INFO, f"{calib64}: array for input '{_input()}' is float64, cast to float32.")]
