"""Netron view of a model: netron's own HTTP server on 127.0.0.1, embedded or in the browser.

The ``netron`` package serves its web app and the model on a local port (``netron.serve``). When
``PySide6.QtWebEngineWidgets`` (PySide6-Addons) imports, the page is embedded in a QWebEngineView
whose request interceptor blocks every request that does not go to the loopback interface (the
page would otherwise ask a geo-IP service and an analytics endpoint), and netron's cookie consent
is set before the page runs. Without WebEngine (the default install) the view shows the address
and an "Open in browser" button. The server stops when the view closes or is destroyed, and when the
top-level window holding it closes; a close the window refuses (Cancel to an unsaved-changes prompt)
leaves it running.

Netron's page refuses to open models about 180 days after the package was built; the view warns
when the installed netron is that old (``pip install -U netron``).
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import re
import threading
from pathlib import Path
from urllib.parse import urlsplit

import onnx
from PySide6.QtCore import QEvent, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from workbench.core.errors import ModelError

log = logging.getLogger(__name__)

LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}
NETRON_MAX_AGE_DAYS = 180
_serve_lock = threading.Lock()


def is_loopback_url(url: str) -> bool:
    """True for URLs the embedded page may load: http(s)/ws(s) to the loopback host, or inline
    schemes (data, blob, about, qrc). Everything else is blocked by the interceptor."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme in ("data", "blob", "about", "qrc"):
        return True
    return scheme in ("http", "https", "ws", "wss") and (parts.hostname or "").lower() in LOOPBACK_HOSTS


def netron_build_age_days(today: _dt.date | None = None) -> float | None:
    """Days since the installed netron's build date (``<meta name="date">`` of its index.html), or None."""
    try:
        import netron

        html = (Path(netron.__file__).parent / "index.html").read_text(encoding="utf-8")
    except (ImportError, OSError):
        return None
    m = re.search(r'<meta name="date" content="(\d{4}-\d{2}-\d{2})', html)
    if not m:
        return None
    built = _dt.date.fromisoformat(m.group(1))
    return float(((today or _dt.date.today()) - built).days)


class NetronServer:
    """netron's server for one model, bound to 127.0.0.1 on a port the OS picks (free by construction)."""

    def __init__(self) -> None:
        self.address: tuple[str, int] | None = None

    @property
    def url(self) -> str | None:
        return f"http://{self.address[0]}:{self.address[1]}/" if self.address else None

    @property
    def running(self) -> bool:
        import netron

        return self.address is not None and netron.status(self.address)

    def start(self, path: str | Path | None = None, *, data: bytes | None = None,
              name: str = "model.onnx") -> str:
        """Serve the model file at ``path``, or the bytes ``data`` under the file name ``name``.

        Returns the page URL. A running server is stopped first.

        Raises
        ------
        ModelError
            ``path`` does not exist (and no ``data`` was given).
        """
        import netron

        self.stop()
        if data is None:
            if path is None or not Path(path).is_file():
                raise ModelError(f"{path}: no such model file to show in Netron.", hint="Check the path.")
            file, payload = str(Path(path).resolve()), None
        else:
            file, payload = name, bytearray(data)  # bytearray: netron serves it as the file's bytes
        with _serve_lock:
            root = logging.getLogger()
            guard = logging.NullHandler()
            if not root.handlers:  # netron.serve calls logging.basicConfig() when root has no handler
                root.addHandler(guard)
            try:
                self.address = tuple(netron.serve(file, payload, address=("127.0.0.1", 0), browse=False))
            finally:
                root.removeHandler(guard)
        log.info("netron serves %s at %s", file, self.url)
        return self.url

    def stop(self) -> None:
        """Stop the server (no-op when not running)."""
        if self.address is not None:
            import netron

            netron.stop(self.address)
            self.address = None


def prepare_webengine() -> bool:
    """Call before creating the QApplication: import QtWebEngine if installed (it must be imported
    first) and, as root, pass ``--no-sandbox`` to Chromium. Returns whether WebEngine is available."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        flags = os.environ.get("QTWEBENGINE_CHROMIUM_FLAGS", "")
        if "--no-sandbox" not in flags:
            os.environ["QTWEBENGINE_CHROMIUM_FLAGS"] = (flags + " --no-sandbox").strip()
    try:
        import PySide6.QtWebEngineWidgets  # noqa: F401
    except ImportError:
        return False
    return True


def _make_web_view(parent: QWidget):
    """A QWebEngineView with a loopback-only interceptor and netron's consent preset, or None."""
    try:
        from PySide6.QtWebEngineCore import (
            QWebEnginePage,
            QWebEngineProfile,
            QWebEngineScript,
            QWebEngineUrlRequestInterceptor,
        )
        from PySide6.QtWebEngineWidgets import QWebEngineView
    except ImportError:
        return None

    class LoopbackOnly(QWebEngineUrlRequestInterceptor):
        def interceptRequest(self, info) -> None:  # noqa: N802 - Qt override
            url = info.requestUrl().toString()
            if not is_loopback_url(url):
                log.debug("netron view: blocked %s", url)
                info.block(True)

    view = QWebEngineView(parent)
    # off the record (nothing persists). Parented to ``parent`` and created after the view, so Qt
    # deletes the view and its page before the profile ("Release of profile requested but
    # WebEnginePage still not deleted" otherwise).
    profile = QWebEngineProfile(parent)
    interceptor = LoopbackOnly(profile)
    profile.setUrlRequestInterceptor(interceptor)
    script = QWebEngineScript()
    script.setName("netron-consent")
    script.setInjectionPoint(QWebEngineScript.InjectionPoint.DocumentCreation)
    script.setWorldId(QWebEngineScript.ScriptWorldId.MainWorld)
    # netron asks for consent unless a "consent" cookie exists; it keeps settings in localStorage
    script.setSourceCode(
        "document.cookie = 'consent=' + Date.now() + ';path=/;max-age=2592000';"
        "try { localStorage.setItem('consent', JSON.stringify(Date.now())); } catch (e) {}")
    profile.scripts().insert(script)
    view.setPage(QWebEnginePage(profile, view))
    view._workbench_keep = (profile, interceptor)  # keep the Python wrappers alive with the view
    return view


class NetronView(QWidget):
    """Shows a model in Netron. ``use_webengine=None`` embeds when QtWebEngine is installed."""

    served = Signal(str)  # page URL, after each show_model / show_proto

    def __init__(self, parent: QWidget | None = None, *, use_webengine: bool | None = None):
        super().__init__(parent)
        self.server = NetronServer()
        self.destroyed.connect(self.server.stop)
        self._watched: QWidget | None = None  # top-level window whose accepted close stops the server
        self._delivering = False  # the filter is handing the watched window its Close (eventFilter)
        self._status = QLabel("No model shown.")
        self._status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._browser_button = QPushButton("Open in browser")
        self._browser_button.setEnabled(False)
        self._browser_button.clicked.connect(self.open_in_browser)
        bar = QHBoxLayout()
        bar.addWidget(self._status, 1)
        bar.addWidget(self._browser_button)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        self._web = _make_web_view(self) if use_webengine is not False else None
        if self._web is not None:
            layout.addWidget(self._web, 1)
        else:
            self._hint = QLabel(
                "The embedded Netron view needs QtWebEngine (pip install PySide6-Addons). "
                "The model is served on this computer only; use \u201cOpen in browser\u201d.")
            self._hint.setWordWrap(True)
            layout.addWidget(self._hint, 1)
        age = netron_build_age_days()
        if age is not None and age > NETRON_MAX_AGE_DAYS - 10:
            warn = QLabel(f"The installed netron was built {age:.0f} days ago; its page refuses to open "
                          "models after about 180 days. Update it: pip install -U netron")
            warn.setWordWrap(True)
            warn.setStyleSheet("color: #b00020;")
            layout.addWidget(warn)

    @property
    def embedded(self) -> bool:
        return self._web is not None

    def url(self) -> str | None:
        return self.server.url

    def show_model(self, path: str | Path) -> str:
        """Serve and show the model file at ``path``; returns the local URL (raises ModelError if missing)."""
        return self._shown(self.server.start(path))

    def show_proto(self, proto: onnx.ModelProto, name: str = "model.onnx") -> str:
        """Serve and show an in-memory model (e.g. the exported QDQ model before it is saved)."""
        return self._shown(self.server.start(data=proto.SerializeToString(), name=name))

    def _shown(self, url: str) -> str:
        self._status.setText(f"Netron: {url}")
        self._browser_button.setEnabled(True)
        if self._web is not None:
            self._web.setUrl(QUrl(url))
        self.served.emit(url)
        return url

    def open_in_browser(self) -> bool:
        """Open the served page in the system browser (its page may contact netron's analytics)."""
        return bool(self.server.url) and QDesktopServices.openUrl(QUrl(self.server.url))

    def stop(self) -> None:
        self.server.stop()
        self._status.setText("Netron stopped.")
        self._browser_button.setEnabled(False)

    def closeEvent(self, event) -> None:
        self.stop()
        super().closeEvent(event)

    def showEvent(self, event) -> None:
        # Closing the main window does not close (or yet destroy) its docked children: watch it.
        top = self.window()
        if top is not self and top is not self._watched:
            if self._watched is not None:
                self._watched.removeEventFilter(self)
            top.installEventFilter(self)
            self._watched = top
        super().showEvent(event)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 - Qt override
        # The window's closeEvent decides whether a Close closes it (Cancel to the unsaved-changes prompt, asked
        # in a modal dialog, refuses it). The filter hands the Close to the window itself and reads the decision
        # off the event: an accepted Close stops the server before close() returns, a refused one leaves it
        # serving, and a later hide() of the window is no close. Deciding here, not by watching for the Hide
        # that follows an accepted Close, needs no timers (those depended on how soon the loop ran them).
        if obj is self._watched and event.type() == QEvent.Type.Close and not self._delivering:
            self._delivering = True
            try:
                obj.event(event)
            finally:
                self._delivering = False
            if event.isAccepted():
                self.stop()
            return True  # delivered: Qt reads isAccepted() off the event as if the window had received it
        return False
