"""The ``[app]`` extras (PySide6, pyqtgraph, igraph): which of them this Python lacks, and the words saying how to
install them. The app's entry point (``workbench/qt/main.py``) and ``workbench-cli render`` share them.

Outside the core (what may be installed is not quantization) and importing only the standard library, so the
CLI may use it under the facade-only import contract and the app before it loads Qt (``--help`` stays fast).
"""

from __future__ import annotations

import importlib.util

#: import names of the app's own dependencies (the CLI-only install has none of them)
APP_MODULES = ("PySide6", "pyqtgraph", "igraph")
#: what ``render``'s drawing child (``python -m workbench.qt.render``) imports
RENDER_MODULES = ("PySide6", "pyqtgraph")
#: how to install the extras: from the checkout first (the README's install), else from the package index
INSTALL_EXTRAS = "pip install -e '.[app]' in the checkout (or pip install 'onnx-quant-workbench[app]')"


def first_missing(modules: tuple[str, ...]) -> str | None:
    """The first of ``modules`` (import names) this Python cannot import, or None; nothing is imported.

    A broken install (``find_spec`` raises ImportError, or ValueError for a module whose ``__spec__`` is None)
    counts as missing."""
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return name
    return None


def not_installed(module: str) -> str:
    """``not installed here (no module named 'MODULE')``: the words both messages use for the missing ``module``."""
    return f"not installed here (no module named {module!r})"
