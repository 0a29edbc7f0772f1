"""The bundled example (``workbench/resources/example``, shipped with the package): one definition for the tests.

``EXAMPLE`` is the folder (``digits_cnn.onnx``, ``digits_cnn_calib.npz``, ``digits_cnn_eval.npz``),
``EXAMPLE_MODEL`` the model file. Import them as ``from bundled_example import EXAMPLE`` (``tests/`` is on
``sys.path`` through its conftest).
"""

from __future__ import annotations

from pathlib import Path

import workbench

#: Folder of the bundled example model and its calibration / evaluation data.
EXAMPLE = Path(workbench.__file__).resolve().parent / "resources" / "example"
#: The bundled example model: digits_cnn (input float32 [N, 1, 8, 8], output logits [N, 10]).
EXAMPLE_MODEL = EXAMPLE / "digits_cnn.onnx"
