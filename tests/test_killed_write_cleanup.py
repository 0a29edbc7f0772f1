"""api.clean_killed_write: after a file job is killed, only the temporary files it made for its target go."""

from __future__ import annotations

from workbench.core import api


def test_only_the_targets_temporary_files_made_after_the_mark_are_removed(tmp_path):
    target = tmp_path / "m.onnx"
    older = tmp_path / ".m.onnx.old12345.tmp"
    older.write_bytes(b"older")
    mark = api.mark_target(target)  # no m.onnx yet
    new = tmp_path / ".m.onnx.new12345.tmp"
    kept = [tmp_path / ".m.onnx.wbproj.abc12345.tmp", tmp_path / ".n.onnx.abc12345.tmp", tmp_path / "m.onnx.tmp"]
    for p in (new, *kept):
        p.write_bytes(b"x")
    assert api.clean_killed_write(target, mark) == ([new], False)
    assert not new.exists() and older.exists() and all(p.exists() for p in kept)


def test_a_target_that_changed_since_the_mark_is_said_written(tmp_path):
    target = tmp_path / "m.onnx"
    target.write_bytes(b"old")
    mark = api.mark_target(target)
    assert api.clean_killed_write(target, mark) == ([], False)
    target.write_bytes(b"the new model")  # another size
    assert api.clean_killed_write(target, mark) == ([], True)
    target.unlink()
    assert api.clean_killed_write(target, mark) == ([], True)
    assert api.clean_killed_write(target, api.mark_target(target)) == ([], False)
