"""``modelOpened`` is emitted once the open has ended: a script's handler that compares the model it announces
(``compare_with``, or starts any job) failed with "Another job is running; ... was not compared." because the
signal was emitted from the open job's success handler, the job still running."""

from __future__ import annotations

from pathlib import Path

from bundled_example import EXAMPLE

from workbench.core.errors import WorkbenchError


def test_compare_from_model_opened_runs(qtbot, window, example_qdq_file):
    win = window
    refused: list[str] = []
    opened: list[str] = []

    def compare(path: str) -> None:
        opened.append(path)
        try:
            win.compare_with(example_qdq_file)
        except WorkbenchError as exc:
            refused.append(exc.message)

    win.modelOpened.connect(compare)
    tabs: list = []
    win.diffReady.connect(tabs.append)
    with qtbot.waitSignal(win.modelOpened, timeout=300_000):
        win.open_path(EXAMPLE / "digits_cnn.onnx")
    assert opened == [str(EXAMPLE / "digits_cnn.onnx")]
    assert refused == []  # it was "Another job is running; digits_cnn.qdq.onnx was not compared."
    qtbot.waitUntil(lambda: bool(tabs), timeout=540_000)
    tab = tabs[0]
    assert tab.path == Path(example_qdq_file) and tab.float_name == "digits_cnn.onnx"
    assert tab is win.tabs.currentWidget()
    assert win.doc.model_path == EXAMPLE / "digits_cnn.onnx"
    qtbot.waitUntil(lambda: not win.canvas.opening(), timeout=300_000)


def test_model_opened_once_per_open(qtbot, window, open_file):
    """Emitted once for each open, after it ended (the window idle: another open may start from the handler)."""
    win = window
    states: list[tuple[str, bool]] = []
    win.modelOpened.connect(lambda p: states.append((Path(p).name, win._open_job is None)))
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    assert states == [("digits_cnn.onnx", True)]
    win.start_new_project()  # loads no file: emitted at once
    assert states == [("digits_cnn.onnx", True), ("digits_cnn.onnx", True)]
