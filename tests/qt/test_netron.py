"""Netron view: netron's server on 127.0.0.1 only, a free port, serves the model, stops on close."""

from __future__ import annotations

import datetime as dt
import socket
import time
import urllib.error
import urllib.request

import onnx
import pytest
from bundled_example import EXAMPLE_MODEL

pytest.importorskip("PySide6")
netron = pytest.importorskip("netron")

from PySide6.QtCore import QTimer  # noqa: E402
from PySide6.QtGui import QDesktopServices  # noqa: E402
from PySide6.QtWidgets import QDialog, QVBoxLayout, QWidget  # noqa: E402

from workbench.core.errors import ModelError  # noqa: E402
from workbench.qt.netron_view import NetronServer, NetronView, is_loopback_url, netron_build_age_days  # noqa: E402


def get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=60) as resp:
        return resp.status, resp.read()


def refused(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=1).close()
    except OSError:
        return True
    return False


def wait_stopped(port: int) -> bool:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if refused("127.0.0.1", port):
            return True
        time.sleep(0.05)
    return False


def listen_addresses(port: int) -> set[str]:
    psutil = pytest.importorskip("psutil")
    try:
        conns = psutil.net_connections(kind="tcp")
    except psutil.AccessDenied:
        pytest.skip("cannot list sockets here")
    return {c.laddr.ip for c in conns if c.status == psutil.CONN_LISTEN and c.laddr.port == port}


def non_loopback_ip() -> str | None:
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # TEST-NET address: no packet is sent for UDP connect
            ip = s.getsockname()[0]
    except OSError:
        return None
    return None if ip.startswith("127.") else ip


def test_server_loopback_free_port_serves_model_and_stops():
    first, second = NetronServer(), NetronServer()
    try:
        url = first.start(EXAMPLE_MODEL)
        second.start(EXAMPLE_MODEL)
        host, port = first.address
        assert host == "127.0.0.1" and port > 0 and port != second.address[1]  # each gets its own free port
        assert url == f"http://127.0.0.1:{port}/" and first.running
        assert listen_addresses(port) == {"127.0.0.1"}
        ip = non_loopback_ip()
        if ip:
            assert refused(ip, port)
        status, page = get(url)
        assert status == 200 and b'<meta name="file" content="/data/digits_cnn.onnx">' in page
        status, body = get(f"{url}data/digits_cnn.onnx")
        assert status == 200 and body == EXAMPLE_MODEL.read_bytes()
        with pytest.raises(urllib.error.HTTPError) as err:
            get(f"{url}data/../../../etc/passwd")
        assert err.value.code == 404
    finally:
        first.stop()
        second.stop()
    assert wait_stopped(port) and not first.running and first.url is None


def test_server_serves_in_memory_bytes():
    proto = onnx.load(EXAMPLE_MODEL)
    server = NetronServer()
    try:
        url = server.start(data=proto.SerializeToString(), name="exported.onnx")
        status, body = get(f"{url}data/exported.onnx")
        assert status == 200 and onnx.load_from_string(body) == proto
    finally:
        server.stop()


def test_missing_file_is_a_model_error(tmp_path):
    with pytest.raises(ModelError, match="no such model file"):
        NetronServer().start(tmp_path / "missing.onnx")


def test_view_without_webengine_offers_browser_and_stops_on_close(qtbot, monkeypatch):
    opened = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url.toString()) or True)
    view = NetronView(use_webengine=False)
    qtbot.addWidget(view)
    view.show()
    assert not view.embedded and view.url() is None and not view.open_in_browser()
    with qtbot.waitSignal(view.served) as blocker:
        url = view.show_model(EXAMPLE_MODEL)
    assert blocker.args == [url] and get(url)[0] == 200
    assert view.open_in_browser() and opened == [url]
    port = view.server.address[1]
    view.close()
    assert wait_stopped(port) and view.url() is None


def test_view_replacing_the_model_stops_the_old_server(qtbot):
    view = NetronView(use_webengine=False)
    qtbot.addWidget(view)
    view.show_model(EXAMPLE_MODEL)
    old_port = view.server.address[1]
    view.show_proto(onnx.load(EXAMPLE_MODEL), name="again.onnx")
    assert wait_stopped(old_port)
    assert get(f"{view.url()}data/again.onnx")[0] == 200
    view.close()


def test_interceptor_policy_allows_only_loopback():
    assert is_loopback_url("http://127.0.0.1:20001/index.js")
    assert is_loopback_url("http://localhost:8080/data/m.onnx")
    assert is_loopback_url("http://[::1]:9000/")
    assert is_loopback_url("data:image/png;base64,AAAA") and is_loopback_url("blob:http://127.0.0.1/x")
    assert not is_loopback_url("https://ipinfo.io/json")
    assert not is_loopback_url("https://www.google-analytics.com/g/collect?v=2")
    assert not is_loopback_url("http://127.0.0.1.evil.example/")
    assert not is_loopback_url("ftp://127.0.0.1/")


def test_netron_age_is_read_from_its_build_date():
    age = netron_build_age_days()
    assert age is not None
    later = netron_build_age_days(dt.date.today() + dt.timedelta(days=10))
    assert later == age + 10


def test_view_docked_in_the_main_window_stops_when_the_window_closes(qtbot):
    """Closing the main window (not only the view) stops netron's server at once, before Qt or
    Python get round to destroying the view."""
    from PySide6.QtCore import Qt as _Qt
    from PySide6.QtWidgets import QDockWidget

    from workbench.qt.app_window import MainWindow

    win = MainWindow()
    qtbot.addWidget(win)
    dock = QDockWidget("Netron", win)
    view = NetronView(dock, use_webengine=False)
    dock.setWidget(view)
    win.addDockWidget(_Qt.DockWidgetArea.RightDockWidgetArea, dock)
    win.show()
    view.show_model(EXAMPLE_MODEL)
    port = view.server.address[1]
    assert get(view.url())[0] == 200
    win.close()
    assert wait_stopped(port) and view.url() is None


class _Asking(QWidget):
    """A top-level window that asks before it closes: ``answers`` pops one reply per close (True: close); with
    ``modal`` it first shows a modal dialog for 200 ms (its own event loop, as a message box runs)."""

    def __init__(self, answers: list[bool], modal: bool = False):
        super().__init__()
        self.answers, self.modal = answers, modal

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt override
        if self.modal:
            box = QDialog(self)
            QTimer.singleShot(200, box.accept)
            box.exec()
        if self.answers.pop(0):
            event.accept()
        else:
            event.ignore()


def _hosted(qtbot, top: QWidget) -> NetronView:
    view = NetronView(top, use_webengine=False)
    QVBoxLayout(top).addWidget(view)
    qtbot.addWidget(top)
    top.show()
    view.show_model(EXAMPLE_MODEL)
    return view


def test_view_in_a_window_that_refuses_to_close_keeps_serving(qtbot):
    """A refused close leaves the server running and the view usable; a later hide() of the window is no
    close; the accepted close stops the server before close() returns."""
    top = _Asking([False, True])
    view = _hosted(qtbot, top)
    url, port = view.url(), view.server.address[1]
    assert not top.close()
    qtbot.wait(50)
    assert top.isVisible() and view.server.running and view._browser_button.isEnabled()
    top.hide()
    assert view.server.running and get(url)[0] == 200
    top.show()
    assert top.close()
    assert wait_stopped(port) and view.url() is None and not view._browser_button.isEnabled()


def test_a_refused_close_then_an_immediate_hide_keeps_serving(qtbot):
    """The refusal is known when close() returns, not some event-loop turns later: a hide() right after a
    refused close (no turn of the loop between, as on a busy machine) is no close. It stopped the server
    while the view still waited for timers to forget the Close."""
    top = _Asking([False, True])
    view = _hosted(qtbot, top)
    url, port = view.url(), view.server.address[1]
    assert not top.close()
    top.hide()
    assert view.server.running and get(url)[0] == 200
    top.show()
    assert top.close()
    assert wait_stopped(port) and view.url() is None


def test_view_in_a_window_whose_close_asks_in_a_modal_dialog_stops_when_it_closes(qtbot):
    """The window asks in a modal dialog (200 ms, its own event loop): the close refused after it leaves the
    server running, the close accepted after it stops the server."""
    top = _Asking([False, True], modal=True)
    view = _hosted(qtbot, top)
    port = view.server.address[1]
    assert not top.close()
    qtbot.wait(300)
    assert view.server.running
    assert top.close()
    assert wait_stopped(port) and view.url() is None
