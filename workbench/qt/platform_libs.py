"""System libraries Qt's X11 (xcb) platform plugin needs, checked before Qt loads it.

Without them Qt prints a multi-line plugin message and aborts the process (exit 134) when the
QApplication is created; since Qt 6.5 ``libxcb-cursor0`` is the usual one missing on a bare
Debian/Ubuntu machine. This module finds the missing ones with ``ldd`` on the plugin, so the app
can say in one line which Debian packages to install. No Qt is imported here.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

_NOT_FOUND = re.compile(r"^\s*(\S+)\s+=>\s+not found\s*$")
_SONAME = re.compile(r"^lib(?P<name>.+?)\.so\.(?P<version>\d+)")


def xcb_plugin() -> Path | None:
    """Path of PySide6's ``libqxcb.so``, or None when PySide6 or the plugin is not there."""
    spec = importlib.util.find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return None
    plugin = Path(list(spec.submodule_search_locations)[0]) / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    return plugin if plugin.is_file() else None


def not_found(ldd_output: str) -> list[str]:
    """Library names ``ldd`` reported as ``not found``, in its order, without repeats."""
    out: list[str] = []
    for line in ldd_output.splitlines():
        match = _NOT_FOUND.match(line)
        if match and match.group(1) not in out:
            out.append(match.group(1))
    return out


def debian_package(soname: str) -> str:
    """Debian's package name for a shared library by its naming policy: ``libxcb-cursor.so.0`` ->
    ``libxcb-cursor0``, ``libxkbcommon-x11.so.0`` -> ``libxkbcommon-x11-0`` (a dash before the
    version when the name ends in a digit)."""
    match = _SONAME.match(soname)
    if not match:
        return soname
    name, version = match.group("name"), match.group("version")
    return f"lib{name}{'-' if name[-1].isdigit() else ''}{version}"


def missing_xcb_libraries(plugin: Path | None = None) -> list[str]:
    """Shared libraries the xcb plugin (and the Qt libraries it links) cannot find; empty when all
    are present or when it cannot be checked (no plugin, no ``ldd``)."""
    plugin = xcb_plugin() if plugin is None else plugin
    ldd = shutil.which("ldd")
    if plugin is None or ldd is None:
        return []
    try:
        done = subprocess.run([ldd, str(plugin)], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    return not_found(done.stdout)


def uses_xcb(environ=None, platform: str | None = None) -> bool:
    """True when Qt will pick its xcb plugin: Linux, an X display, no Wayland display and no other
    platform asked for with QT_QPA_PLATFORM."""
    env = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    chosen = env.get("QT_QPA_PLATFORM", "")
    return (platform.startswith("linux") and bool(env.get("DISPLAY")) and not env.get("WAYLAND_DISPLAY")
            and chosen in ("", "xcb"))


def missing_message(libraries: list[str]) -> str:
    """The one-line error naming the missing libraries and the command that installs them."""
    packages = " ".join(dict.fromkeys(debian_package(lib) for lib in libraries))
    return (f"error: Qt's X11 plugin cannot load: missing system libraries {', '.join(libraries)}; "
            f"install them (Debian/Ubuntu: sudo apt-get install {packages}) and start workbench again; "
            "the CLI (workbench-cli) needs none of them")
