"""Projects as ``workbench-cli quantize --save-project`` writes them, the data they name, and the app
steps the round-trip tests take (open, save, export)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

MODEL = "model_opset17.onnx"


def digits_folder(corpus: Path, tmp_path: Path) -> Path:
    """A copy of digits_cnn's model, calib.npz and eval.npz, with an array folder ``calibdir`` (calib.npz
    in 4 files), an image folder ``imgs`` (8x8 grey PNGs of eval rows) and ``calib.npy`` beside them."""
    folder = tmp_path / "m"
    folder.mkdir()
    for name in (MODEL, "calib.npz", "eval.npz"):
        shutil.copy(corpus / "digits_cnn" / name, folder / name)
    x = np.load(folder / "calib.npz")["input"]
    (folder / "calibdir").mkdir()
    for i, part in enumerate(np.array_split(x[:40], 4)):
        np.savez(folder / "calibdir" / f"part{i}.npz", input=part)
    np.save(folder / "calib.npy", x[:24])
    (folder / "imgs").mkdir()
    rows = np.load(folder / "eval.npz")["input"][:12]
    for i, row in enumerate(rows):
        Image.fromarray(np.round(row[0] * 255).astype(np.uint8), mode="L").save(folder / "imgs" / f"{i:02d}.png")
    return folder


#: the CLI run with latency_fakes.apply_fixed_latency (its measurements fixed, not timed)
_FIXED_CLI = ("import sys; sys.path.insert(0, {here!r}); import latency_fakes; latency_fakes.apply_fixed_latency(); "
              "from workbench.cli import main; sys.exit(main(sys.argv[1:]))")


def cli_quantize(*args, fixed_latency: bool = False) -> None:
    """``workbench-cli quantize ARGS`` in a process of its own (the CLI records the files it reads as inputs
    never to be written, for the rest of its process); exit status 0 asserted. ``fixed_latency``: its latency
    measurements are latency_fakes' fixed ones (the app's, with ``latency_fakes.fixed_latency``)."""
    head = (["-c", _FIXED_CLI.format(here=str(Path(__file__).resolve().parent))] if fixed_latency
            else ["-m", "workbench.cli"])
    run = subprocess.run([sys.executable, *head, "quantize", *(str(a) for a in args)],
                         capture_output=True, text=True, timeout=540)
    assert run.returncode == 0, run.stderr


def read_json(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def write_variant(base: Path, target: Path, **fields) -> Path:
    """``base``'s project JSON with ``fields`` replaced, written to ``target`` (same folder)."""
    doc = read_json(base)
    doc.update(fields)
    # the absolute paths of its files as Workbench saves them (the base's are of the base's files)
    absolute = {k: v for k, v in (doc.get("absolute_paths") or {}).items() if k == "model.path"}
    for section, key in (("data", "path"), ("evaluation", "data"), ("evaluation", "metric")):
        value = doc.get(section).get(key) if isinstance(doc.get(section), dict) else None
        if isinstance(value, str) and value and (key != "metric" or value.lower().endswith(".py")):
            absolute[f"{section}.{key}"] = os.path.normpath(target.resolve().parent / value)
    doc["absolute_paths"] = absolute or None
    target.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return target


def refused_open(qtbot, win, project: Path, dialogs) -> list[tuple[str, str]]:
    """Open ``project`` in ``win``, check that no model opened (the open was refused), and return the dialogs
    it showed as (title, text), clearing ``dialogs`` (the tests' dialog recorder)."""
    opened = []
    win.modelOpened.connect(opened.append)
    win.open_path(project)
    qtbot.wait(50)
    win.modelOpened.disconnect()
    assert not opened
    shown = [(title, text) for _kind, title, text in dialogs]
    dialogs.clear()
    return shown


def run_job(qtbot, win, start, timeout: int = 540_000) -> tuple[str, object]:
    """Start a job with ``start()`` and wait for it: ("succeeded", result) or ("failed", error)."""
    seen: list = []
    win.runs.succeeded.connect(lambda kind, res: seen.append(("succeeded", res)))
    win.runs.failed.connect(lambda kind, err: seen.append(("failed", err)))
    with qtbot.waitSignal(win.runs.finished, timeout=timeout):
        start()
    return seen[-1]


def run_ok(qtbot, win, start) -> object:
    """:func:`run_job` of a job that must succeed: its result."""
    state, res = run_job(qtbot, win, start)
    assert state == "succeeded", res
    return res


def app_export(qtbot, win, out: Path) -> bytes:
    """The app's Export (QDQ) of the open work to ``out``: its bytes."""
    state, res = run_job(qtbot, win, lambda: win.export_to(out))
    assert state == "succeeded", res
    return out.read_bytes()


def cli_replay(project: Path, out: Path, fixed_latency: bool = False) -> bytes:
    """``workbench-cli quantize PROJECT -o OUT``: its bytes."""
    cli_quantize(project, "-o", out, fixed_latency=fixed_latency)
    return out.read_bytes()
