"""A close asked while a calibration runs on an edited model, answered at its two prompts (the ``stop_prompts`` and
``save_prompts`` fixtures): Stop then Cancel keeps everything, Stop then Discard closes. ``close`` is what asks the
window to close (its close button, Ctrl+C in the terminal) and returns once the prompts were answered."""

from __future__ import annotations

from collections.abc import Callable

from example_copy import open_example_copy

from workbench.qt.commands import push_edit


def calibrating_with_an_edit(window, open_file, folder):
    """Open a copy of the bundled digits CNN in ``window``, leave an unsaved edit (its first Conv excluded) and
    start a calibration; returns the running job."""
    open_example_copy(window, open_file, folder, samples=None, analysis_samples=None)
    edited = window.doc.recipe.model_copy(update={"exclude": ["/f/f.0/Conv"]})
    assert push_edit(window.doc, edited, "exclude the first Conv")
    window.act_calibrate.trigger()
    return window.runs.job


def stop_then_cancel_keeps_all(close: Callable[[], None], window, job, stop_prompts, save_prompts) -> None:
    """Stop, then Cancel at the unsaved-edits prompt: the window, its edit and the job stay."""
    save_prompts.answer = "cancel"
    close()
    assert [p[0] for p in stop_prompts] == [job.title] and save_prompts == [("digits_cnn.onnx", "quitting")]
    assert window.isVisible() and window.doc.modified and window.runs.job is job and job.running


def stop_then_discard_closes(
    qtbot, close: Callable[[], None], window, job, stop_prompts, save_prompts
) -> None:
    """Asked again, Stop then Discard: the window closes and the job is cancelled."""
    save_prompts.answer = "discard"
    with qtbot.waitSignal(window.runs.finished, timeout=300_000):
        close()
    assert len(stop_prompts) == 2 and len(save_prompts) == 2
    assert not window.isVisible() and not job.running
