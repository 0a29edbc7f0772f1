"""Ctrl+C in the terminal that started ``workbench`` closes the window as its close button does.

It raised KeyboardInterrupt in whatever slot ran next: ppocrv4_rec calibrating, Ctrl+C showed "Internal error:
KeyboardInterrupt ... This is a bug in Workbench", the traceback went to the log and the window stayed; the job
child, in the same process group, died of it too. Now the window is asked to close (a running job and unsaved
edits are asked about, as for the close button) and the job children ignore the signal.
"""

from __future__ import annotations

import os
import signal

import psutil
from close_prompts import calibrating_with_an_edit, stop_then_cancel_keeps_all, stop_then_discard_closes
from latency_fakes import quantized_faster

from workbench.qt.interrupt import INTERRUPTED, close_on_interrupt
from workbench.qt.workers import ProcessJob


def test_ctrl_c_asks_about_the_job_and_the_edits_then_closes(
    qtbot, window, open_file, tmp_path, monkeypatch, stop_prompts, save_prompts
):
    quantized_faster(monkeypatch)
    said: list[str] = []
    watcher = close_on_interrupt(window, said.append)
    try:
        job = calibrating_with_an_edit(window, open_file, tmp_path)

        def ctrl_c(done) -> None:
            os.kill(os.getpid(), signal.SIGINT)
            qtbot.waitUntil(done, timeout=30_000)

        stop_then_cancel_keeps_all(
            lambda: ctrl_c(lambda: len(save_prompts) == 1), window, job, stop_prompts, save_prompts
        )
        assert said == [INTERRUPTED]
        stop_then_discard_closes(
            qtbot, lambda: ctrl_c(lambda: not window.isVisible()), window, job, stop_prompts, save_prompts
        )
        assert said == [INTERRUPTED, INTERRUPTED]
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
        # the child runs its job: past child_main's first line
        qtbot.waitUntil(lambda: bool(steps), timeout=120_000)
        (child,) = [
            p for p in psutil.Process().children() if p.pid not in before and "spawn" in " ".join(p.cmdline())
        ]
        os.kill(child.pid, signal.SIGINT)
    assert seen == [("succeeded", {"steps": 40})]  # was ("failed", "KeyboardInterrupt: ")
    qtbot.waitUntil(lambda: not job.running)
