"""Cancel to the unsaved-changes prompt on quitting leaves the Netron tab serving. NetronView's filter on the
main window stopped the server on the window's Close event, before MainWindow.closeEvent asked: the window
and its Netron tab stayed open but showed "Netron stopped." with "Open in browser" disabled. The server
now stops once the close goes through."""

from __future__ import annotations

import socket
import time
import urllib.request

import PySide6.QtWebEngineWidgets  # noqa: F401 - the app extra installs it; the tab embeds the page
from bundled_example import EXAMPLE_MODEL


def _page(url: str) -> str:
    with urllib.request.urlopen(url, timeout=60) as resp:
        assert resp.status == 200
        return resp.read().decode("utf-8", "replace")


def _stopped(port: int) -> bool:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return True
        time.sleep(0.05)
    return False


def test_cancelled_close_keeps_netron_serving_and_an_accepted_close_stops_it(qtbot, window, open_file,
                                                                            save_prompts):
    open_file(window, EXAMPLE_MODEL)
    window.calibration.analysis_samples.setValue(8)  # a setting saved in the project: an unsaved edit
    url = window.open_in_netron()
    view = window.netron
    assert view.embedded and view.server.running and view._browser_button.isEnabled()
    port = view.server.address[1]

    save_prompts.answer = "cancel"
    assert not window.close()
    qtbot.wait(50)  # the event loop runs once the close is refused
    assert save_prompts == [("digits_cnn.onnx", "quitting")]
    assert window.isVisible() and window.netron is view and window.doc.modified
    assert view.server.running and view.url() == url
    assert view._browser_button.isEnabled() and view._status.text() == f"Netron: {url}"
    assert view._web.url().toString() == url
    assert '<meta name="file" content="/data/digits_cnn.onnx">' in _page(url)

    save_prompts.answer = "discard"
    assert window.close()
    assert not window.isVisible() and len(save_prompts) == 2
    assert _stopped(port) and view.url() is None
    assert not view._browser_button.isEnabled() and view._status.text() == "Netron stopped."
