"""The user's float file read again and prepared *as written*: no opset upgrade, nothing folded.

Opening a float model (:func:`~workbench.core.model.load.load_model`) upgrades an opset below 13 and
folds ``Conv -> BatchNormalization`` and ``Conv -> Mul / Add`` by per-channel constants into the Conv.
Another tool (onnxruntime's ``quantize_static``) quantizes the file as it is and keeps those nodes, so
code that diffs or runs a quantized file against its float model (``compare``, the noise split) needs
the graph the file holds, with the node names and lifted Constants of the opened model:
:func:`read_as_written`.
"""

from __future__ import annotations

import logging
from pathlib import Path

import onnx

from workbench.core.errors import WorkbenchError
from workbench.core.model.load import PreparedModel, prepare_proto
from workbench.core.model.reader import read_model_file, read_opened_file

log = logging.getLogger(__name__)


def read_as_written(model: PreparedModel) -> onnx.ModelProto | None:
    """``model``'s file read again and prepared with ``prepare_proto(as_written=True)``.

    Large external weights stay memory-mapped, as in ``model.proto``; the file's bytes, checked when
    ``model`` was opened, are not checked again (:func:`~workbench.core.model.reader.read_opened_file`).

    Parameters
    ----------
    model : PreparedModel
        The opened float model; its ``path`` is read again and checked against its ``sha256``.

    Returns
    -------
    onnx.ModelProto or None
        A new model with every node of the file (Constant nodes lifted to initializers), its opset and
        the node names ``model`` has; None when ``model`` has no file (built in memory), or the file
        can no longer be read or no longer holds the bytes ``model`` was opened from (a warning is
        logged for these two). Never raises.
    """
    if model.path is None or not Path(model.path).is_file():
        return None
    path = Path(model.path)
    try:
        raw = read_opened_file(path, model.sha256) if model.sha256 else read_model_file(path)[0]
        if raw is None:
            log.warning("%s: the file changed since it was opened; its prepared (folded) graph is used instead. "
                        "Open it again to compare with the file as written.", path)
            return None
        return prepare_proto(raw, path=path, sha256=model.sha256, as_written=True).proto
    except WorkbenchError as exc:
        log.warning("%s: cannot read it again (%s); its prepared (folded) graph is used instead.", path, exc)
        return None
