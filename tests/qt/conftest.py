"""Fixtures of the app tests: isolated QSettings, the main window, the unsaved-changes prompt, and
a leak check.

Every test fails if it leaves a background job, a worker thread or a child process running
(:func:`no_leaked_threads` is autouse for this folder); its teardown then cancels and kills them,
so one failing test cannot fail the teardown of the tests after it.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time

import pytest

pytest.importorskip("PySide6")

from bundled_example import EXAMPLE  # noqa: E402
from PySide6.QtCore import QSettings  # noqa: E402

from workbench.qt import workers  # noqa: E402
from workbench.qt.workers import live_jobs  # noqa: E402


@pytest.fixture
def make_canvas(qtbot, tmp_path):
    """``make_canvas(width, height, **options)``: a shown GraphCanvas (``options`` such as ``groups``
    go to its constructor) with its layout cache in this test's folder; every canvas made is shut
    down (its layout process stopped) at teardown."""
    from workbench.qt.canvas import GraphCanvas

    made = []

    def make(width: int = 900, height: int = 700, **options):
        view = GraphCanvas(layout_cache_dir=tmp_path / "layout", **options)
        qtbot.addWidget(view)
        view.resize(width, height)
        view.show()
        made.append(view)
        return view

    yield make
    for view in made:
        view.shutdown()


@pytest.fixture
def tall(qtbot, make_canvas):
    """A 900 x 700 canvas showing ``grid_model(1, TALL_ROWS)`` placed at ``tall_positions()`` (graph_models: a
    chain of 2,000 nodes 500 scene units apart), laid out, not fitted."""
    from graph_models import TALL_ROWS, grid_model, tall_positions

    view = make_canvas(900, 700, groups=False)
    with qtbot.waitSignal(view.layoutReady, timeout=300_000):
        view.set_model(grid_model(1, TALL_ROWS), positions=tall_positions())
    return view


@pytest.fixture
def open_blocks(qtbot, make_canvas):
    """``open_blocks(blocks, per_block)``: a 900 x 700 canvas of ``blocks_model(blocks, per_block)`` (graph_models:
    a chain of name scopes of Relu nodes) laid out at depth 0 with every scope opened."""
    from graph_models import blocks_model

    def make(blocks: int, per_block: int):
        view = make_canvas(900, 700)
        with qtbot.waitSignal(view.layoutReady, timeout=300_000):
            view.set_model(blocks_model(blocks, per_block), depth=0)
        view.expand_all()
        return view

    return make


def _abort_run(signum, frame) -> None:
    """Ctrl-C during an app test: end the run at once. Inside Qt's event loop Python's
    KeyboardInterrupt is raised in a slot, which Qt prints and goes on from, so the test used to wait
    out its signal timeout (minutes) and the run went on; the default action ends the process (its job
    processes get the terminal's SIGINT too)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)


@pytest.fixture(scope="session", autouse=True)
def interruptible(qapp):
    """Ctrl-C ends a run of the app tests within a fraction of a second (:func:`_abort_run`): the
    handler is installed for the session, and a timer lets Python run its signal handlers while Qt
    waits in C++."""
    from PySide6.QtCore import QTimer

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _abort_run)
    tick = QTimer()
    tick.timeout.connect(lambda: None)
    tick.start(200)
    yield
    tick.stop()
    signal.signal(signal.SIGINT, previous)


def delete_scheduled_widgets(app, rounds: int = 5) -> None:
    """Run the deletions scheduled with ``deleteLater`` (a few rounds: a deleted widget may schedule more)."""
    from PySide6.QtCore import QCoreApplication, QEvent

    for _ in range(rounds):
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        app.processEvents()


@pytest.fixture(scope="session", autouse=True)
def widgets_deleted_before_exit(qapp):
    """At the end of the run, delete the widgets pytest-qt closed after the last test. It closes each widget a test
    added and calls ``deleteLater``, which hands the object to Qt (PySide's own exit cleanup then skips it); the next
    test's event loop runs the deletion, but after the last test no loop runs. A window left alive that way kept its
    Netron tab's QWebEnginePage until the QApplication was destroyed, which releases every web profile first:
    "Release of profile requested but WebEnginePage still not deleted", then a segfault (exit 139 after all passed)."""
    yield
    delete_scheduled_widgets(qapp)


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path_factory):
    """QSettings (recent files) go to a temporary folder, not the user's config."""
    folder = str(tmp_path_factory.mktemp("qsettings"))
    for fmt in (QSettings.Format.NativeFormat, QSettings.Format.IniFormat):
        QSettings.setPath(fmt, QSettings.Scope.UserScope, folder)
    yield


def _leaks(jobs_before: set, procs_before: set) -> list[str]:
    out = [f"job {j.title!r}" for j in live_jobs() if j not in jobs_before]
    out += [f"process {p.name}" for p in multiprocessing.active_children() if p.pid not in procs_before]
    return out


def _stop_leftovers(jobs_before: set, procs_before: set) -> None:
    """Cancel this test's jobs still running and kill its child processes, so a failing test
    cannot break the tests after it; jobs that still do not finish are forgotten."""
    for job in live_jobs():
        if job not in jobs_before:
            job.cancel()
    _pump(lambda: not _leaks(jobs_before, procs_before), seconds=10.0)
    for proc in multiprocessing.active_children():
        if proc.pid not in procs_before:
            proc.kill()
            proc.join(5)
    _pump(lambda: not _leaks(jobs_before, procs_before), seconds=10.0)
    for job in live_jobs():
        if job not in jobs_before:
            workers._LIVE.discard(job)


def _pump(done, seconds: float) -> None:
    """Process Qt events until ``done()`` or ``seconds`` (a bound on waiting, not a timing check)."""
    deadline = time.monotonic() + seconds
    while not done() and time.monotonic() < deadline:
        app = _app()
        if app is not None:
            app.processEvents()
        time.sleep(0.02)


@pytest.fixture(autouse=True)
def no_leaked_threads(request, gui_gc):
    """Fail the test when background jobs, threads or child processes outlive it; then stop them,
    so the next test starts clean (a leak is reported once, by the test that caused it)."""
    before = {t.ident for t in threading.enumerate()}
    jobs_before = set(live_jobs())
    procs_before = {p.pid for p in multiprocessing.active_children()}

    def leaks() -> list[str]:
        extra = [t for t in threading.enumerate() if t.ident not in before and t.is_alive() and not t.daemon]
        return _leaks(jobs_before, procs_before) + [f"thread {t.name}" for t in extra]

    yield
    # a loaded machine may need a while to join a finished job's thread: wait generously
    _pump(lambda: not leaks(), seconds=120.0)
    found = leaks()
    if found:
        _stop_leftovers(jobs_before, procs_before)
        pytest.fail(f"{request.node.name} leaked: {', '.join(found)}")


@pytest.fixture
def gui_gc(qapp):
    """Cyclic garbage collected on the GUI thread only while the test and its threads run (as the
    main window does, :mod:`workbench.qt.gui_gc`), also in tests without a window: windows of the
    tests before leave cycles holding Qt objects owned by Python (pyqtgraph's menus), and a
    collection run by a worker thread destroyed them there (a segfault while ppocrv4_rec loaded)."""
    from workbench.qt.gui_gc import GuiThreadCollector

    collector = GuiThreadCollector()
    collector.start()
    yield collector
    collector.stop()


def _app():
    from PySide6.QtWidgets import QApplication

    return QApplication.instance()


class Dialogs(list):
    """Texts of the message boxes shown during a test (they never block)."""

    def texts(self) -> str:
        return "\n".join(f"{title}: {text}" for _kind, title, text in self)


@pytest.fixture(autouse=True)
def dialogs(monkeypatch):
    """Record QMessageBox calls instead of showing them; a test that expects none fails on one.

    Tests that expect dialogs call ``dialogs.clear()`` after checking them.
    """
    from PySide6.QtWidgets import QMessageBox

    shown = Dialogs()
    for kind in ("critical", "warning", "information", "about"):
        def fake(parent, title, text, *args, _kind=kind, **kwargs):
            shown.append((_kind, title, text))
            return QMessageBox.StandardButton.Ok
        monkeypatch.setattr(QMessageBox, kind, staticmethod(fake))
    yield shown
    assert not [d for d in shown if d[0] in ("critical", "warning")], f"unexpected dialogs: {shown.texts()}"


class Prompts(list):
    """The unsaved-changes prompts shown during a test ((name, doing) each); ``answer`` is what the
    fake prompt replies ("save", "discard" or "cancel"; "discard" unless a test sets it)."""

    answer = "discard"


@pytest.fixture(autouse=True)
def save_prompts(monkeypatch):
    """Record the unsaved-changes prompt (Save / Discard / Cancel) instead of showing it."""
    from workbench.qt import app_window

    prompts = Prompts()

    def fake(parent, name, doing):
        prompts.append((name, doing))
        return prompts.answer

    monkeypatch.setattr(app_window, "ask_save_changes", fake)
    yield prompts


@pytest.fixture(autouse=True)
def stop_prompts(monkeypatch):
    """Record the prompt of a close while a job runs (Stop and Close / Cancel) instead of showing it: (title,
    progress) each; ``answer`` "stop" (close, the job cancelled: a window closed at teardown) or "keep"."""
    from workbench.qt import app_window

    prompts = Prompts()
    prompts.answer = "stop"

    def fake(parent, title, progress="", *, writes=False):
        prompts.append((title, progress))
        return prompts.answer

    monkeypatch.setattr(app_window, "ask_stop_job", fake)
    yield prompts


@pytest.fixture(autouse=True)
def autosave_folder(tmp_path_factory, monkeypatch):
    """The app's autosaves go to a folder of this test, not the user's data dir."""
    from workbench.qt import autosave

    folder = tmp_path_factory.mktemp("autosave")
    monkeypatch.setattr(autosave, "autosave_dir", lambda: folder)
    return folder


@pytest.fixture(autouse=True)
def restore_prompts(monkeypatch):
    """Record the Restore / Discard prompt of an autosave instead of showing it (``answer``:
    "restore" or "discard"; "discard" unless a test sets it)."""
    from workbench.qt import autosave

    prompts = Prompts()

    def fake(parent, name, saved_at):
        prompts.append((name, saved_at))
        return prompts.answer

    monkeypatch.setattr(autosave, "ask_restore", fake)
    yield prompts


@pytest.fixture
def window(qtbot, save_prompts):
    """A shown main window; closed (jobs cancelled and joined) at teardown."""
    from workbench.qt.app_window import MainWindow

    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    yield win
    save_prompts.answer = "discard"  # unsaved edits never keep the window open at teardown
    win.close()


@pytest.fixture
def latency_pays(monkeypatch):
    """The app's jobs run in this process with every quantized model measured at half its float model's latency
    (:func:`latency_fakes.quantized_faster`): for tests of what a calibration shows on a small model (digits_cnn),
    which the latency check would keep all float where it measures slower quantized (under load, or on a CPU
    where quantization does not pay at that size). Use it with ``pytestmark = pytest.mark.usefixtures(...)``."""
    from latency_fakes import quantized_faster

    quantized_faster(monkeypatch)


@pytest.fixture
def stop_leftovers():
    """``stop_leftovers()``: what the leak check does after a leak (cancel and kill this test's jobs)."""
    jobs_before = set(live_jobs())
    procs_before = {p.pid for p in multiprocessing.active_children()}
    return lambda: _stop_leftovers(jobs_before, procs_before)


@pytest.fixture
def open_file(qtbot):
    """``open_file(win, path)``: open a model or project and wait until it is shown and laid out."""

    def _open(win, path, timeout: int = 300_000) -> None:
        with qtbot.waitSignals([win.modelOpened, win.canvas.layoutReady], timeout=timeout):
            win.open_path(path)

    return _open


@pytest.fixture
def compare_in_app(qtbot, open_file):
    """``compare_in_app(win, float_path, calib, quantized, samples)``: open the float model with that
    calibration data, run View > Compare against ``quantized`` and return the diff tab once shown."""

    def _compare(win, float_path, calib, quantized, samples: int):
        open_file(win, float_path)
        win.calibration.set_data_spec({"kind": "npz", "path": str(calib)}, samples)
        win._on_spec_changed()
        with qtbot.waitSignal(win.diffReady, timeout=540_000) as sig:
            win.compare_with(quantized)
        return sig.args[0]

    return _compare


@pytest.fixture(scope="session")
def example_qdq_file(tmp_path_factory):
    """Our QDQ export (cpu-u8s8, 16 calibration rows) of the bundled digits_cnn example."""
    from workbench.core import api

    out = tmp_path_factory.mktemp("example_qdq") / "digits_cnn.qdq.onnx"
    model = api.open_model(EXAMPLE / "digits_cnn.onnx")
    api.export(api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(EXAMPLE / "digits_cnn_calib.npz"),
                            samples=16), out)
    return out


@pytest.fixture(scope="session")
def ort_qdq_file(tmp_path_factory):
    """onnxruntime's quantize_static (QDQ, uint8 activations, int8 weights) of the digits_cnn example."""
    import numpy as np
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    rows = np.load(EXAMPLE / "digits_cnn_calib.npz")
    name = rows.files[0]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter([{name: rows[name][i:i + 1]} for i in range(8)])

        def get_next(self):
            return next(self.feeds, None)

    out = tmp_path_factory.mktemp("ort_qdq") / "digits_cnn.ort_qdq.onnx"
    quantize_static(str(EXAMPLE / "digits_cnn.onnx"), str(out), Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    return out


@pytest.fixture
def fused_units(qtbot, window, open_file, corpus, monkeypatch):
    """``window`` with ppocr_mobile_v2_cls calibrated (cpu-u8s8, 8 calibration rows, the bare preset; every latency
    measurement says quantized pays, so no unit is kept float by a timing on a loaded machine); returns
    ``check(figures)``, for a canvas coloured by a per-unit figure (``figures``: unit name -> dB; missing or NaN:
    none). ``check`` asserts that every node of each unit with a figure and two nodes or more takes the colour of
    the figure (rounded to 0.25 dB, capped at the bit-exact 100 dB), that the Clips are coloured and the
    HardSigmoids (no figure of their own) grey, and that the legend ends in grey's row and a note saying what grey
    is; it returns the number of nodes after the first of such units (the ones only the first node's colour
    missed)."""
    from latency_fakes import quantized_faster
    from test_app_stale_results import calibrated

    from workbench.qt.canvas.colors import NO_VALUE, error_color
    from workbench.qt.canvas.legend import legend_entries
    from workbench.qt.error_view import INF_SQNR_DB

    quantized_faster(monkeypatch)
    calibrated(qtbot, window, open_file, corpus / "ppocr_mobile_v2_cls/model.onnx", samples=8, choose=False)

    def check(figures: dict[str, float]) -> int:
        canvas = window.canvas
        ops = {n.name: n.op_type for n in window.doc.model.proto.graph.node}
        members = 0
        for name, unit in window.doc.plan.units.items():
            value = figures.get(name, float("nan"))
            if value != value or len(unit.nodes) < 2:
                continue
            want = error_color(round(min(value, INF_SQNR_DB) * 4) / 4)
            for node in unit.nodes:
                assert canvas.node_color(node) == want, (name, node, ops[node], value)
            members += len(unit.nodes) - 1
        clips = [n for n in canvas.node_names() if ops[n] == "Clip"]
        assert clips and all(canvas.node_color(n) != NO_VALUE for n in clips)
        hard = [n for n in canvas.node_names() if ops[n] == "HardSigmoid"]
        assert hard and all(canvas.node_color(n) == NO_VALUE for n in hard)
        _title, rows, notes = legend_entries(canvas)
        assert rows[-1] == ("no value", NO_VALUE)
        assert any(n.startswith("no value (grey): float nodes") and "another unit's input" in n for n in notes)
        return members

    return check


@pytest.fixture
def nudenet_qdq(tmp_path, corpus):
    """nudenet_320n (the corpus) quantized with cpu-u8s8 on 8 calibration rows, as a QDQ file in ``tmp_path``: a
    graph far taller than a tab, with groups, edge badges and weight tags."""
    from workbench.core import api

    folder = corpus / "nudenet_320n"
    out = tmp_path / "nudenet_320n.qdq.onnx"
    model = api.open_model(folder / "model.onnx")
    api.export(api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(folder / "calib.npz"), samples=8), out)
    return out
