"""Micro-benchmark: cost of one observer update in ns per element (prints only, no asserts).

Usage: ``.venv/bin/python benchmarks/observer_speed.py [--hw 112] [--repeat 7]``

For context it also times a float Conv (3x3, 64->64 channels) in onnxruntime that produces a
tensor of the same size, i.e. what calibration pays per element for inference, and prints the
ratio ``(inference + update) / inference`` for each observer.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from workbench.core.observers import make_observer
from workbench.core.recipe import QuantSpec

SPECS = {
    "minmax per-tensor": QuantSpec(dtype="uint8", symmetric=False, observer="minmax"),
    "minmax per-channel": QuantSpec(dtype="int8", granularity="per_channel", axis=1, observer="minmax"),
    "percentile": QuantSpec(dtype="uint8", symmetric=False, observer="percentile"),
    "entropy": QuantSpec(dtype="uint8", symmetric=False, observer="entropy"),
    "mse": QuantSpec(dtype="uint8", symmetric=False, observer="mse"),
}


def best_time(fn, repeat: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def conv_session(hw: int):
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((64, 64, 3, 3)) * 0.05).astype(np.float32), "W")
    g = helper.make_graph([helper.make_node("Conv", ["X", "W"], ["Y"], pads=[1, 1, 1, 1])], "g",
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 64, hw, hw])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 64, hw, hw])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hw", type=int, default=112, help="spatial size of the (1, 64, hw, hw) tensor")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    sess = conv_session(args.hw)
    feed = {"X": rng.standard_normal((1, 64, args.hw, args.hw)).astype(np.float32)}
    y = np.maximum(sess.run(None, feed)[0], 0)  # a post-ReLU activation
    n = y.size
    t_inf = best_time(lambda: sess.run(None, feed), args.repeat)
    print(f"tensor {y.shape} = {n} elements; float Conv in onnxruntime: {t_inf / n * 1e9:.2f} ns/element")
    print(f"{'observer':22s} {'update ns/elem':>15s} {'(inference+update)/inference':>30s}")
    for label, spec in SPECS.items():
        obs = make_observer(spec)
        t = best_time(lambda obs=obs: obs.update(y), args.repeat)
        print(f"{label:22s} {t / n * 1e9:15.3f} {(t_inf + t) / t_inf:30.3f}")
    small = y[:, :8, :14, :14].copy()
    for label, spec in SPECS.items():
        obs = make_observer(spec)
        t = best_time(lambda obs=obs: obs.update(small), 200)
        print(f"small tensor {small.shape} {label:18s} {t * 1e6:8.1f} us per update (fixed overhead)")
    for label, spec in SPECS.items():
        obs = make_observer(spec)
        obs.update(y)
        t = best_time(obs.compute_range, 3)
        print(f"compute_range {label:18s} {t * 1e3:8.2f} ms (once per tensor)")


if __name__ == "__main__":
    main()
