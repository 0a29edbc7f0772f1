"""Which external data files a model's weights came from, and their SHA-256.

The model file's digest covers none of the bytes of its external ``.data`` files: a project, a sweep file or a
saved recipe choice keyed by the model file alone matched other weights saved beside the same graph file.
"""

from __future__ import annotations

from pathlib import Path

from workbench.core.model.load import sha256_file


def external_identity(model) -> list[list[str]]:
    """``[[file name, sha256], ...]`` of the external data files ``model`` (a PreparedModel) read its weights
    from (``[]`` without any; a file that cannot be read any more gets ``""``). The model file's sha256
    covers none of their bytes: a sweep of other weights saved beside the same graph file matched."""
    names = list(getattr(model, "external_data_files", None) or [])
    path = getattr(model, "path", None)
    if not names or path is None:
        return []
    out = []
    for name in names:
        try:
            out.append([name, sha256_file(Path(path).parent / name)])
        except OSError:
            out.append([name, ""])
    return out
