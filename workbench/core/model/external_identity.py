"""Which external data files a model's weights came from, and their SHA-256.

The model file's digest covers none of the bytes of its external ``.data`` files: a project, a sweep file or a
saved recipe choice keyed by the model file alone matched other weights saved beside the same graph file.
"""

from __future__ import annotations

from pathlib import Path

import onnx

from workbench.core.model.load import sha256_file
from workbench.core.model.reader import external_tensors


def external_identity(model) -> list[list[str]]:
    """``[[file name, sha256], ...]`` of the external data files ``model`` (a PreparedModel) read its weights
    from (``[]`` without any; a file that cannot be read any more gets ``""``). The model file's sha256
    covers none of their bytes: a sweep of other weights saved beside the same graph file matched."""
    names = list(getattr(model, "external_data_files", None) or [])
    path = getattr(model, "path", None)
    if not names or path is None:
        return []
    return files_identity(Path(path), names)


def files_identity(model_path: Path, names: list[str]) -> list[list[str]]:
    """``[[name, sha256], ...]`` of the files ``names`` (relative to the folder of the model file ``model_path``),
    in that order; ``""`` for a file that cannot be read. Each file is read once, in 1 MiB chunks."""
    out = []
    for name in names:
        try:
            out.append([name, sha256_file(model_path.parent / name)])
        except OSError:
            out.append([name, ""])
    return out


def external_file_names(model_path: Path) -> list[str]:
    """Sorted names of the external data files the ONNX file ``model_path`` stores tensors in (its tensors'
    ``location`` fields, subgraphs included), read from the graph without opening them: the list
    :attr:`~workbench.core.model.load.PreparedModel.external_data_files` of the model once loaded.

    Raises
    ------
    OSError
        The file cannot be read.
    google.protobuf.message.DecodeError
        The file is not a readable ONNX model.
    """
    proto = onnx.load(str(model_path), load_external_data=False)
    names = {e.value for t in external_tensors(proto) for e in t.external_data if e.key == "location"}
    return sorted(names)
