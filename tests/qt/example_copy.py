"""The bundled digits CNN and its calibration data copied into a test's folder and opened there (a test then
writes projects and exports beside it, never into the package), with small calibration and analysis counts."""

from __future__ import annotations

import shutil
from pathlib import Path

from bundled_example import EXAMPLE


def open_example_copy(window, open_file, folder: Path, *, samples: int | None = 16,
                      analysis_samples: int | None = 8) -> Path:
    """Copy ``digits_cnn.onnx`` and ``digits_cnn_calib.npz`` into ``folder``, open the model in ``window`` and set
    the Calibration panel's sample counts (None: the panel's own); returns the copied model's path."""
    for name in ("digits_cnn.onnx", "digits_cnn_calib.npz"):
        shutil.copy(EXAMPLE / name, folder / name)
    open_file(window, folder / "digits_cnn.onnx")
    if samples is not None:
        window.calibration.samples.setValue(samples)
    if analysis_samples is not None:
        window.calibration.analysis_samples.setValue(analysis_samples)
    return folder / "digits_cnn.onnx"
