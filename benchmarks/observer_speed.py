"""Micro-benchmark: cost of one observer update in ns per element (prints only, no asserts).

Usage: ``.venv/bin/python benchmarks/observer_speed.py [--hw 112] [--repeat 7] [--model M.onnx --data calib.npz]``

For context it also times a float Conv (3x3, 64->64 channels) in onnxruntime that produces a
tensor of the same size, i.e. what calibration pays per element for inference, and prints the
ratio ``(inference + update) / inference`` for each observer. With ``--model`` it runs a real
model with every float intermediate tensor exposed as an output and prints, per observer kind,
the time of updating one observer per tensor relative to plain inference of the model.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from workbench.core.calibration.observers import make_observer
from workbench.core.recipe.spec import QuantSpec

SPECS = {
    "minmax per-tensor": QuantSpec(dtype="uint8", symmetric=False, observer="minmax"),
    "minmax per-channel": QuantSpec(dtype="int8", granularity="per_channel", axis=1, observer="minmax"),
    "percentile": QuantSpec(dtype="uint8", symmetric=False, observer="percentile"),
    "entropy": QuantSpec(dtype="uint8", symmetric=False, observer="entropy"),
    "mse": QuantSpec(dtype="uint8", symmetric=False, observer="mse"),
}


def best_time(fn, repeat: int) -> float:
    """Mean seconds per call over ``repeat`` calls, best of 3 rounds (buffered work is included)."""
    fn()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - t0) / repeat)
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


def model_overhead(model_path: str, data_path: str | None, repeat: int) -> None:
    """Observer cost on every float tensor of a real model, relative to its plain inference."""
    import onnx

    proto = onnx.shape_inference.infer_shapes(onnx.load(model_path))
    plain = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    known = {o.name for o in proto.graph.output}
    for vi in proto.graph.value_info:
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT and vi.name not in known:
            proto.graph.output.append(vi)
    exposed = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in plain.get_inputs()]
    if data_path:
        npz = np.load(data_path)
        feed = {n: npz[n][:8] for n in names}
    else:
        rng = np.random.default_rng(0)
        feed = {i.name: rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
                for i in plain.get_inputs()}
    t_plain = best_time(lambda: plain.run(None, feed), repeat)
    t_exposed = best_time(lambda: exposed.run(None, feed), repeat)
    outs = [o for o in exposed.run(None, feed) if isinstance(o, np.ndarray) and o.dtype == np.float32]
    n = sum(o.size for o in outs)
    print(f"{model_path}: {len(outs)} float tensors, {n} elements per run; plain inference "
          f"{t_plain * 1e3:.2f} ms, with tensors exposed {t_exposed * 1e3:.2f} ms")
    for label, spec in SPECS.items():
        if spec.granularity != "per_tensor":
            continue
        observers = [make_observer(spec) for _ in outs]

        def update_all(observers=observers):
            for obs, x in zip(observers, outs, strict=True):
                obs.update(x)

        t = best_time(update_all, repeat)
        print(f"  {label:20s} updates {t * 1e3:8.2f} ms = {t / t_plain:5.2f} x plain inference; "
              f"(exposed run + updates) / plain = {(t_exposed + t) / t_plain:5.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hw", type=int, default=112, help="spatial size of the (1, 64, hw, hw) tensor")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--model", help="also measure on every float tensor of this ONNX model")
    ap.add_argument("--data", help="npz with the model's inputs (first 8 rows are fed)")
    args = ap.parse_args()
    if args.model:
        model_overhead(args.model, args.data, args.repeat)
        return
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
