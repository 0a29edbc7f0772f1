"""Long session: one app opens, calibrates, exports and replaces 30 models in turn.

The models rotate through the small digits models of the corpus and tiny synthetic MLPs (built
here, with a ``calib.npz`` beside each so the app picks its data). Checks: every cycle succeeds
and its export loads; the process RSS grows less than 10 % from cycle 5 to cycle 30 (the first
cycles fill caches: onnxruntime kernels, Qt fonts, layout); no worker thread, job or temporary
file outlives the session (the app gets a temp folder of its own, so only its files count; the
folder fixture's leak check also fails on leaked threads). The app has no "close model" action: opening the next model is what releases the previous one.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

psutil = pytest.importorskip("psutil")

pytestmark = pytest.mark.slow

CYCLES = int(os.environ.get("WB_SOAK_CYCLES", "30"))
DIGITS = ["digits_cnn/model_opset17.onnx", "digits_mlp/model_opset13.onnx", "digits_mlp/model_opset17.onnx",
          "digits_cnn/model_opset13.onnx"]


def _tiny(folder, seed: int):
    """An MLP (16 -> 32 -> 4) with calib.npz beside it."""
    rng = np.random.default_rng(seed)
    folder.mkdir()
    inits = [numpy_helper.from_array(rng.standard_normal((16, 32)).astype(np.float32), "W0"),
             numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "B0"),
             numpy_helper.from_array(rng.standard_normal((32, 4)).astype(np.float32), "W1")]
    nodes = [helper.make_node("MatMul", ["X", "W0"], ["H"], name="mm0"),
             helper.make_node("Add", ["H", "B0"], ["HB"], name="add0"),
             helper.make_node("Relu", ["HB"], ["R"], name="relu"),
             helper.make_node("MatMul", ["R", "W1"], ["Y"], name="mm1")]
    g = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 16])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 4])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    path = folder / "tiny.onnx"
    onnx.save(m, str(path))
    np.savez(folder / "calib.npz", X=rng.standard_normal((8, 1, 16)).astype(np.float32))
    return path


def _private_temp(monkeypatch, folder) -> str:
    """Give the app (this process and the job processes it spawns) its own temp folder, so the leak
    check sees only the files the app creates, not what other programs put in the shared /tmp."""
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))  # inherited by the spawned job processes
    monkeypatch.setattr(tempfile, "tempdir", str(folder))  # this process (gettempdir caches it)
    return str(folder)


def _library_temp_entries(folder) -> set[str]:
    """What importing the libraries alone leaves in an empty temp folder (onnxruntime writes a
    ``.ses`` file there on import): those files are not the app's."""
    folder.mkdir()
    subprocess.run([sys.executable, "-c", "import onnxruntime, onnx, numpy"], check=True, timeout=300,
                   env={**os.environ, "TMPDIR": str(folder)})
    return set(os.listdir(folder))


def _app_temp_entries(folder: str, libraries: set[str]) -> set[str]:
    """What the app left in its temp folder, without the libraries' own files; multiprocessing's
    ``pymp-*`` folders are removed by multiprocessing when their process exits."""
    return {e for e in os.listdir(folder) if not e.startswith("pymp-") and e not in libraries}


def _rss() -> int:
    gc.collect()
    return psutil.Process().memory_info().rss


def _run_job(qtbot, win, start, timeout=540_000):
    """Start a job with ``start()`` and wait for it; ("succeeded"|"failed"|"cancelled", payload)."""
    seen: list = []
    slots = {win.runs.succeeded: lambda kind, res: seen.append(("succeeded", res)),
             win.runs.failed: lambda kind, err: seen.append(("failed", err)),
             win.runs.cancelled: lambda kind: seen.append(("cancelled", None))}
    for sig, slot in slots.items():
        sig.connect(slot)
    try:
        with qtbot.waitSignal(win.runs.finished, timeout=timeout):
            start()
    finally:
        for sig, slot in slots.items():
            sig.disconnect(slot)
    return seen[-1]


def test_thirty_models_in_one_session(qtbot, window, open_file, corpus, tmp_path, monkeypatch):
    libraries = _library_temp_entries(tmp_path / "library-temp")
    temp = _private_temp(monkeypatch, tmp_path / "temp")
    models = [corpus / rel for rel in DIGITS] + [_tiny(tmp_path / f"tiny{k}", k) for k in range(2)]
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    threads_before = {t.ident for t in threading.enumerate()}
    win = window
    rss = {}
    times = []
    for cycle in range(1, CYCLES + 1):
        path = models[cycle % len(models)]
        t0 = time.perf_counter()
        open_file(win, path)
        t1 = time.perf_counter()
        win.calibration.samples.setValue(16)
        win.calibration.analysis_samples.setValue(2)
        status, res = _run_job(qtbot, win, win.act_calibrate.trigger)
        assert status == "succeeded", (cycle, path, res)
        # real measurements in the job processes: a model that measures slower quantized here (the digits and tiny
        # MLPs run in microseconds) is written with every unit float, one that does not with some quantized
        all_float = all(u.excluded for u in win.doc.plan.units.values()) and bool(res.get("latency_kept"))
        t2 = time.perf_counter()
        out = out_dir / f"c{cycle:02d}.onnx"
        status, res = _run_job(qtbot, win, lambda out=out: win.export_to(out))
        assert status == "succeeded", (cycle, path, res)
        quantized = any(n.op_type in ("QuantizeLinear", "DynamicQuantizeLinear") for n in onnx.load(str(out)).graph.node)
        assert quantized != all_float, (cycle, path)
        qtbot.wait(10)  # let deleteLater() of finished jobs run
        times.append((path.name, t1 - t0, t2 - t1, time.perf_counter() - t2))
        if cycle in (5, CYCLES):
            rss[cycle] = _rss()
    growth = rss[CYCLES] / rss[5] - 1
    for name, *secs in times[:len(models)]:
        print(f"\n{name}: open {secs[0]:.2f} s, calibrate {secs[1]:.2f} s, export {secs[2]:.2f} s", end="")
    print(f"\nRSS cycle 5 {rss[5] / 2**20:.0f} MiB, cycle {CYCLES} {rss[CYCLES] / 2**20:.0f} MiB, "
          f"growth {100 * growth:+.1f} %")
    assert growth < 0.10
    assert sorted(os.listdir(out_dir)) == [f"c{c:02d}.onnx" for c in range(1, CYCLES + 1)]  # no temporaries
    qtbot.waitUntil(lambda: not [t for t in threading.enumerate() if t.ident not in threads_before
                                 and t.is_alive() and not t.daemon], timeout=300_000)
    leaked = _app_temp_entries(temp, libraries)
    assert not leaked, leaked
