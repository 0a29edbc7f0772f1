"""A phase's progress message does not repeat the phase's verb: the calibrate job reported
"Calibrating: Calibrating 2 tensors" (the phase name before the calibrator's own message)."""

from __future__ import annotations

from bundled_example import EXAMPLE

from workbench.core import api
from workbench.core.jobs import job_calibrate
from workbench.core.progress import CancelToken, in_phase


def test_in_phase_drops_the_repeated_verb():
    seen: list[str] = []
    report = in_phase(lambda d, t, m: seen.append(m), "Calibrating")
    report(0, 4, "Calibrating 2 tensors")
    report(1, 4, "16 rows")
    report(1, 1, "")
    rest = in_phase(lambda d, t, m: seen.append(m), "Calibrating the rest")
    rest(0, 1, "Calibrating 1 tensor")
    other = in_phase(lambda d, t, m: seen.append(m), "Output error")
    other(0, 1, "Output 3")  # not a verb: kept
    assert seen == ["Calibrating: 2 tensors", "Calibrating: 16 rows", "Calibrating", "Calibrating the rest: 1 tensor",
                    "Output error: Output 3"]


def test_calibrate_job_names_the_tensors_once():
    payload = {"model_path": str(EXAMPLE / "digits_cnn.onnx"), "recipe": api.make_recipe("cpu-u8s8").to_json(),
               "data": {"kind": "npz", "path": str(EXAMPLE / "digits_cnn_calib.npz")}, "samples": 8,
               "calibration": None}
    events: list[str] = []
    job_calibrate(payload, lambda d, t, m: events.append(m), CancelToken())
    tensors = [m for m in events if m.startswith("Calibrating:") and m.endswith("tensors")]
    assert tensors and all(m.count("Calibrating") == 1 for m in tensors), sorted(set(events))
