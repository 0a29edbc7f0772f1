"""SIGKILL ``workbench-cli quantize MODEL --data calib.npz -o out.onnx --save-project job.wbproj`` at
random moments and check what is left: both files absent, or both valid and matching (the
project loads, names the input model with its sha256 and the recipe stamped into the model; the
model passes onnx.checker and runs in onnxruntime); then a full run leaves no ``.*.tmp`` file.

    python scripts/kill_pair.py [--kills 40] [--seed 0] [--model DIR]

Prints one line per kill and a summary; exits 1 on any inconsistent state.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = ROOT.parent / "shared" / "corpus" / "models" / "digits_cnn"


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _argv(folder: Path) -> list[str]:
    return [sys.executable, "-m", "workbench.cli", "quantize", str(folder / "model.onnx"), "--data",
            str(folder / "calib.npz"), "-o", str(folder / "out.onnx"), "--save-project", str(folder / "job.wbproj")]


def check_pair(folder: Path) -> str:
    """'absent', 'valid', or a description of what is wrong."""
    import numpy as np
    import onnx
    import onnxruntime as ort

    from workbench.core import api

    model, proj = folder / "out.onnx", folder / "job.wbproj"
    if not model.exists() and not proj.exists():
        return "absent"
    if model.exists() != proj.exists():
        return f"only {'out.onnx' if model.exists() else 'job.wbproj'} present"
    try:
        project = api.load_project(proj)  # also checks the model path and sha256
        m = onnx.load(str(model))
        onnx.checker.check_model(m)
        stamped = json.loads(dict((p.key, p.value) for p in m.metadata_props)["workbench.recipe"])
        saved = json.loads(project.recipe.model_dump_json(exclude_defaults=True))
        if {k: v for k, v in stamped.items() if k != "preset"} != {k: v for k, v in saved.items() if k != "preset"}:
            return f"recipe mismatch: model {stamped} project {saved}"
        if project.model_path(proj).resolve() != (folder / "model.onnx").resolve():
            return f"project names model {project.model_path(proj)}"
        sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        inp = sess.get_inputs()[0]
        x = np.load(folder / "calib.npz")[inp.name][:1]
        sess.run(None, {inp.name: x})
    except Exception as exc:  # noqa: BLE001 - any failure is the finding
        return f"invalid: {type(exc).__name__}: {exc}"
    return "valid"


def temp_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and (p.name.endswith(".tmp")
                                                                               or ".tmp" in p.name))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    folder = Path(tempfile.mkdtemp(prefix="kill_pair_"))
    shutil.copy(args.model / "model_opset17.onnx", folder / "model.onnx")
    shutil.copy(args.model / "calib.npz", folder / "calib.npz")
    t0 = time.monotonic()
    subprocess.run(_argv(folder), env=_env(), check=True, capture_output=True)
    full = time.monotonic() - t0
    counts: dict[str, int] = {}
    bad = 0
    for i in range(args.kills):
        for name in ("out.onnx", "job.wbproj"):
            (folder / name).unlink(missing_ok=True)
        delay = rng.uniform(0.0, full * 1.1)
        proc = subprocess.Popen(_argv(folder), env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        state = check_pair(folder)
        killed = proc.returncode == -signal.SIGKILL
        key = ("killed " if killed else "finished ") + ("valid" if state in ("valid", "absent") and state == "valid"
                                                          else state if state in ("absent",) else "BAD")
        counts[key] = counts.get(key, 0) + 1
        if state not in ("valid", "absent"):
            bad += 1
        print(f"kill {i + 1:2d} at {delay:5.2f}s: {'killed' if killed else 'had finished'}, {state}, "
              f"temp files {temp_files(folder)}")
    subprocess.run(_argv(folder), env=_env(), check=True, capture_output=True)
    left = temp_files(folder)
    final = check_pair(folder)
    print(f"full run {full:.2f}s; {args.kills} kills: {counts}; after a clean run: {final}, temp files left {left}")
    shutil.rmtree(folder, ignore_errors=True)
    return 1 if bad or left or final != "valid" else 0


if __name__ == "__main__":
    sys.exit(main())
