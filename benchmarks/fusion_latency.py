"""Latency of our QDQ output under onnxruntime's default optimizations, against
``onnxruntime.quantization.quantize_static`` (same settings: QDQ, uint8 activations, int8
per-channel weights, the same reduce_range) and against the float model.

For digits_cnn (batch 450) and minilm_l6_v2 (batch 8 x 32 tokens): integer-kernel counts after
optimization, median latency of each model, and the ratios ours / quantize_static (target
<= 1.0) and ours / float, all measured in one run, one intra-op thread. Then, for every corpus model, quantized / float
latency of what ``workbench-cli quantize MODEL --data calib.npz`` writes, on the first calibration
sample, from ``--rounds`` measurements of :func:`workbench.core.runtime.latency.measure` (each the
fastest of alternating float / quantized runs, 1 thread). The float side is the model as the core prepares
it (constants lifted, BatchNormalization and affine Mul / Add folded: what the latency check compares with
and what ``quantize`` writes when it keeps every unit float), which can run faster than the file as given
(ppocrv4_rec: 0.90-0.93x the file's latency), so the ratio against the file as given is printed too. Figures: the ratio of the fastest runs over all
measurements, the median and range of the per-measurement ratios, the same ratio of the fastest
thread CPU times (steadier under load), and the load average (the CPU flags and core count head the
table). Prints only; never asserts.

Run: ``.venv/bin/python benchmarks/fusion_latency.py [--corpus-only] [--only NAME] [--rounds 5]``
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from workbench.cli import main as cli_main  # noqa: E402
from workbench.core import api  # noqa: E402
from workbench.core.graph.quantized_ops import INTEGER_KERNELS  # noqa: E402
from workbench.core.pipeline.latency_check import latency_feed  # noqa: E402
from workbench.core.runtime.latency import measure  # noqa: E402
from workbench.core.runtime.session import describe_runtime  # noqa: E402

CORPUS = Path(os.environ.get("WORKBENCH_SHARED", ROOT.parent / "shared")) / "corpus" / "models"


class _Reader(CalibrationDataReader):
    def __init__(self, feeds):
        self.it = iter(feeds)

    def get_next(self):
        return next(self.it, None)


def _session(model: str | bytes) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def _kernels(model: str | bytes) -> int:
    with tempfile.TemporaryDirectory() as d:
        so = ort.SessionOptions()
        so.optimized_model_filepath = os.path.join(d, "opt.onnx")
        ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        m = onnx.load(so.optimized_model_filepath, load_external_data=False)
    c = collections.Counter(n.op_type for n in m.graph.node)
    return sum(v for k, v in c.items() if k in INTEGER_KERNELS)


def _latency(sess: ort.InferenceSession, feed: dict, repeats: int) -> float:
    sess.run(None, feed)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        sess.run(None, feed)
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def bench(name: str, path: Path, calib: Path, samples: int, feeds: list[dict], feed: dict, repeats: int) -> None:
    """``ours`` is the file ``workbench-cli quantize MODEL --data CALIB --samples N -o OUT`` writes (run
    here through the CLI's own entry point: the default preset, its guards and the export's static
    shapes); ``feeds`` are the same rows for onnxruntime's quantize_static."""
    rr = api.make_recipe("cpu-u8s8").reduce_range  # what the CLI's default recipe picks on this CPU
    with tempfile.TemporaryDirectory() as d:
        mine = os.path.join(d, "ours.onnx")
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            rc = cli_main(["quantize", str(path), "--data", str(calib), "--samples", str(samples), "-o", mine])
        if rc != 0:
            raise SystemExit(f"{name}: workbench-cli quantize exited {rc}")
        ours = Path(mine).read_bytes()
        out = os.path.join(d, "ort.onnx")
        quantize_static(str(path), out, _Reader(feeds), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True,
                        reduce_range=rr)
        ref = Path(out).read_bytes()
    models = {"float": str(path), "ours": ours, "quantize_static": ref}
    sessions = {k: _session(v) for k, v in models.items()}
    lat = {k: [] for k in models}
    for _ in range(3):  # interleave to spread machine noise over all three
        for k, s in sessions.items():
            lat[k].append(_latency(s, feed, repeats))
    med = {k: float(np.median(v)) for k, v in lat.items()}
    print(f"{name}: integer kernels ours {_kernels(ours)}, quantize_static {_kernels(ref)}; reduce_range={rr}")
    print(f"  latency ms: float {med['float'] * 1e3:.3f}, ours {med['ours'] * 1e3:.3f}, "
          f"quantize_static {med['quantize_static'] * 1e3:.3f}")
    print(f"  ours / quantize_static = {med['ours'] / med['quantize_static']:.3f} (target <= 1.0); "
          f"ours / float = {med['ours'] / med['float']:.3f}")


#: Every float corpus model (ddddocr_common_old_int8 is already quantized: quantize refuses it).
CORPUS_FILES = [
    ("digits_cnn", "model_opset17.onnx"), ("digits_cnn", "model_opset13.onnx"),
    ("digits_mlp", "model_opset17.onnx"), ("digits_mlp", "model_opset13.onnx"),
    ("digits_transformer", "model_opset17.onnx"), ("digits_transformer", "model_opset14.onnx"),
    ("ppocr_mobile_v2_cls", "model.onnx"), ("ppocrv4_rec", "model.onnx"), ("nudenet_320n", "model.onnx"),
    ("minilm_l6_v2", "model.onnx"), ("silero_vad", "silero_vad.onnx"), ("silero_vad", "silero_vad_op18_ifless.onnx"),
    ("silero_vad", "silero_vad_16k_op15.onnx"),
]


def cpu_flags() -> str:
    """The machine, its core count and whether the CPU has AVX512-VNNI / AVX-VNNI (from /proc/cpuinfo)."""
    try:
        flags = next((ln.split(":", 1)[1].split() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                      if ln.startswith("flags")), [])
    except OSError:
        flags = []
    vnni = [f for f in ("avx512_vnni", "avx_vnni") if f in flags]
    return f"{platform.machine()}, {os.cpu_count()} cores, {'/'.join(vnni) or 'no VNNI'}"


def islands_left_float(stderr: str) -> int:
    """How many islands the CLI's ``stderr`` says the latency fallback left float: one per "kept float with its
    island" line, plus the N of the "N more nodes likewise" line that follows one (the CLI groups three or more)."""
    islands, after_island = 0, False
    for line in stderr.splitlines():
        grouped = re.search(r"(\d+) more nodes? likewise \(latency-kept-float\)", line)
        if "kept float with its island" in line:
            islands += 1
        elif grouped and after_island:
            islands += int(grouped.group(1))
        after_island = "kept float with its island" in line
    return islands


def corpus_ratios(only: str | None, rounds: int) -> None:
    """quantized / float latency of the CLI's default quantize of every corpus model (see the module docstring)."""
    print(f"quantized / float latency, 1 thread, first calibration sample, {rounds} measurements of alternating "
          f"runs; {cpu_flags()}; onnxruntime {ort.__version__}; load average {os.getloadavg()[0]:.1f} "
          "(rough: the machine is shared)")
    print("  min = fastest quantized run / fastest float run over all measurements; median = of the per-measurement "
          "ratios")
    for folder, file in CORPUS_FILES:
        if only and only not in f"{folder}/{file}":
            continue
        model = api.open_model(str(CORPUS / folder / file))
        calib = str(CORPUS / folder / "calib.npz")
        with tempfile.TemporaryDirectory() as d:  # the file the CLI writes with its defaults
            out = os.path.join(d, "ours.onnx")
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                rc = cli_main(["quantize", str(CORPUS / folder / file), "--data", calib, "-o", out])
            if rc != 0:
                raise SystemExit(f"{folder}/{file}: workbench-cli quantize exited {rc}")
            qb = Path(out).read_bytes()
        islands = islands_left_float(err.getvalue())
        units = onnx.load_from_string(qb).graph.node
        dq = sum(n.op_type == "DequantizeLinear" for n in units)
        feed = latency_feed(model, calib)
        fb = model.proto.SerializeToString()
        lats = [measure(fb, qb, feed, budget_s=2.0) for _ in range(rounds)]
        as_given = (CORPUS / folder / file).read_bytes()  # the corpus file itself, read once
        given = [measure(as_given, qb, feed, budget_s=2.0) for _ in range(rounds)]
        ratios = sorted(x.ratio for x in lats)
        best = min(x.quant_s for x in lats) / min(x.float_s for x in lats)
        cpu = min(x.quant_cpu_s for x in lats) / min(x.float_cpu_s for x in lats)
        print(f"  {folder}/{file}: min {best:.3f}, median {float(np.median(ratios)):.3f} (range {ratios[0]:.3f}-"
              f"{ratios[-1]:.3f}); thread CPU time {cpu:.3f}; float "
              f"{min(x.float_s for x in lats) * 1e3:.3f} ms fastest, {lats[0].runs} runs each; against the file as "
              f"given: min {min(x.quant_s for x in given) / min(x.float_s for x in given):.3f}, median "
              f"{float(np.median([x.ratio for x in given])):.3f}, float {min(x.float_s for x in given) * 1e3:.3f} ms; "
              f"load average {os.getloadavg()[0]:.1f}; {dq} DequantizeLinear, {islands} island(s) left float "
              "by the latency fallback)", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus-only", action="store_true", help="only the per-model quantized / float table")
    ap.add_argument("--only", help="corpus models whose folder/file contains this")
    ap.add_argument("--rounds", type=int, default=5, help="measurements per model (median printed)")
    args = ap.parse_args()
    if not args.corpus_only:
        versus_quantize_static()
    corpus_ratios(args.only, args.rounds)


def versus_quantize_static() -> None:
    print(f"measured with {describe_runtime(True)}, 1 intra-op thread; {platform.machine()}, "
          f"{os.cpu_count()} cores")
    d = CORPUS / "digits_cnn"
    calib = np.load(d / "calib.npz")["input"]
    x = np.load(d / "eval.npz")["input"]
    bench("digits_cnn", d / "model_opset17.onnx", d / "calib.npz", 100,
          [{"input": calib[i:i + 20]} for i in range(0, 100, 20)], {"input": x}, repeats=50)
    d = CORPUS / "minilm_l6_v2"
    c = np.load(d / "calib.npz")
    feeds = [{k: c[k][i:i + 16] for k in c.files if not k.startswith("gt_")} for i in range(0, 64, 16)]
    bench("minilm_l6_v2", d / "model.onnx", d / "calib.npz", 64, feeds, {k: v[:8] for k, v in feeds[0].items()},
          repeats=20)


if __name__ == "__main__":
    main()
