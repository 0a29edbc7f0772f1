"""Corpus accuracy benchmark: task metric of every corpus model in float and after ``cpu-u8s8``.

For each ONNX file of ``../shared/corpus/models`` this script measures the float task metric
(checked against meta.json), quantizes it with the command users run,
``workbench-cli quantize MODEL --data calib.npz -o OUT.onnx`` (in a subprocess, with ``--samples N``,
``--search`` or ``--no-auto`` when given here; :func:`quantize_command`), and runs the file that command
wrote in onnxruntime for the same task metric; it compares the first output of both models with
:func:`workbench.core.analysis.evaluate.evaluate`. The "recipe choice" and "recipe search" columns
are the command's own stderr lines (the choice, its cost); "int8 units" is its ``wrote`` line.
The benchmark measures the CLI's file and not a quantize of its own, because the latency check
(on in the CLI) decides from timings which units stay float, so two quantizes of one model can
write different files (ppocr_mobile_v2_cls: 0, 101 or 104 of 135 units int8 from run to run, accuracy
0.98-1.00). It prints a Markdown table and writes it to ``benchmarks/results/corpus_accuracy.md``.
Timings are informative only ("quantize" is the command's wall time, its start-up included).

Usage::

    .venv/bin/python benchmarks/corpus_accuracy.py [--only digits] [--samples 64] [--float-only] [--no-auto] [--search]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.corpus_metrics import (  # noqa: E402
    CorpusModel,
    corpus_models,
    nudenet_class_scores,
    session_runner,
)
from workbench.core import api  # noqa: E402
from workbench.core.analysis.evaluate import evaluate  # noqa: E402
from workbench.core.errors import AlreadyQuantizedError, WorkbenchError  # noqa: E402

PRESET = "cpu-u8s8"
DEFAULT_CORPUS = Path(os.environ.get("WORKBENCH_SHARED", ROOT.parent / "shared")) / "corpus" / "models"


@dataclass
class Row:
    """One table row; ``errors`` collects anything that failed, with its message."""

    name: str
    float_metrics: dict[str, float] = field(default_factory=dict)
    float_ok: bool | None = None
    quant_metrics: dict[str, float] = field(default_factory=dict)
    quant_note: str = "n/a"
    units: str = "n/a"
    sqnr: str = "n/a"
    seconds_float: float = 0.0
    seconds_quantize: float = 0.0
    seconds_quant_eval: float = 0.0
    search: str = "off"
    choice: str = "off"
    errors: list[str] = field(default_factory=list)


def fmt_metrics(model: CorpusModel, values: dict[str, float]) -> str:
    parts = []
    for key in model.headline:
        if key in values:
            v = values[key]
            parts.append(f"{key} {int(v)}" if key == "detections" else f"{key} {v:.4f}")
    return ", ".join(parts) or "n/a"


def float_side(model: CorpusModel, corpus: Path, row: Row):
    """Float task metric; returns the nudenet reference scores (None for other models)."""
    t0 = time.perf_counter()
    run = session_runner(model.path(corpus))
    folder = corpus / model.folder
    row.float_metrics = model.task(run, folder)
    row.float_ok = all(abs(row.float_metrics[k] - v) <= 1e-6 for k, v in model.expected.items())
    if not row.float_ok:
        row.errors.append(f"float metric {row.float_metrics} differs from meta.json {model.expected}")
    ref = nudenet_class_scores(run, folder) if model.folder == "nudenet_320n" else None
    row.seconds_float = time.perf_counter() - t0
    return ref


def quantize_command(model: Path, calib: Path, out: Path, samples: int | None, search: bool,
                     auto: bool) -> list[str]:
    """The ``workbench-cli quantize`` command line this benchmark runs for one model: the job users get
    (issue #14 names ``workbench-cli quantize MODEL --data calib.npz -o out.onnx``), plus this script's
    ``--samples`` / ``--search`` / ``--no-auto``."""
    cli = Path(sys.executable).with_name("workbench-cli")
    head = [str(cli)] if cli.exists() else [sys.executable, "-m", "workbench.cli"]
    return (head + ["quantize", str(model), "--data", str(calib), "-o", str(out)]
            + (["--samples", str(samples)] if samples else []) + (["--search"] if search else [])
            + ([] if auto else ["--no-auto"]))


@dataclass
class CliRun:
    """What one ``workbench-cli quantize`` printed: its ``wrote`` line's unit counts, its recipe choice and
    search lines (without the per-tensor lines), its exit code, stderr and wall time."""

    code: int
    stderr: str
    seconds: float
    units: str = "n/a"
    choice: str = "off"
    search: str = "off"


def run_cli(command: list[str]) -> CliRun:
    """Run ``command`` (:func:`quantize_command`) and read its ``wrote`` / ``recipe choice`` / ``recipe search``
    lines."""
    t0 = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    run = CliRun(done.returncode, done.stderr, time.perf_counter() - t0)
    wrote = re.search(r"\((\d+) of (\d+) node units quantized", done.stdout)
    if wrote:
        run.units = f"{wrote.group(1)}/{wrote.group(2)}"
    for line in done.stderr.splitlines():
        if line.startswith("recipe choice skipped: "):
            run.choice = f"skipped ({line.removeprefix('recipe choice skipped: ')})"
        elif line.startswith("recipe choice: "):
            took = re.search(r"; took ([0-9.]+) s(?: \(([0-9.]+)x its calibration pass\))?$", line)
            chosen = line.removeprefix("recipe choice: ").split(" (", 1)[0]
            wide = re.search(r"; (\w+ activations on \d+ units?|\d+ units? kept float)", line)
            ratio = f" = {took.group(2)}x calibration" if took and took.group(2) else ""
            run.choice = chosen + (f" + {wide.group(1)}" if wide else "") + (f", {took.group(1)} s{ratio}" if took else "")
        elif line.startswith("recipe search skipped: "):
            run.search = f"skipped ({line.removeprefix('recipe search skipped: ')})"
        elif line.startswith("recipe search: "):
            run.search = line.removeprefix("recipe search: ")
    return run


def quant_side(model: CorpusModel, corpus: Path, row: Row, samples: int | None, reference, search: bool,
               auto: bool = True) -> None:
    """Quantize ``model`` with ``workbench-cli quantize`` and measure the file it wrote."""
    folder = corpus / model.folder
    with tempfile.TemporaryDirectory(prefix="corpus_accuracy_") as tmp:
        out = Path(tmp) / "model.onnx"
        cli = run_cli(quantize_command(model.path(corpus), folder / "calib.npz", out, samples, search, auto))
        row.seconds_quantize = cli.seconds
        row.choice, row.search, row.units = (cli.choice if auto else "off"), cli.search, cli.units
        if cli.code != 0:
            last = (cli.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise RuntimeError(f"workbench-cli quantize exited with {cli.code}: {last}")
        written = onnx.load(str(out))
    t1 = time.perf_counter()
    run = session_runner(written)
    kwargs = {"reference": reference} if reference is not None else {}
    row.quant_metrics = model.task(run, folder, **kwargs)
    row.quant_note = fmt_metrics(model, row.quant_metrics)
    try:
        rep = evaluate(api.open_model(model.path(corpus)), written, folder / "eval.npz")
        row.sqnr = ", ".join(f"{o.name[:18]} {o.sqnr_db:.1f}" for o in rep.outputs)
    except WorkbenchError as exc:
        row.errors.append(f"evaluate: {exc}")
    row.seconds_quant_eval = time.perf_counter() - t1


def run_model(model: CorpusModel, corpus: Path, samples: int | None, float_only: bool, search: bool = True,
              auto: bool = True) -> Row:
    row = Row(model.name)
    if model.refuse:
        try:
            api.quantize(api.open_model(model.path(corpus)), api.make_recipe(PRESET),
                         data=str(corpus / model.folder / "calib.npz"), samples=samples)
            row.quant_note = "NOT REFUSED"
            row.errors.append("quantize did not raise AlreadyQuantizedError on an int8 model")
        except AlreadyQuantizedError as exc:
            row.quant_note = f"refused: {exc}"
        except Exception as exc:  # noqa: BLE001 - report any failure in the table
            row.quant_note = f"wrong error {exc.__class__.__name__}"
            row.errors.append(f"quantize: {exc.__class__.__name__}: {exc}")
        return row
    reference = None
    try:
        reference = float_side(model, corpus, row)
    except Exception as exc:  # noqa: BLE001
        row.errors.append(f"float: {exc.__class__.__name__}: {exc}")
    if float_only:
        return row
    try:
        quant_side(model, corpus, row, samples, reference, search, auto)
    except Exception as exc:  # noqa: BLE001
        row.quant_note = f"failed ({exc.__class__.__name__})"
        row.errors.append(f"quantize/eval: {exc.__class__.__name__}: {exc}")
        if not isinstance(exc, WorkbenchError):
            row.errors.append(traceback.format_exc(limit=-3).strip().splitlines()[-3].strip())
    return row


def table(rows: list[Row], models: dict[str, CorpusModel]) -> str:
    lines = ["| model | float metric | quantized metric | int8 units | output SQNR dB | recipe choice | recipe search "
             "| time |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m = models[r.name]
        if m.refuse:
            fl = "n/a (int8 model; CHARSET_OLD not in corpus)"
        else:
            fl = fmt_metrics(m, r.float_metrics) + ("" if r.float_ok else " (MISMATCH vs meta.json)")
        t = (f"float {r.seconds_float:.1f} s, quantize {r.seconds_quantize:.1f} s, "
             f"eval {r.seconds_quant_eval:.1f} s")
        q = r.quant_note.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {r.name} | {fl} | {q} | {r.units} | {r.sqnr} | {r.choice} | {r.search} | {t} |")
    return "\n".join(lines)


def header(samples: int | None) -> str:
    from workbench.core.recipe.hardware import cpu_needs_reduce_range
    from workbench.core.runtime.session import describe_runtime

    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (f"# Corpus accuracy, preset `{PRESET}`\n\n{stamp}; onnxruntime {ort.__version__}, numpy "
            f"{np.__version__}, {platform.machine()} (reduce_range={cpu_needs_reduce_range()}); measured with "
            f"{describe_runtime(True)}; calibration "
            f"samples: {samples or 'all of calib.npz'}. Float metrics are checked against meta.json.\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    p.add_argument("--only", default="", help="run models whose name contains this text")
    p.add_argument("--samples", type=int, default=None, help="calibration samples (default: all)")
    p.add_argument("--float-only", action="store_true")
    p.add_argument("--search", action=argparse.BooleanOptionalAction, default=False,
                   help="run the recipe search first (workbench-cli quantize --search); off by default, as in the CLI")
    p.add_argument("--auto", action=argparse.BooleanOptionalAction, default=True,
                   help="run the recipe choice first (workbench-cli quantize's default; --no-auto as in the CLI)")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "corpus_accuracy.md")
    args = p.parse_args(argv)
    if not args.corpus.is_dir():
        print(f"corpus not found at {args.corpus}", file=sys.stderr)
        return 2
    models = [m for m in corpus_models(args.corpus) if args.only in m.name]
    rows = []
    for m in models:
        print(f"... {m.name}", file=sys.stderr, flush=True)
        rows.append(run_model(m, args.corpus, args.samples, args.float_only, args.search, args.auto))
    text = header(args.samples) + "\n" + table(rows, {m.name: m for m in models}) + "\n"
    failures = [f"- {r.name}: {e}" for r in rows for e in r.errors]
    if failures:
        text += "\n## Failures\n\n" + "\n".join(failures) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".md.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
