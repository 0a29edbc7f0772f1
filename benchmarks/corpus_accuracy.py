"""Corpus accuracy benchmark: task metric of every corpus model in float and after ``cpu-u8s8``.

For each ONNX file of ``../shared/corpus/models`` this script measures the float task metric
(checked against meta.json), quantizes through the public API (``open_model``,
``make_recipe("cpu-u8s8")``, the recipe choice ``choose_recipe`` (on by default, as in the CLI; ``--no-auto``
skips it), the per-tensor observer search ``search_recipe`` with ``--search`` (off by default, as in the CLI),
``quantize(model, recipe, data=calib.npz, samples=N, calibration=<the choice's>)``: the choice's
calibration covers every row, so quantize calibrates at most the few tensors a latency placement or a
16-bit boundary adds; the "recipe choice" column gives the choice's seconds and their ratio to its
calibration pass, which the choice includes), runs
``result.proto`` in onnxruntime for the same task metric, and compares the first output of both
models with :func:`workbench.core.analysis.evaluate.evaluate`. It prints a Markdown table and writes it to
``benchmarks/results/corpus_accuracy.md``. Timings are informative only.

Usage::

    .venv/bin/python benchmarks/corpus_accuracy.py [--only digits] [--samples 64] [--float-only] [--no-auto] [--search]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import traceback
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
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


def quant_side(model: CorpusModel, corpus: Path, row: Row, samples: int | None, reference, search: bool,
               auto: bool = True) -> None:
    folder = corpus / model.folder
    t0 = time.perf_counter()
    prepared = api.open_model(model.path(corpus))
    recipe = api.make_recipe(PRESET)
    chosen = api.choose_recipe(prepared, recipe, str(folder / "calib.npz"), samples=samples) if auto else None
    recipe = chosen.recipe if chosen is not None else recipe
    found = api.search_recipe(prepared, recipe, str(folder / "calib.npz"), samples=samples) if search else None
    result = api.quantize(prepared, found.recipe if found else recipe, data=str(folder / "calib.npz"),
                          samples=samples, calibration=chosen.calibration if chosen is not None else None,
                          latency_check=True)  # as workbench-cli quantize does by default
    cal = result.calibration.seconds if result.calibration is not None else 0.0
    if chosen is not None and not chosen.skipped:
        # the choice's pass over every row is the job's calibration pass; the quantize after it reuses it and
        # at most observes a few tensors a latency placement or a 16-bit boundary adds (a shorter pass)
        cal = chosen.calibration_seconds
    if chosen is not None:
        row.choice = (f"skipped ({chosen.skipped})" if chosen.skipped else
                      f"{chosen.chosen}, {chosen.seconds:.1f} s" + (f" = {chosen.seconds / cal:.1f}x calibration"
                                                                    if cal > 0 else ""))
    if found is not None:
        row.search = (f"skipped ({found.skipped})" if found.skipped else
                      f"{len(found.changed)}/{len(found.choices)} changed, {found.seconds:.1f} s"
                      + (f" = {found.seconds / cal:.1f}x calibration" if cal > 0 else ""))
    row.seconds_quantize = time.perf_counter() - t0
    units = list(result.plan.units.values())
    row.units = f"{sum(not u.excluded for u in units)}/{len(units)}"
    t1 = time.perf_counter()
    run = session_runner(result.proto)
    kwargs = {"reference": reference} if reference is not None else {}
    row.quant_metrics = model.task(run, folder, **kwargs)
    row.quant_note = fmt_metrics(model, row.quant_metrics)
    try:
        rep = evaluate(prepared, result.proto, folder / "eval.npz")
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
