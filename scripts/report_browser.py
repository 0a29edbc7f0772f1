"""Open a Workbench HTML report in headless Chromium (QtWebEngine) with the network cut off.

Every request the page makes passes a ``QWebEngineUrlRequestInterceptor`` that records it and
blocks it unless it is a ``data:`` / ``about:`` URL or the report file itself; the test of the
report (tests/qt/test_report_browser.py) asserts that nothing was blocked. Run as a script it
writes a screenshot of the page:

    QT_QPA_PLATFORM=offscreen QTWEBENGINE_CHROMIUM_FLAGS=--no-sandbox \\
        python scripts/report_browser.py report.html docs/report.png --height 2400
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from PySide6.QtCore import QEventLoop, Qt, QTimer, QUrl
from PySide6.QtWebEngineCore import (
    QWebEnginePage,
    QWebEngineProfile,
    QWebEngineSettings,
    QWebEngineUrlRequestInterceptor,
)
from PySide6.QtWebEngineWidgets import QWebEngineView
from PySide6.QtWidgets import QApplication


class Recorder(QWebEngineUrlRequestInterceptor):
    """Records every request URL; blocks (and lists in ``blocked``) all but data:, about: and ``allowed``."""

    def __init__(self, allowed: str, parent=None):
        super().__init__(parent)
        self.allowed = allowed
        self.seen: list[str] = []
        self.blocked: list[str] = []

    def interceptRequest(self, info) -> None:  # noqa: N802 - Qt override
        url = info.requestUrl()
        text = url.toString()
        self.seen.append(text)
        if url.scheme() in ("data", "about") or (url.isLocalFile() and url.toLocalFile() == self.allowed):
            return
        self.blocked.append(text)
        info.block(True)


def open_report(path: str | Path, *, width: int = 1280, height: int = 900, timeout_ms: int = 30_000):
    """Load ``path`` in an off-the-record QWebEngineView; returns ``(view, recorder, loaded_ok)``."""
    path = Path(path).resolve()
    view = QWebEngineView()
    profile = QWebEngineProfile(view)  # off the record: no cache, no cookies on disk
    recorder = Recorder(str(path), profile)
    profile.setUrlRequestInterceptor(recorder)
    page = QWebEnginePage(profile, view)
    # a file:// page may not reach remote URLs by default; let every attempt reach the interceptor,
    # which records and blocks it (so a leak is seen, not silently dropped before it)
    page.settings().setAttribute(QWebEngineSettings.WebAttribute.LocalContentCanAccessRemoteUrls, True)
    view.setPage(page)
    view.resize(width, height)
    loop = QEventLoop()
    result: list[bool] = []
    page.loadFinished.connect(lambda ok: (result.append(ok), loop.quit()))
    QTimer.singleShot(timeout_ms, loop.quit)
    view.load(QUrl.fromLocalFile(str(path)))
    view.show()
    loop.exec()
    view._keep = (profile, recorder, page)  # the wrappers live as long as the view
    return view, recorder, bool(result and result[0])


def run_js(view, script: str, timeout_ms: int = 10_000):
    """The value of ``script`` evaluated in the page (None on timeout)."""
    loop = QEventLoop()
    out: list = []
    view.page().runJavaScript(script, 0, lambda value: (out.append(value), loop.quit()))
    QTimer.singleShot(timeout_ms, loop.quit)
    loop.exec()
    return out[0] if out else None


def settle(ms: int) -> None:
    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


#: JavaScript run in the page: section ids, every src/href in the DOM, images decoded.
PAGE_FACTS = """JSON.stringify({
  sections: Array.from(document.querySelectorAll('section[id]')).map(s => s.id),
  refs: Array.from(document.querySelectorAll('[src],[href]')).map(e => e.getAttribute('src') || e.getAttribute('href')),
  images: Array.from(document.images).map(i => i.complete && i.naturalWidth > 0),
  height: document.documentElement.scrollHeight
})"""


def inspect_report(path: str | Path, *, png: str | None = None, width: int = 1280, height: int = 2400,
                   scale: float = 0.6) -> dict:
    """Load ``path``, read :data:`PAGE_FACTS`, optionally save a screenshot of its top ``height`` pixels.

    Returns ``{"loaded", "seen", "blocked", "sections", "refs", "images", "height"}``.
    """
    app = QApplication.instance() or QApplication(sys.argv[:1])
    view, recorder, ok = open_report(path, width=width, height=height)
    settle(1500)  # images decode after loadFinished
    facts = json.loads(run_js(view, PAGE_FACTS) or "{}")
    if png:
        image = view.grab().toImage()
        if scale != 1.0:
            image = image.scaledToWidth(int(image.width() * scale), Qt.TransformationMode.SmoothTransformation)
        image.save(png)
    view.close()
    view.deleteLater()
    app.processEvents()
    return {"loaded": ok, "seen": recorder.seen, "blocked": recorder.blocked, **facts}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("report")
    p.add_argument("png", nargs="?", help="write a screenshot here")
    p.add_argument("--width", type=int, default=1280)
    p.add_argument("--height", type=int, default=2400, help="pixels of the page to capture from the top")
    p.add_argument("--scale", type=float, default=0.6, help="resize factor of the saved PNG")
    p.add_argument("--json", action="store_true", help="print what the page did as JSON")
    args = p.parse_args(argv)
    facts = inspect_report(args.report, png=args.png, width=args.width, height=args.height, scale=args.scale)
    if args.json:
        print(json.dumps(facts))
    elif facts["blocked"] or not facts["loaded"]:
        print(f"error: loaded={facts['loaded']}, blocked requests: {facts['blocked']}", file=sys.stderr)
        return 2
    else:
        print(f"wrote {args.png}; {len(facts['seen'])} requests, none blocked; sections {facts['sections']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
