"""Helpers for the planner / writer tests: MinMax calibration, running models, op counts.

Calibration uses ``workbench.core.calibrate.calibrate`` when it exists; until then a tiny
onnxruntime run that adds the planned tensors as graph outputs and takes min/max.
"""

from __future__ import annotations

import collections
import os
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

from workbench.core.numerics import compute_qparams


def calib_qparams(model, plan, feeds: list[dict[str, np.ndarray]]) -> dict:
    """Per-tensor MinMax qparams of every tensor in ``plan.activations``."""
    proto = onnx.ModelProto()
    proto.CopyFrom(model.proto)
    have = {o.name for o in proto.graph.output}
    names = list(plan.activations)
    for t in names:
        if t not in have:
            proto.graph.output.append(helper.make_empty_tensor_value_info(t))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(proto.SerializeToString(), so, providers=["CPUExecutionProvider"])
    lo = {t: np.inf for t in names}
    hi = {t: -np.inf for t in names}
    for f in feeds:
        outs = sess.run(names, f)
        for t, v in zip(names, outs, strict=True):
            if v.size:
                lo[t] = min(lo[t], float(np.min(v)))
                hi[t] = max(hi[t], float(np.max(v)))
    out = {}
    for t, spec in plan.activations.items():
        a, b = (lo[t], hi[t]) if np.isfinite(lo[t]) else (0.0, 0.0)
        out[t] = compute_qparams(a, b, spec.dtype, symmetric=spec.symmetric,
                                 reduce_range=spec.reduce_range, power_of_two=spec.power_of_two)
    return out


def session(proto_or_path, optimize: bool, save_to: str | None = None) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize
                                   else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    so.intra_op_num_threads = 1
    if save_to:
        so.optimized_model_filepath = save_to
    src = proto_or_path.SerializeToString() if isinstance(proto_or_path, onnx.ModelProto) else str(proto_or_path)
    return ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])


def run(proto_or_path, feeds: dict, optimize: bool = False) -> dict[str, np.ndarray]:
    sess = session(proto_or_path, optimize)
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds), strict=True))


def optimized_op_counts(proto_or_path) -> collections.Counter:
    """Op histogram of the model after onnxruntime's default (all) optimizations."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "opt.onnx")
        session(proto_or_path, optimize=True, save_to=out)
        m = onnx.load(out, load_external_data=False)
    return collections.Counter(n.op_type for n in m.graph.node)


def op_counts(proto: onnx.ModelProto) -> collections.Counter:
    return collections.Counter(n.op_type for n in proto.graph.node)
