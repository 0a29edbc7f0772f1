"""Entry point of the desktop app: ``workbench [MODEL.onnx | PROJECT.wbproj]``.

Without an argument the bundled example (``workbench/resources/example/digits_cnn.onnx`` with its
calibration file ``digits_cnn_calib.npz``) is opened, so a first start shows something to quantize.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing
import os
import sys
from pathlib import Path

from workbench import __version__
from workbench.extras import APP_MODULES, INSTALL_EXTRAS, first_missing, not_installed
from workbench.qt.platform_libs import missing_message, missing_xcb_libraries, uses_xcb
from workbench.qt.qt_notices import quiet_offscreen_notices
from workbench.qt.x_display import no_x_server_message, x_display_answers

log = logging.getLogger(__name__)


def example_model() -> Path:
    """The bundled example model."""
    return Path(__file__).resolve().parent.parent / "resources" / "example" / "digits_cnn.onnx"


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="workbench", description="Post-training quantization workbench.")
    parser.add_argument("path", nargs="?", help="an ONNX model or a .wbproj project (default: the example)")
    parser.add_argument("--version", action="version", version=f"workbench {__version__}")
    parser.add_argument("--self-test", action="store_true", help="quantize the example offscreen and exit")
    return parser.parse_args(argv)


def no_app_message(module: str) -> str:
    """The one line printed when ``module`` (an import name of the app's extras, :data:`APP_MODULES`) is missing."""
    return (f"error: the app needs its extras, {not_installed(module)}: install them with {INSTALL_EXTRAS}; "
            "the CLI (workbench-cli) needs none of them")


NO_DISPLAY = ("error: no display: run the app in a desktop session, or set QT_QPA_PLATFORM=offscreen for a "
              "headless check; the CLI (workbench-cli) needs no display")


def no_display(environ=None, platform: str | None = None) -> bool:
    """True on Linux without DISPLAY, WAYLAND_DISPLAY and QT_QPA_PLATFORM: Qt would print its
    multi-line xcb message and abort (exit 134) when the QApplication is created."""
    env = os.environ if environ is None else environ
    platform = sys.platform if platform is None else platform
    return platform.startswith("linux") and not any(env.get(k) for k in ("DISPLAY", "WAYLAND_DISPLAY",
                                                                          "QT_QPA_PLATFORM"))


def _excepthook(exc_type, exc, tb) -> None:
    """Last resort for exceptions outside guarded slots: log them and show a dialog, keep running."""
    log.error("unhandled exception", exc_info=(exc_type, exc, tb))
    # allow-listed function-level import: this module defers Qt until argv is parsed (--help, --version)
    from workbench.qt.dialogs import show_error

    show_error(None, "Workbench", exc)


def main(argv: list[str] | None = None) -> int:
    """Start the app; returns the exit status."""
    multiprocessing.freeze_support()  # background jobs use spawned processes (also in bundles)
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parse(argv)
    missing = first_missing(APP_MODULES)
    if missing is not None:  # a CLI-only install: one line, not an import traceback
        print(no_app_message(missing), file=sys.stderr)
        return 2
    if args.self_test:
        # allow-listed: Qt and the window are imported only once argv is parsed
        from workbench.qt.selftest import run_self_test

        return run_self_test(["--self-test"])
    if no_display():
        print(NO_DISPLAY, file=sys.stderr)
        return 2
    if uses_xcb() and (missing := missing_xcb_libraries()):
        print(missing_message(missing), file=sys.stderr)
        return 2
    if uses_xcb() and not x_display_answers(os.environ["DISPLAY"]):
        print(no_x_server_message(os.environ["DISPLAY"]), file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # allow-listed: Qt, the window and QtWebEngine load only once argv is parsed (--help stays fast)
    from PySide6.QtWidgets import QApplication

    from workbench.qt import settings
    from workbench.qt.app_window import MainWindow
    from workbench.qt.interrupt import close_on_interrupt
    from workbench.qt.netron_view import prepare_webengine
    from workbench.qt.theme import apply_theme

    quiet_offscreen_notices()  # QT_QPA_PLATFORM=offscreen (NO_DISPLAY suggests it): no propagateSizeHints() lines
    prepare_webengine()  # must run before the QApplication exists (QtWebEngine's requirement)
    app = QApplication.instance() or QApplication([sys.argv[0] if sys.argv else "workbench"])
    app.setApplicationName("Workbench")
    app.setOrganizationName("Workbench")
    app.setApplicationVersion(__version__)
    app.setDesktopFileName("workbench")
    icon = Path(__file__).resolve().parent.parent / "resources" / "icons" / "workbench.svg"
    if icon.exists():
        from PySide6.QtGui import QIcon

        app.setWindowIcon(QIcon(str(icon)))
    apply_theme(app, settings.theme())
    sys.excepthook = _excepthook
    window = MainWindow()
    window.show()
    watcher = close_on_interrupt(window)  # Ctrl+C in the terminal: as the close button, no traceback
    window.open_path(Path(args.path) if args.path else example_model())
    try:
        return int(app.exec())
    finally:
        watcher.uninstall()


if __name__ == "__main__":
    raise SystemExit(main())
