"""Whether the X server that DISPLAY names answers, asked before Qt is: with DISPLAY set and no server there
(a stale DISPLAY over ssh, Xvfb not started yet) Qt printed its multi-line xcb message, which blames a
missing libxcb-cursor0, and aborted with exit 134.

The question is libxcb's own (``xcb_connect``, ``xcb_connection_has_error``), through ctypes: libxcb.so.1 is
a library Qt's xcb plugin loads anyway. Where it cannot be loaded the answer is "yes" and Qt decides.
"""

from __future__ import annotations

import ctypes
import ctypes.util


def x_display_answers(display: str) -> bool:
    """True when an X server accepts a connection on ``display`` (":0", "host:1.0"), or when libxcb cannot
    be loaded to ask; False when the connection fails (no server, refused, no authorisation)."""
    try:
        xcb = ctypes.CDLL(ctypes.util.find_library("xcb") or "libxcb.so.1")
    except OSError:
        return True
    xcb.xcb_connect.restype = ctypes.c_void_p
    xcb.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
    xcb.xcb_connection_has_error.restype = ctypes.c_int
    xcb.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
    xcb.xcb_disconnect.restype = None
    xcb.xcb_disconnect.argtypes = [ctypes.c_void_p]
    connection = xcb.xcb_connect(display.encode(), None)  # never NULL: an error object on failure
    try:
        return xcb.xcb_connection_has_error(connection) == 0
    finally:
        xcb.xcb_disconnect(connection)


def no_x_server_message(display: str) -> str:
    """The one-line error for a DISPLAY no X server answers on."""
    return (f"error: no X server answers on DISPLAY={display}: start the app in a desktop session (or start the "
            "X server first, e.g. Xvfb), or set QT_QPA_PLATFORM=offscreen for a headless check; the CLI "
            "(workbench-cli) needs no display")
