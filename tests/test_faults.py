"""Faults: processes killed while writing, cancelled calibration, read-only folders, full disks.

* A forked child loops exporting quantized models (inline and with external data) or saving a
  project into one path and is SIGKILLed after a random 0-200 ms, 20 times per kind. The final
  name must then hold one complete version (loads, equals a version the child wrote) and no
  visible partial file may exist; hidden leftovers are removed by the next write.
* A simulated crash at every rename/link step of an external-data save (deterministic).
* Calibration cancelled after k batches (k random, 20 times) and from another thread at a random
  moment: ``Cancelled`` is raised, the previous result is untouched, and a re-run gives the same
  qparams as an uninterrupted run.
* Read-only target folders and a full disk give an ``ExportError`` that says so, and leave the
  previous file as it was.
"""

from __future__ import annotations

import builtins
import errno
import io
import json
import os
import random
import signal
import threading
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.errors import Cancelled, ExportError
from workbench.core.pipeline.project import load_project, new_project, save_project
from workbench.core.progress import CancelToken

KILLS = 20
VERSIONS = 3


def _model(seed: int, n: int = 256) -> onnx.ModelProto:
    """X[N,n] -> MatMul(W1) -> Relu -> MatMul(W2) -> Y; weights from ``seed``."""
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array(rng.standard_normal((n, n)).astype(np.float32), "W1"),
             numpy_helper.from_array(rng.standard_normal((n, 8)).astype(np.float32), "W2")]
    nodes = [helper.make_node("MatMul", ["X", "W1"], ["H"], name="mm1"),
             helper.make_node("Relu", ["H"], ["R"], name="relu"),
             helper.make_node("MatMul", ["R", "W2"], ["Y"], name="mm2")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", n])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 8])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def _results(tmp_path) -> list:
    """VERSIONS quantized results, each tagged with metadata ``fault_version``."""
    out = []
    for k in range(VERSIONS):
        path = tmp_path / f"float{k}.onnx"
        onnx.save(_model(k), str(path))
        res = api.quantize(api.open_model(path), api.make_recipe("dynamic-u8"))
        res.proto.metadata_props.add(key="fault_version", value=str(k))
        out.append(res)
    return out


def _weights(proto: onnx.ModelProto) -> dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}


def _kill_loop(write, versions: int, rng: random.Random) -> None:
    """Fork a child that calls ``write(i % versions)`` forever; SIGKILL it after 0-200 ms."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            i = 0
            while True:
                write(i % versions)
                i += 1
        finally:
            os._exit(1)
    time.sleep(rng.uniform(0.0, 0.2))
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, "child died before the kill"


def _visible(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if not p.name.startswith(".")}


@pytest.mark.parametrize("external", [False, True], ids=["inline", "external-data"])
def test_export_killed_at_random_points_leaves_a_complete_version(tmp_path, monkeypatch, external):
    import workbench.core.io.save as save_mod

    if external:
        monkeypatch.setattr(save_mod, "EXTERNAL_THRESHOLD", 0)  # stands in for a > 2 GiB model
    results = _results(tmp_path)
    expected = [_weights(r.proto) for r in results]
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / "q.onnx"
    api.export(results[0], target)
    names = {"q.onnx", "q.onnx.data"} if external else {"q.onnx"}
    assert _visible(out_dir) == names
    rng = random.Random(5)
    seen = set()
    for _ in range(KILLS):
        _kill_loop(lambda k: api.export(results[k], target), VERSIONS, rng)
        assert _visible(out_dir) == names, sorted(os.listdir(out_dir))
        loaded = onnx.load(str(target))  # resolves external data too
        version = int({p.key: p.value for p in loaded.metadata_props}["fault_version"])
        got = _weights(loaded)
        assert got.keys() == expected[version].keys()
        for name, value in expected[version].items():
            np.testing.assert_array_equal(got[name], value, err_msg=f"{name} of version {version}")
        seen.add(version)
    assert len(seen) >= 2, "the child never got past its first write; the test proves nothing"
    api.export(results[1], target)  # the next write cleans the hidden leftovers of killed ones
    assert sorted(os.listdir(out_dir)) == sorted(names)
    if external:
        assert os.path.getsize(out_dir / "q.onnx.data") < 2 * 256 * 256  # replaced, never appended


def test_external_save_interrupted_at_every_step_leaves_one_complete_version(tmp_path, monkeypatch):
    """A crash (simulated by an exception) before each rename, link or unlink of an external-data
    save: the final names always hold the old or the new model, whole."""
    import workbench.core.io.save as save_mod

    monkeypatch.setattr(save_mod, "EXTERNAL_THRESHOLD", 0)
    results = _results(tmp_path)
    expected = [_weights(r.proto) for r in results]
    target = tmp_path / "q.onnx"

    class Crash(BaseException):
        pass

    real = {name: getattr(os, name) for name in ("replace", "unlink")}
    step = 0
    while True:
        api.export(results[0], target)
        calls = [0]

        def failing(name, calls=calls, step=step):
            def call(*a, **kw):
                calls[0] += 1
                if calls[0] == step + 1:
                    raise Crash(name)
                return real[name](*a, **kw)
            return call

        for name in real:
            monkeypatch.setattr(os, name, failing(name))
        try:
            api.export(results[1], target)
            finished = True
        except Crash:
            finished = False
        finally:
            for name, fn in real.items():
                monkeypatch.setattr(os, name, fn)
        loaded = onnx.load(str(target))
        version = int({p.key: p.value for p in loaded.metadata_props}["fault_version"])
        for name, value in expected[version].items():
            np.testing.assert_array_equal(_weights(loaded)[name], value)
        if finished:
            break
        step += 1
    assert step >= 4  # the external save has four renames and an unlink
    api.export(results[0], target)  # a complete save leaves no hidden leftovers, even ones in use before
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".")], os.listdir(tmp_path)


def test_project_save_killed_at_random_points_leaves_a_complete_version(tmp_path):
    model = tmp_path / "m.onnx"
    onnx.save(_model(0, 16), str(model))
    projects = []
    for k in range(VERSIONS):
        p = new_project(model, api.make_recipe("cpu-u8s8"), data={"kind": "random", "count": 4}, samples=k + 1)
        p.results = {"note": "x" * (20000 * (k + 1))}  # large enough that a kill can land mid-write
        projects.append(p)
    target = tmp_path / "p.wbproj"
    texts = []
    for p in projects:
        save_project(p, target)
        texts.append(target.read_text())
    before = _visible(tmp_path)
    rng = random.Random(11)
    seen = set()
    for _ in range(KILLS):
        _kill_loop(lambda k: save_project(projects[k], target), VERSIONS, rng)
        assert _visible(tmp_path) == before
        text = target.read_text()
        assert text in texts
        seen.add(load_project(target).samples)
    assert len(seen) >= 2
    save_project(projects[0], target)
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")], "the next save removes leftovers"


# -- cancelling calibration -------------------------------------------------------------------

@pytest.fixture(scope="module")
def calib_setup(tmp_path_factory):
    folder = tmp_path_factory.mktemp("calib")
    onnx.save(_model(3, 32), str(folder / "m.onnx"))
    model = api.open_model(folder / "m.onnx")
    rng = np.random.default_rng(0)
    np.savez(folder / "calib.npz", X=rng.standard_normal((24, 32)).astype(np.float32))
    return model, str(folder / "calib.npz")


def _plans(model):
    from workbench.core.recipe.spec import PartialSpec, Rule

    first = api.plan(model, api.make_recipe("cpu-u8s8"))
    changed = api.plan(model, api.make_recipe("cpu-u8s8", rules=[Rule(op_type="MatMul",
                                                                      activation=PartialSpec(observer="percentile"))]))
    return first, changed


def _same_qparams(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for t in a:
        np.testing.assert_array_equal(a[t].scale, b[t].scale, err_msg=t)
        np.testing.assert_array_equal(a[t].zero_point, b[t].zero_point, err_msg=t)


def test_calibration_cancelled_after_k_batches(calib_setup):
    model, data = calib_setup
    first, changed = _plans(model)
    assert set(changed.activations) != set() and any(
        changed.activations[t] != first.activations.get(t) for t in changed.activations)
    previous = api.calibrate(model, first, data)
    frozen = json.dumps(previous.to_json(), sort_keys=True)
    reference = api.calibrate(model, changed, data, previous=previous).qparams()
    rng = random.Random(2)
    for _ in range(KILLS):
        k = rng.randrange(1, 12)
        token = CancelToken()

        def progress(done, total, msg, token=token, k=k):
            if done >= k:
                token.cancel()

        from workbench.core.calibration.calibrate import calibrate
        from workbench.core.data.loader import open_data

        with pytest.raises(Cancelled):
            calibrate(model, changed, open_data(data, model), batch_size=1, progress=progress, cancel=token,
                      previous=previous)
        assert json.dumps(previous.to_json(), sort_keys=True) == frozen
    rerun = api.calibrate(model, changed, data, previous=previous).qparams()
    _same_qparams(rerun, reference)
    _same_qparams(api.calibrate(model, changed, data).qparams(), reference)


def test_calibration_cancelled_from_another_thread(calib_setup):
    model, data = calib_setup
    first, changed = _plans(model)
    previous = api.calibrate(model, first, data)
    frozen = json.dumps(previous.to_json(), sort_keys=True)
    reference = api.calibrate(model, changed, data).qparams()
    from workbench.core.calibration.calibrate import calibrate
    from workbench.core.data.loader import open_data

    rng = random.Random(4)
    outcomes = {"cancelled": 0, "finished": 0}
    for _ in range(KILLS):
        token = CancelToken()

        def slow(done, total, msg):
            time.sleep(0.001)  # a batch takes ~1 ms, so a 0-20 ms timer lands anywhere in the run

        timer = threading.Timer(rng.uniform(0, 0.02), token.cancel)
        timer.start()
        try:
            res = calibrate(model, changed, open_data(data, model), batch_size=1, progress=slow, cancel=token,
                            previous=previous)
            outcomes["finished"] += 1
            _same_qparams(res.qparams(), reference)
        except Cancelled:
            outcomes["cancelled"] += 1
        finally:
            timer.join()
        assert json.dumps(previous.to_json(), sort_keys=True) == frozen
    assert outcomes["cancelled"] >= 5, outcomes
    assert not [t for t in threading.enumerate() if t.name.startswith("workbench-calib")]
    _same_qparams(api.calibrate(model, changed, data, previous=previous).qparams(), reference)


# -- read-only folder, full disk --------------------------------------------------------------

def _block_writes(monkeypatch, folder: Path, err: int) -> None:
    """Make every file or folder creation/write under ``folder`` fail with ``err``."""
    folder = str(folder.resolve())
    real_open, real_os_open, real_mkdir = builtins.open, os.open, os.mkdir

    def inside(p) -> bool:
        try:
            return os.path.abspath(os.fspath(p)).startswith(folder + os.sep)
        except TypeError:
            return False

    def fail(p):
        raise OSError(err, os.strerror(err), os.fspath(p))

    def fake_open(file, mode="r", *a, **kw):
        if inside(file) and any(c in mode for c in "wax+"):
            if err == errno.ENOSPC:  # the file opens, the bytes do not fit
                f = real_open(file, mode, *a, **kw)
                f.write = lambda *_: fail(file)
                return f
            fail(file)
        return real_open(file, mode, *a, **kw)

    def fake_os_open(p, flags, *a, **kw):
        if inside(p) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and err != errno.ENOSPC:
            fail(p)
        return real_os_open(p, flags, *a, **kw)

    def fake_mkdir(p, *a, **kw):
        if inside(p) and err != errno.ENOSPC:
            fail(p)
        return real_mkdir(p, *a, **kw)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(io, "open", fake_open)
    monkeypatch.setattr(os, "open", fake_os_open)
    monkeypatch.setattr(os, "mkdir", fake_mkdir)


def _read_only(monkeypatch, folder: Path) -> None:
    if os.geteuid() == 0:  # root ignores permission bits: simulate what a read-only folder does
        _block_writes(monkeypatch, folder, errno.EACCES)
    else:
        folder.chmod(0o555)


@pytest.mark.parametrize("external", [False, True], ids=["inline", "external-data"])
def test_export_to_read_only_folder_and_full_disk_is_a_clear_export_error(tmp_path, monkeypatch, external):
    import workbench.core.io.save as save_mod

    if external:
        monkeypatch.setattr(save_mod, "EXTERNAL_THRESHOLD", 0)
    results = _results(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    target = out / "q.onnx"
    api.export(results[0], target)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with monkeypatch.context() as m:
        _read_only(m, out)
        try:
            with pytest.raises(ExportError, match=r"q\.onnx: .*not writable.*Choose a folder you can write to"):
                api.export(results[1], target)
        finally:
            out.chmod(0o755)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    with monkeypatch.context() as m:
        _block_writes(m, out, errno.ENOSPC)
        with pytest.raises(ExportError, match=r"q\.onnx: the disk is full.*Free some space"):
            api.export(results[1], target)
    assert {p.name: p.read_bytes() for p in out.iterdir() if not p.name.startswith(".")} == before
    api.export(results[1], target)  # space is back: the next export works and leaves no leftovers
    assert sorted(os.listdir(out)) == sorted(before)


def test_project_save_to_read_only_folder_and_full_disk_is_a_clear_export_error(tmp_path, monkeypatch):
    model = tmp_path / "m.onnx"
    onnx.save(_model(0, 16), str(model))
    folder = tmp_path / "proj"
    folder.mkdir()
    target = folder / "p.wbproj"
    save_project(new_project(model, api.make_recipe("cpu-u8s8"), samples=1), target)
    before = target.read_text()
    project = new_project(model, api.make_recipe("cpu-u8s8"), samples=2)
    with monkeypatch.context() as m:
        _read_only(m, folder)
        try:
            with pytest.raises(ExportError, match=r"p\.wbproj: the folder is not writable"):
                save_project(project, target)
        finally:
            folder.chmod(0o755)
    with monkeypatch.context() as m:
        _block_writes(m, folder, errno.ENOSPC)
        with pytest.raises(ExportError, match=r"p\.wbproj: the disk is full"):
            save_project(project, target)
    assert target.read_text() == before
    assert os.listdir(folder) == ["p.wbproj"]
