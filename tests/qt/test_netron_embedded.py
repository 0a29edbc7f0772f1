"""The embedded Netron view with QtWebEngine installed (PySide6-Addons is in the ``app`` extra): the
page loads in the window, follows the open model, and "Open in browser" stays the fallback."""

from __future__ import annotations

import urllib.request

import PySide6.QtWebEngineWidgets  # noqa: F401 - the app extra installs it; the view must embed
from bundled_example import EXAMPLE_MODEL
from PySide6.QtGui import QDesktopServices


def _page(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as resp:
        return resp.read().decode("utf-8", "replace")


def _shown_file(qtbot, view, wanted: str = "") -> str:
    """The model file named by the page loaded in the embedded view (netron's ``file`` meta tag)."""
    got: list = []
    script = "(document.querySelector('meta[name=\"file\"]') || {content: ''}).content"

    def probe() -> bool:
        view._web.page().runJavaScript(script, 0, got.append)
        return bool(got and got[-1] and (not wanted or got[-1] == wanted))

    qtbot.waitUntil(probe, timeout=540_000)
    return got[-1]


def test_embedded_netron_follows_the_open_model_and_keeps_the_browser_fallback(qtbot, window, open_file,
                                                                              corpus, monkeypatch):
    open_file(window, EXAMPLE_MODEL)
    url = window.open_in_netron()
    view = window.netron
    assert view.embedded and window.tabs.currentWidget() is view
    assert _shown_file(qtbot, view) == "/data/digits_cnn.onnx"  # the page runs inside the window
    assert view._web.url().toString() == url
    assert '<meta name="file" content="/data/digits_cnn.onnx">' in _page(url)

    other = corpus / "digits_mlp" / "model_opset17.onnx"
    with qtbot.waitSignal(view.served, timeout=300_000) as served:
        open_file(window, other)
    new_url = served.args[0]
    assert view._web.url().toString() == new_url == view.url()
    assert _shown_file(qtbot, view, "/data/model_opset17.onnx") == "/data/model_opset17.onnx"
    assert '<meta name="file" content="/data/model_opset17.onnx">' in _page(new_url)

    opened = []
    monkeypatch.setattr(QDesktopServices, "openUrl", staticmethod(lambda u: opened.append(u.toString()) or True))
    assert view.open_in_browser() and opened == [new_url]
