"""Stand-ins for :func:`workbench.qt.engine.child_main`: the child of a file job that ignores the cancel, so
:class:`~workbench.qt.workers.ProcessJob` kills it once its grace is over. Both write as
:func:`workbench.core.io.atomic.atomic_path` does (``.NAME.XXXXXXXX.tmp`` beside the target, renamed onto it)."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

#: the bytes a fake writer puts in its temporary file
NEW = b"the file the killed job wrote"


def _temp(path: Path) -> Path:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "wb") as f:
        f.write(NEW)
    return Path(tmp)


def writes_then_hangs(name: str, payload: dict, out, ctl) -> None:
    """Makes the temporary file of ``payload["path"]`` and hangs before the rename (killed mid-write)."""
    _temp(Path(payload["path"]))
    time.sleep(600)


def replaces_then_hangs(name: str, payload: dict, out, ctl) -> None:
    """Writes ``payload["path"]`` (temporary file renamed onto it) and hangs before returning its result."""
    path = Path(payload["path"])
    os.replace(_temp(path), path)
    time.sleep(600)
