"""An environment for a child Python in which some modules cannot be imported, as on an install without them.

``blocked_env(tmp_path, blocked)`` writes ``tmp_path/site/sitecustomize.py`` installing a meta-path finder that makes
every import of a ``blocked`` top-level module (and its submodules) raise ModuleNotFoundError, and returns
``os.environ`` with that folder first on PYTHONPATH and QT_QPA_PLATFORM=offscreen."""

from __future__ import annotations

import os
from pathlib import Path

BLOCKER = """import sys


class _Blocker:
    '''Every import of {blocked!r} (and their submodules) fails as on an install without them.'''

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _Blocker())
"""


def blocked_env(tmp_path: Path, blocked: tuple[str, ...]) -> dict[str, str]:
    """See the module; the sitecustomize folder is ``tmp_path / "site"``."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER.format(blocked=blocked))
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
            "QT_QPA_PLATFORM": "offscreen"}
