"""Qt's own stderr notices that tell a user nothing to act on, dropped.

The offscreen platform (``QT_QPA_PLATFORM=offscreen``, which ``workbench`` itself suggests for a headless
check when there is no display) prints "This plugin does not support propagateSizeHints()" whenever a
window's size limits change; every other Qt message is still printed, one line each.
"""

from __future__ import annotations

import os
import sys

#: Substrings of Qt messages that are dropped (offscreen plugin notices).
QUIET = ("propagateSizeHints",)


def print_unless_quiet(_mode, _context, message: str) -> None:
    """Qt message handler: print ``message`` to stderr unless it holds one of :data:`QUIET`."""
    if not any(q in message for q in QUIET):
        print(message, file=sys.stderr)


def quiet_offscreen_notices(environ=None) -> bool:
    """Install :func:`print_unless_quiet` when Qt runs offscreen (``QT_QPA_PLATFORM=offscreen``).

    Call it before the QApplication exists. Returns True when it was installed.
    """
    env = os.environ if environ is None else environ
    if env.get("QT_QPA_PLATFORM") != "offscreen":
        return False
    from PySide6.QtCore import qInstallMessageHandler

    qInstallMessageHandler(print_unless_quiet)
    return True
