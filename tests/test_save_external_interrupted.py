"""A model saved with external data (io.save.save_model) that fails or is killed part way leaves one complete
version under NAME.onnx + NAME.onnx.data and no temporary file: a failed step removed nothing of its own
(the hidden ``.NAME.wb-*.data`` stayed beside the model, and after a failure of the data copy the model read
it), and the app's clean-up after a kill (clean_killed_write) left the save's temporary folder with its
partly written data. A model over protobuf's limit as one file is written with external data on its own."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.errors import ExportError
from workbench.core.io import save

N = 32  # a 4 KiB weight
X = np.arange(N, dtype=np.float32).reshape(1, N) / N


def _model(scale: float):
    w = numpy_helper.from_array((np.arange(N * N, dtype=np.float32).reshape(N, N) * scale), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, N])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, N])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _output(path: Path) -> np.ndarray:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": X})[0]


def _expected(scale: float) -> np.ndarray:
    return X @ (np.arange(N * N, dtype=np.float32).reshape(N, N) * scale)


def _step(src: str, dst: str, path: Path) -> int:
    """Which step of save._save_external an os.replace(src, dst) is (0: another rename)."""
    src, dst = Path(src), Path(dst)
    if dst.parent != path.parent:
        return 0
    if dst.name.startswith(f".{path.name}.wb-") and dst.name.endswith(".data"):
        return 1
    if dst == path:
        return 4 if src.name.endswith(".final") else 2
    return 3 if dst.name == path.name + ".data" else 0


def _failing_at(step: int, path: Path, real=os.replace):
    def replace(src, dst, *args, **kw):
        if _step(src, dst, path) == step:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(src, dst, *args, **kw)
    return replace


@pytest.mark.parametrize("previous", [False, True])
@pytest.mark.parametrize("step", [1, 2, 3])
def test_a_failed_step_leaves_the_folder_as_it_was(tmp_path, monkeypatch, step, previous):
    path = tmp_path / "m.onnx"
    if previous:
        save.save_model(_model(1.0), path, external=True)
    before = sorted(p.name for p in tmp_path.iterdir())
    monkeypatch.setattr(save.os, "replace", _failing_at(step, path))
    with pytest.raises(ExportError, match=r"m.onnx: the disk is full"):
        save.save_model(_model(2.0), path, external=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    if previous:
        np.testing.assert_array_equal(_output(path), _expected(1.0))


def test_a_failed_data_copy_puts_the_previous_model_back(tmp_path, monkeypatch):
    """Step 3 copies the hidden data onto NAME.data: a full disk there left the new model reading the hidden file."""
    path = tmp_path / "m.onnx"
    save.save_model(_model(1.0), path, external=True)
    real = save.shutil.copyfile

    def copyfile(src, dst, *args, **kw):
        if Path(dst).name == "m.onnx.data":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(src, dst, *args, **kw)

    monkeypatch.setattr(save.shutil, "copyfile", copyfile)
    with pytest.raises(ExportError, match=r"m.onnx: the disk is full"):
        save.save_model(_model(2.0), path, external=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", "m.onnx.data"]
    np.testing.assert_array_equal(_output(path), _expected(1.0))


def test_a_failed_last_rename_keeps_the_new_pair_and_the_next_save_tidies(tmp_path, monkeypatch):
    path = tmp_path / "m.onnx"
    save.save_model(_model(1.0), path, external=True)
    with monkeypatch.context() as m:
        m.setattr(save.os, "replace", _failing_at(4, path))
        with pytest.raises(ExportError, match=r"m.onnx: the disk is full"):
            save.save_model(_model(2.0), path, external=True)
    hidden = [p.name for p in tmp_path.iterdir() if p.name.startswith(".m.onnx.wb-")]
    assert len(hidden) == 1 and hidden[0].endswith(".data")  # the model in place reads it: complete
    np.testing.assert_array_equal(_output(path), _expected(2.0))
    save.save_model(_model(3.0), path, external=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", "m.onnx.data"]
    np.testing.assert_array_equal(_output(path), _expected(3.0))


_KILLED = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    sys.path.insert(0, {tests!r})
    from test_save_external_interrupted import _model, _step
    from workbench.core.io import save
    path, step = Path(sys.argv[1]), int(sys.argv[2])
    real = os.replace
    def replace(src, dst, *a, **kw):
        if _step(src, dst, path) == step:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(src, dst, *a, **kw)
    save.os.replace = replace
    save.save_model(_model(2.0), path, external=sys.argv[3] == "external")
""")


@pytest.mark.parametrize("step", [1, 2, 3, 4])
def test_a_killed_save_leaves_one_version_and_the_clean_up_removes_its_temporaries(tmp_path, step):
    folder = tmp_path / "out"
    folder.mkdir()
    path = folder / "m.onnx"
    save.save_model(_model(1.0), path, external=True)
    mark = api.mark_target(path)
    script = _KILLED.format(tests=str(Path(__file__).parent))
    run = subprocess.run([sys.executable, "-c", script, str(path), str(step), "external"], capture_output=True, text=True)
    assert run.returncode == -9, run.stderr
    # killed before its step: steps 1, 2 the previous version, 3, 4 the new one (reading the hidden data)
    np.testing.assert_array_equal(_output(path), _expected(1.0 if step <= 2 else 2.0))
    removed, changed = api.clean_killed_write(path, mark)
    left = sorted(p.name for p in folder.iterdir())
    if step <= 2:
        assert left == ["m.onnx", "m.onnx.data"] and not changed
    else:  # the model in place reads the hidden data file: it stays
        assert len(left) == 3 and left[0].startswith(".m.onnx.wb-") and left[0].endswith(".data") and changed
    assert all(p.name.startswith(".m.onnx.wb-") for p in removed) and removed
    np.testing.assert_array_equal(_output(path), _expected(1.0 if step <= 2 else 2.0))
    save.save_model(_model(3.0), path, external=True)  # a later save leaves the pair only
    assert sorted(p.name for p in folder.iterdir()) == ["m.onnx", "m.onnx.data"]
    np.testing.assert_array_equal(_output(path), _expected(3.0))


def test_a_model_over_protobufs_limit_is_written_with_external_data(tmp_path, monkeypatch):
    """The inline save refused it with a hint naming save_model(..., external=True), which a user of the CLI or
    the app cannot pass; now the default save writes it as two files."""
    monkeypatch.setattr(save, "PROTOBUF_LIMIT", 2000)  # stands in for 2 GiB: the 4 KiB weight is over it
    path = tmp_path / "m.onnx"
    save.save_model(_model(2.0), path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", "m.onnx.data"]
    np.testing.assert_array_equal(_output(path), _expected(2.0))
    with pytest.raises(ExportError) as info:
        save.save_model(_model(2.0), tmp_path / "n.onnx", external=False)
    err = info.value
    assert str(err).startswith("n.onnx: the model is ") and "nothing was written" in str(err)
    assert err.hint.startswith("Write it as two files, n.onnx and its weights in n.onnx.data beside it: "
                               "workbench-cli quantize / convert and the app's export do so on their own")
    assert "external=True" not in err.hint and not (tmp_path / "n.onnx").exists()


def test_a_save_without_external_data_killed_before_its_rename_leaves_no_temporary_folder(tmp_path):
    """The one-file save writes in the same hidden folder: clean_killed_write left it with the partial model."""
    path = tmp_path / "m.onnx"
    save.save_model(_model(1.0), path)
    mark = api.mark_target(path)
    script = _KILLED.format(tests=str(Path(__file__).parent))
    run = subprocess.run([sys.executable, "-c", script, str(path), "2", "inline"], capture_output=True, text=True)
    assert run.returncode == -9, run.stderr
    [temp] = [p for p in tmp_path.iterdir() if p.name != "m.onnx"]
    assert temp.is_dir() and temp.name.startswith(".m.onnx.wb-") and (temp / "m.onnx").is_file()
    assert api.clean_killed_write(path, mark) == ([temp], False)
    assert [p.name for p in tmp_path.iterdir()] == ["m.onnx"]
    np.testing.assert_array_equal(_output(path), _expected(1.0))
