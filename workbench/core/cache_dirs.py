"""The one place a cache folder's path is made: ``$WORKBENCH_CACHE_DIR/<name>`` when that variable is set
(tests set it per test), else ``<platformdirs user cache>/workbench/<name>``. The LLVM objects (``llvm``),
latency measurements (``latency``), canvas layouts (``layout``) and the CLI's recipe choices
(``recipe_choice``) each keep one such folder. Standard library only; platformdirs is imported only when no
cache root is given, so a run that never caches never loads it."""

from __future__ import annotations

import os
from pathlib import Path

#: Environment variable that moves the root of every cache folder.
CACHE_ROOT_ENV = "WORKBENCH_CACHE_DIR"


def cache_dir(name: str) -> Path:
    """``$WORKBENCH_CACHE_DIR/<name>`` when set (and not empty), else ``<platformdirs user cache>/workbench/<name>``.
    The folder is not created."""
    root = os.environ.get(CACHE_ROOT_ENV)
    if root:
        return Path(root) / name
    import platformdirs  # only when no cache root is given

    return Path(platformdirs.user_cache_dir("workbench", appauthor=False)) / name
