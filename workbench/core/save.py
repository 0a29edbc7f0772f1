"""Atomic model saving, with external data for models over the 2 GiB protobuf limit.

The model (and its ``<name>.data`` file when external) is written into a temporary folder in
the target directory and moved into place with ``os.replace``, so a crash never leaves a half
written file and a second save to the same path replaces the ``.data`` file instead of
appending to it (``onnx.save`` appends external tensors to an existing file).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

import onnx

from workbench.core.errors import ExportError

log = logging.getLogger(__name__)

#: Models whose tensor bytes exceed this are saved with external data (protobuf limit 2 GiB).
EXTERNAL_THRESHOLD = 2**31 - 2**26


def tensor_bytes(proto: onnx.ModelProto) -> int:
    """Bytes held in initializers (raw and typed fields; approximate for typed fields)."""
    total = 0
    for g in _graphs(proto.graph):
        for t in g.initializer:
            total += len(t.raw_data) + 4 * (len(t.float_data) + len(t.int32_data)) + 8 * (
                len(t.int64_data) + len(t.double_data) + len(t.uint64_data))
    return total


def _graphs(graph: onnx.GraphProto):
    yield graph
    for node in graph.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for sub in a.graphs:
                    yield from _graphs(sub)


def save_model(proto: onnx.ModelProto, path: str | Path, *, external: bool | None = None) -> Path:
    """Write ``proto`` to ``path`` atomically; ``proto`` is not modified.

    Parameters
    ----------
    proto : onnx.ModelProto
    path : str or Path
        Target ``.onnx`` file. External data goes to ``<path name>.data`` beside it.
    external : bool or None
        Force external data on/off; None = only when tensors exceed ~2 GiB.

    Returns
    -------
    Path
        The written model path.

    Raises
    ------
    ExportError
        If the folder does not exist or is not writable, or the disk is full.
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise ExportError(f"{path}: folder {folder} does not exist.", hint="Create it or choose another path.")
    use_external = tensor_bytes(proto) > EXTERNAL_THRESHOLD if external is None else external
    data_name = path.name + ".data"
    try:
        tmp = Path(tempfile.mkdtemp(prefix=".wb-save-", dir=folder))
    except OSError as exc:
        raise ExportError(f"{path}: cannot write in {folder} ({exc.strerror}).",
                          hint="Choose a writable folder.") from None
    try:
        if use_external:
            copy = onnx.ModelProto()
            copy.CopyFrom(proto)
            onnx.save_model(copy, str(tmp / path.name), save_as_external_data=True,
                            all_tensors_to_one_file=True, location=data_name,
                            size_threshold=0 if external else 1024)
            if (tmp / data_name).exists():
                os.replace(tmp / data_name, folder / data_name)
        else:
            onnx.save_model(proto, str(tmp / path.name))
        os.replace(tmp / path.name, path)
    except OSError as exc:
        raise ExportError(f"{path}: writing failed ({exc.strerror}).",
                          hint="Check free disk space and permissions.") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log.info("saved %s%s", path, f" (+ {data_name})" if use_external else "")
    return path
