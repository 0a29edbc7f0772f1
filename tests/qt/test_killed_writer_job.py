"""A file job killed after its grace leaves no temporary file beside its target, and says what it left.

A cancelled child that does not stop within ``workers.GRACE`` (5 s) of the cancel is killed; killed mid-write it
left its ``.NAME.XXXXXXXX.tmp`` beside the target, and killed after the rename the line read "Export cancelled;
nothing was written." beside the file just written. Now the temporary files the job made (only those, for that
exact target) are removed after the kill, and a target that changed reads as written. The children here are
stand-ins (tests/qt/killed_writer.py) that write as the atomic writer does and ignore the cancel.
"""

from __future__ import annotations

from pathlib import Path

import killed_writer
from bundled_example import EXAMPLE

from workbench.core.io.atomic import stale_temps
from workbench.qt import workers
from workbench.qt.workers import ProcessJob

OLD = b"the file that was there before"
GRACE = 0.3


def _target(tmp_path) -> tuple[Path, Path, list[Path]]:
    """out.onnx (old bytes), a temporary file of it left before the job started, and files that are not its."""
    target = tmp_path / "out.onnx"
    target.write_bytes(OLD)
    older = tmp_path / ".out.onnx.before00.tmp"  # an earlier process's: not this job's
    older.write_bytes(b"older")
    others = [tmp_path / ".out.onnx.data.abc.tmp", tmp_path / ".other.onnx.abc12345.tmp", tmp_path / "notes.txt"]
    for p in others:
        p.write_bytes(b"x")
    return target, older, others


def _began(target: Path, older: Path, child) -> bool:
    if child is killed_writer.replaces_then_hangs:
        return target.exists() and target.read_bytes() == killed_writer.NEW
    return any(p != older for p in stale_temps(target))


def _kill_job(qtbot, monkeypatch, tmp_path, child) -> tuple[ProcessJob, list, Path, Path, list[Path]]:
    target, older, others = _target(tmp_path)
    monkeypatch.setattr(workers, "child_main", child)
    job = ProcessJob("export", {"path": str(target)}, title="Export to out.onnx", grace=GRACE, writes=target)
    job.keeps_late_result = True
    seen: list = []
    job.succeeded.connect(lambda res: seen.append("succeeded"))
    job.cancelled.connect(lambda: seen.append("cancelled"))
    job.failed.connect(lambda err: seen.append("failed"))
    with qtbot.waitSignal(job.finished, timeout=120_000):
        job.start()
        qtbot.waitUntil(lambda: _began(target, older, child), timeout=120_000)
        job.cancel()
    job.deleteLater()
    return job, seen, target, older, others


def test_a_writer_killed_mid_write_leaves_no_temporary_file(qtbot, monkeypatch, tmp_path):
    job, seen, target, older, others = _kill_job(qtbot, monkeypatch, tmp_path, killed_writer.writes_then_hangs)
    assert seen == ["cancelled"]
    assert target.read_bytes() == OLD
    assert stale_temps(target) == [older] and older.read_bytes() == b"older"  # only the job's own is removed
    assert all(p.read_bytes() == b"x" for p in others)
    assert job.written_when_killed is False


def test_a_writer_killed_after_the_rename_says_the_file_is_written(qtbot, monkeypatch, tmp_path):
    job, seen, target, older, others = _kill_job(qtbot, monkeypatch, tmp_path, killed_writer.replaces_then_hangs)
    assert seen == ["cancelled"]  # no result came: the status line says what was left
    assert target.read_bytes() == killed_writer.NEW
    assert stale_temps(target) == [older] and all(p.read_bytes() == b"x" for p in others)
    assert job.written_when_killed is True


def _export_killed(qtbot, win, open_file, monkeypatch, tmp_path, child) -> Path:
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    win.calibration.set_data_spec({"kind": "npz", "path": str(EXAMPLE / "digits_cnn_calib.npz")}, 16)
    win._on_spec_changed()
    target, older, _ = _target(tmp_path)
    monkeypatch.setattr(workers, "GRACE", GRACE)  # the window's jobs take the default grace
    monkeypatch.setattr(workers, "child_main", child)
    with qtbot.waitSignal(win.runs.finished, timeout=120_000):
        win.export_to(target, "qdq")
        qtbot.waitUntil(lambda: _began(target, older, child), timeout=120_000)
        win.runs.cancel()
    assert stale_temps(target) == [older]
    return target


def test_the_window_says_nothing_was_written_after_a_kill_mid_write(qtbot, window, open_file, monkeypatch, tmp_path):
    target = _export_killed(qtbot, window, open_file, monkeypatch, tmp_path, killed_writer.writes_then_hangs)
    assert target.read_bytes() == OLD
    assert window.status_label.text() == "Export cancelled; nothing was written."


def test_the_window_says_the_file_is_written_after_a_kill_past_the_rename(qtbot, window, open_file, monkeypatch,
                                                                          tmp_path):
    target = _export_killed(qtbot, window, open_file, monkeypatch, tmp_path, killed_writer.replaces_then_hangs)
    assert target.read_bytes() == killed_writer.NEW
    assert window.status_label.text() == (
        f"Done: exported {target} (the cancel came too late to stop the write; the job did not end within 0.3 s "
        "of the cancel and was stopped, so its results are not shown).")
