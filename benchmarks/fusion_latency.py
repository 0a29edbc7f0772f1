"""Latency of our QDQ output under onnxruntime's default optimizations, against
``onnxruntime.quantization.quantize_static`` (same settings: QDQ, uint8 activations, int8
per-channel weights, the same reduce_range) and against the float model.

For digits_cnn (batch 450) and minilm_l6_v2 (batch 8 x 32 tokens): integer-kernel counts after
optimization, median latency of each model, and the ratios ours / quantize_static (target
<= 1.0) and ours / float, all measured in one run, one intra-op thread. Prints only; never asserts.

Run: ``.venv/bin/python benchmarks/fusion_latency.py``
"""

from __future__ import annotations

import collections
import contextlib
import io
import os
import platform
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


def main() -> None:
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
