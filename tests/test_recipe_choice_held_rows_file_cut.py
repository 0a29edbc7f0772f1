"""The rows the recipe choice holds out are read from the first pass over the data until the choice ends. Data
over KeptRows' limit gave them as mapped .npy / .npz rows, views of the file: a calibration file saved again
shorter during the choice (numpy.save truncates the file it writes) ended the process with SIGBUS when the
choice next ran them. Run in a child process, so that a SIGBUS fails the test instead of ending the test run."""

from __future__ import annotations

import subprocess
import sys

import pytest
from shared_paths import CORPUS

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="a mapped file cannot be truncated on Windows")

_CHILD = """
import sys
from pathlib import Path
import numpy as np
from workbench.core import api
from workbench.core.data.arrays import ArrayFileSource
from workbench.core.tuning.recipe_choice import MAX_HELD_OUT, _first_read
model, path = api.open_model(sys.argv[1]), Path(sys.argv[2])
x = next(iter(np.load(Path(sys.argv[1]).with_name("calib.npz")).values()))[:24]
np.save(path, x)
read, bad, held = _first_read(ArrayFileSource(model, path), 24)  # the source itself: data too large to keep
assert (read, bad, len(held)) == (24, [], MAX_HELD_OUT)
np.save(path, x[:1])  # saved again, shorter, while the choice runs
got = np.concatenate([feed[model.inputs[0].name] for feed in held])
print("equal" if np.array_equal(got, x[24 - MAX_HELD_OUT:]) else "changed")
"""


def test_held_out_rows_outlive_their_data_file_saved_again_shorter(tmp_path):
    run = subprocess.run([sys.executable, "-c", _CHILD, str(CORPUS / "digits_cnn" / "model_opset17.onnx"),
                          str(tmp_path / "calib.npy")], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"child ended with {run.returncode}: {run.stderr[-2000:]}"
    assert run.stdout.strip() == "equal"
