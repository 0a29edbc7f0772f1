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

import logging
from pathlib import Path

import onnx

from workbench.core.errors import ModelError
from workbench.core.model.load import PreparedModel, prepare_proto

log = logging.getLogger(__name__)


def float_as_written(float_model: PreparedModel) -> onnx.ModelProto:
    """The float model's file prepared without folding (see the module docstring).

    Parameters
    ----------
    float_model : PreparedModel
        The opened float model (its ``path`` is read again).

    Returns
    -------
    onnx.ModelProto
        A new model with every node of the file (Constant nodes lifted to initializers), its opset,
        and the node names of ``float_model``; ``float_model.proto`` itself when it has no file (built in memory) or
        the file can no longer be read.
    """
    path = float_model.path
    if path is None or not Path(path).is_file():
        return float_model.proto
    try:
        raw = onnx.load(str(path))
    except Exception as exc:  # noqa: BLE001 - protobuf / onnx raise their own types; the prepared graph is a fallback
        log.warning("%s: cannot read it again (%s); compared as prepared (folded) instead", path, exc)
        return float_model.proto
    try:
        return prepare_proto(raw, path=Path(path), sha256=float_model.sha256, as_written=True).proto
    except ModelError as exc:
        log.warning("%s", exc)
        return float_model.proto
