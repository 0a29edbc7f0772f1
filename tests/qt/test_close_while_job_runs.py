"""Closing the window while a job runs asks first: Stop and Close, or Cancel to keep working. It cancelled the
job without a word (a calibration of minutes lost to a stray Ctrl+Q); the Save / Discard / Cancel prompt of
unsaved edits follows the Stop answer as before."""

from __future__ import annotations

from close_prompts import calibrating_with_an_edit, stop_then_cancel_keeps_all, stop_then_discard_closes
from example_copy import open_example_copy
from latency_fakes import quantized_faster
from PySide6.QtWidgets import QMessageBox

from workbench.qt import app_window, dialogs


def _example(win, open_file, tmp_path) -> None:
    open_example_copy(win, open_file, tmp_path, samples=None, analysis_samples=None)


def _outcomes(win) -> list[str]:
    seen: list[str] = []
    win.runs.succeeded.connect(lambda kind, res: seen.append("succeeded"))
    win.runs.failed.connect(lambda kind, err: seen.append("failed"))
    win.runs.cancelled.connect(lambda kind: seen.append("cancelled"))
    return seen


def test_cancel_keeps_the_window_and_the_job(
    qtbot, window, open_file, tmp_path, monkeypatch, stop_prompts, save_prompts
):
    quantized_faster(monkeypatch)
    _example(window, open_file, tmp_path)
    seen = _outcomes(window)
    window.act_calibrate.trigger()
    title = window.runs.job.title
    stop_prompts.answer = "keep"
    assert window.close() is False
    assert window.isVisible() and window.runs.busy
    assert stop_prompts == [(title, "")]  # no progress reported yet: the title alone
    assert save_prompts == []  # keeping the job asks nothing else
    with qtbot.waitSignal(window.runs.finished, timeout=300_000):
        pass
    assert seen == ["succeeded"]  # the job went on to its end


def test_stop_cancels_the_job_then_asks_about_unsaved_edits(
    qtbot, window, open_file, tmp_path, monkeypatch, stop_prompts, save_prompts
):
    quantized_faster(monkeypatch)
    closed: list[bool] = []
    seen = _outcomes(window)
    job = calibrating_with_an_edit(window, open_file, tmp_path)
    stop_then_cancel_keeps_all(lambda: closed.append(window.close()), window, job, stop_prompts, save_prompts)
    stop_then_discard_closes(
        qtbot, lambda: closed.append(window.close()), window, job, stop_prompts, save_prompts
    )
    assert closed == [False, True]
    assert seen == ["cancelled"]


def test_no_job_no_prompt(qtbot, window, open_file, tmp_path, stop_prompts):
    _example(window, open_file, tmp_path)
    assert window.close() is True
    assert stop_prompts == []


def test_the_box_names_the_job_and_its_answers(qtbot, monkeypatch):
    """The real box: its words, Cancel the default (Enter keeps working), and what each button answers."""
    shown: list = []
    click = {"button": dialogs.STOP_AND_CLOSE}

    def exec_(box):
        shown.append(
            (
                box.windowTitle(),
                box.text(),
                box.informativeText(),
                box.defaultButton().text(),
                sorted(b.text() for b in box.buttons()),
            )
        )
        next(b for b in box.buttons() if b.text() == click["button"]).click()
        return 0

    monkeypatch.setattr(QMessageBox, "exec", exec_)
    assert dialogs.ask_stop_job(None, "Calibration", "42% done") == dialogs.STOP
    click["button"] = "Cancel"
    assert dialogs.ask_stop_job(None, "Export", writes=True) == dialogs.KEEP
    assert shown == [
        (
            "Job running",
            "Calibration is still running (42% done).",
            "Stop it and close the window? If stopped, what it has done so far is lost.",
            "Cancel",
            ["&Stop and Close", "Cancel"],
        ),
        (
            "Job running",
            "Export is still running.",
            "Stop it and close the window? If stopped before its write begins, nothing is written and a file already "
            "there is left as it was. A write already under way is finished before the window closes, or, when the job "
            "has not ended 5 s after the stop, cut off: the file is then as it was or whole, never partial.",
            "Cancel",
            ["&Stop and Close", "Cancel"],
        ),
    ]
    assert app_window.ask_stop_job is not dialogs.ask_stop_job  # the window's is the recording fake here


def test_a_job_already_stopped_asks_nothing(qtbot, window, open_file, tmp_path, stop_prompts):
    """The screenshot scripts' fallbacks stop the job (RunController.shutdown) and quit: nothing to ask."""
    _example(window, open_file, tmp_path)
    window.act_calibrate.trigger()
    window.runs.shutdown()
    window.doc.mark_saved()
    assert window.close() is True
    assert stop_prompts == []
