"""The app's calibration of a model the latency check leaves all float reads its file once, and the export writes it.

A calibration whose quantize leaves every unit float keeps the input file as given
(:func:`workbench.core.pipeline.calibrated.keep_written` -> :func:`workbench.core.pipeline.export.float_as_given`, one
read); the export of the same inputs writes those kept bytes (``write_kept``) without reading the model file again.
The latency measurement is scripted (conftest's fake clock): a model holding Q/DQ runs 1.37x float at 14 us a run,
a microsecond slowdown that leaves every island float at once.
"""

from __future__ import annotations

from pathlib import Path

import onnx

from workbench.core import api
from workbench.core.jobs import job_calibrate, job_export
from workbench.core.model.reader import read_opened_file
from workbench.core.pipeline import export
from workbench.core.progress import CancelToken


def _quiet(*_) -> None:
    """A job's progress, ignored."""


def test_calibrate_then_export_of_an_all_float_result_reads_the_model_file_once(cases, tmp_path, fake_latency,
                                                                               monkeypatch):
    fake_latency.quantized_at(1.37, float_s=14e-6)
    reads: list[Path] = []

    def counting(path: Path, sha256: str):
        reads.append(path)
        return read_opened_file(path, sha256)

    monkeypatch.setattr(export, "read_opened_file", counting)
    case = cases / "01_shared_bias_valueinfo_name"
    payload = {"model_path": str(case.with_suffix(".onnx")), "recipe": api.make_recipe("cpu-u8s8").to_json(),
               "data": {"kind": "npz", "path": str(case.with_suffix(".npz"))}, "samples": 8, "calibration": None}
    cal = job_calibrate({**payload, "reuse": False, "analysis_samples": 8}, _quiet, CancelToken())
    kept = cal["written"]
    assert kept["units"] == [0, 2]  # the latency fallback left both units float
    assert reads == [case.with_suffix(".onnx")]

    out = tmp_path / "float.onnx"
    res = job_export({**payload, "recipe": cal["recipe"], "calibration": cal["calibration"], "reuse": True,
                      "path": str(out), "format": "qdq", "choose": False, "calibrated": kept}, _quiet, CancelToken())
    assert res["reused"] is True
    assert len(reads) == 1  # the kept bytes are written; the model file is not read again
    assert out.read_bytes() == kept["model"]
    written = onnx.load(str(out))
    assert written.graph == onnx.load(str(case.with_suffix(".onnx"))).graph  # the input file as given
