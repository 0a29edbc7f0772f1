"""Ctrl+C in the terminal that started ``workbench`` closes the window as its close button does.

It raised KeyboardInterrupt in whatever slot ran next: ppocrv4_rec calibrating, Ctrl+C showed "Internal error:
KeyboardInterrupt ... This is a bug in Workbench", the traceback went to the log and the window stayed; the job
child, in the same process group, died of it too. Now the window is asked to close (a running job and unsaved
edits are asked about, as for the close button) and the job children ignore the signal.
"""

from __future__ import annotations

import os
import shutil
import signal

import psutil
from bundled_example import EXAMPLE
from latency_fakes import quantized_faster

from workbench.qt.commands import push_edit
from workbench.qt.interrupt import INTERRUPTED, close_on_interrupt
from workbench.qt.workers import ProcessJob


def _example(win, open_file, tmp_path) -> None:
    for name in ("digits_cnn.onnx", "digits_cnn_calib.npz"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    open_file(win, tmp_path / "digits_cnn.onnx")


def test_ctrl_c_asks_about_the_job_and_the_edits_then_closes(qtbot, window, open_file, tmp_path, monkeypatch,
                                                              stop_prompts, save_prompts):
    quantized_faster(monkeypatch)
    _example(window, open_file, tmp_path)
    edited = window.doc.recipe.model_copy(update={"exclude": ["/f/f.0/Conv"]})
    assert push_edit(window.doc, edited, "exclude the first Conv")
    said: list[str] = []
    watcher = close_on_interrupt(window, said.append)
    try:
        window.act_calibrate.trigger()
        job = window.runs.job
        # Stop, then Cancel at the unsaved-edits prompt: the window, its edit and the job stay
        save_prompts.answer = "cancel"
        os.kill(os.getpid(), signal.SIGINT)
        qtbot.waitUntil(lambda: len(save_prompts) == 1, timeout=30_000)
        assert said == [INTERRUPTED]
        assert [p[0] for p in stop_prompts] == [job.title] and save_prompts == [("digits_cnn.onnx", "quitting")]
        assert window.isVisible() and window.doc.modified and window.runs.job is job and job.running
        # again, Stop then Discard: closed, the job cancelled
        save_prompts.answer = "discard"
        with qtbot.waitSignal(window.runs.finished, timeout=300_000):
            os.kill(os.getpid(), signal.SIGINT)
            qtbot.waitUntil(lambda: not window.isVisible(), timeout=30_000)
        assert said == [INTERRUPTED, INTERRUPTED] and len(stop_prompts) == 2 and len(save_prompts) == 2
        assert not job.running
    finally:
        watcher.uninstall()


def test_a_job_child_ignores_ctrl_c(qtbot):
    """The terminal's SIGINT reaches the job child too: it goes on (the window decides), its result whole."""
    job = ProcessJob("sleep", {"steps": 40, "delay": 0.05}, title="sleep")
    before = {p.pid for p in psutil.Process().children()}
    steps: list[int] = []
    seen: list = []
    job.progress.connect(lambda done, total, text: steps.append(done))
    job.succeeded.connect(lambda result: seen.append(("succeeded", result)))
    job.failed.connect(lambda err: seen.append(("failed", err.message)))
    job.cancelled.connect(lambda: seen.append(("cancelled", None)))
    with qtbot.waitSignal(job.finished, timeout=300_000):
        job.start()
        qtbot.waitUntil(lambda: bool(steps), timeout=120_000)  # the child runs its job: past child_main's first line
        (child,) = [p for p in psutil.Process().children() if p.pid not in before and "spawn" in " ".join(p.cmdline())]
        os.kill(child.pid, signal.SIGINT)
    assert seen == [("succeeded", {"steps": 40})]  # was ("failed", "KeyboardInterrupt: ")
    qtbot.waitUntil(lambda: not job.running)
