"""Models saved with their weights in an external ``.data`` file, for the tests of what records those files."""

from __future__ import annotations

import onnx
from onnx import numpy_helper


def save_external(source, folder, scale: float) -> None:
    """``source`` saved as ``folder/m.onnx`` with every initializer in ``m.onnx.data``, 4-D weights times ``scale``
    (so two calls with other scales give the same graph file beside other weights)."""
    proto = onnx.load(str(source))
    for t in proto.graph.initializer:
        a = numpy_helper.to_array(t)
        if a.ndim == 4:
            t.CopyFrom(numpy_helper.from_array((a * scale).astype(a.dtype), t.name))
    folder.mkdir()
    onnx.save(proto, str(folder / "m.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="m.onnx.data", size_threshold=0)
