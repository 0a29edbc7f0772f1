"""The float graph a quantized file is compared with: the user's file as written, not our prepared copy.

Opening a float model folds ``Conv -> BatchNormalization`` and ``Conv -> Mul / Add`` by per-channel
constants into the Conv and upgrades an opset below 13 (:mod:`workbench.core.model.load`, steps 5 and 1;
the upgrade may insert nodes: Shape / Flatten / Reshape around an opset-12 Softmax). Another tool
(onnxruntime's ``quantize_static``) quantizes the file as it is and keeps those nodes; diffing against
the prepared graph would call them "added by the quantizer" although the user's file holds them. So the
float side of a diff is the file prepared ``as_written``: Constant weights lifted, unnamed and repeated
node names named as :func:`~workbench.core.model.load.load_model` names them (the names our quantized
files carry), the opset kept, nothing folded.
"""

from __future__ import annotations

import onnx

from workbench.core.model.as_written import read_as_written
from workbench.core.model.load import PreparedModel


def float_as_written(float_model: PreparedModel) -> onnx.ModelProto:
    """The float model's file prepared without folding (see the module docstring).

    Parameters
    ----------
    float_model : PreparedModel
        The opened float model (its ``path`` is read again: :func:`~workbench.core.model.as_written.read_as_written`,
        large external weights memory-mapped).

    Returns
    -------
    onnx.ModelProto
        A new model with every node of the file (Constant nodes lifted to initializers), its opset,
        and the node names of ``float_model``; ``float_model.proto`` itself when it has no file (built in memory),
        or the file can no longer be read or has changed since it was opened (a warning is logged).
    """
    proto = read_as_written(float_model)
    return float_model.proto if proto is None else proto
