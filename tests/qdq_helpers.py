"""Helpers for the planner / writer tests: MinMax calibration, running models, op counts.

Calibration uses ``workbench.core.calibration.calibrate.calibrate`` when it exists; until then a tiny
onnxruntime run that adds the planned tensors as graph outputs and takes min/max.
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from bundled_example import EXAMPLE
from onnx import TensorProto, helper, numpy_helper

from workbench.core.formats.numerics import compute_qparams


class FeedList:
    """The feeds as a calibration data source (each feed is one sample, run as given)."""

    can_batch = False

    def __init__(self, feeds: list[dict[str, np.ndarray]]):
        self.feeds = feeds

    def num_samples(self) -> int:
        return len(self.feeds)

    def batches(self, batch_size: int):
        yield from self.feeds


def calib_qparams(model, plan, feeds: list[dict[str, np.ndarray]]) -> dict:
    """qparams of every tensor in ``plan.activations``: ``workbench.core.calibration.calibrate`` when it
    exists (with each spec's observer), else per-tensor MinMax from one onnxruntime run."""
    try:
        from workbench.core.calibration.calibrate import calibrate
    except ImportError:
        return minmax_qparams(model, plan, feeds)
    if not plan.activations:
        return {}
    return calibrate(model, plan, FeedList(feeds)).qparams()


def minmax_qparams(model, plan, feeds: list[dict[str, np.ndarray]]) -> dict:
    """Per-tensor MinMax qparams of every tensor in ``plan.activations`` (no calibrator needed)."""
    proto = onnx.ModelProto()
    proto.CopyFrom(model.proto)
    have = {o.name for o in proto.graph.output}
    names = list(plan.activations)
    if not names:
        return {}
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


def ran_as(path, ops) -> dict[str, str]:
    """Node name -> op type of the nodes of ``ops`` (a predicate on the op type) in onnxruntime's optimized
    graph of the model at ``path`` (ORT_ENABLE_EXTENDED: its fusions into integer kernels, no layout changes)."""
    with tempfile.TemporaryDirectory() as d:
        so = ort.SessionOptions()
        so.optimized_model_filepath = os.path.join(d, "opt.onnx")
        so.log_severity_level = 3
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        return {n.name: n.op_type for n in onnx.load(so.optimized_model_filepath).graph.node if ops(n.op_type)}


def optimized_ops(proto: onnx.ModelProto, folder) -> list[str]:
    """The op types of onnxruntime's optimized graph of ``proto`` (default session options: ORT_ENABLE_ALL, its
    fusions and layout changes), in graph order; the graph is written to ``folder`` (a test's tmp_path)."""
    so = ort.SessionOptions()
    so.optimized_model_filepath = os.path.join(folder, "ort_optimized.onnx")
    ort.InferenceSession(proto.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return [n.op_type for n in onnx.load(so.optimized_model_filepath).graph.node]


def op_counts(proto: onnx.ModelProto) -> collections.Counter:
    return collections.Counter(n.op_type for n in proto.graph.node)


# -- tiny models -------------------------------------------------------------------------------
def _vi(name, shape):
    return helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, shape)


def _init(rng, name, shape, scale=0.3):
    return onnx.numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def tiny_model(kind: str, opset: int = 21, seed: int = 0) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A one- or two-op model and a feed: conv, matmul, gemm, add, concat, maxpool."""
    rng = np.random.default_rng(seed)
    inits, inputs = [], [_vi("X", [2, 4, 6, 6])]
    feeds = {"X": rng.standard_normal((2, 4, 6, 6)).astype(np.float32)}
    if kind == "conv":
        inits = [_init(rng, "W", [8, 4, 3, 3]), _init(rng, "B", [8], 0.1)]
        nodes = [helper.make_node("Conv", ["X", "W", "B"], ["c"], name="conv", pads=[1] * 4),
                 helper.make_node("Relu", ["c"], ["Y"], name="relu")]
        out = [_vi("Y", [2, 8, 6, 6])]
    elif kind == "maxpool":
        inits = [_init(rng, "W1", [8, 4, 3, 3]), _init(rng, "B1", [8], 0.1),
                 _init(rng, "W2", [8, 8, 1, 1]), _init(rng, "B2", [8], 0.1)]
        nodes = [helper.make_node("Conv", ["X", "W1", "B1"], ["c1"], name="conv1", pads=[1] * 4),
                 helper.make_node("MaxPool", ["c1"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
                 helper.make_node("Conv", ["p", "W2", "B2"], ["Y"], name="conv2")]
        out = [_vi("Y", [2, 8, 3, 3])]
    elif kind in ("matmul", "gemm"):
        inputs = [_vi("X", [3, 16])]
        feeds = {"X": rng.standard_normal((3, 16)).astype(np.float32)}
        if kind == "matmul":
            inits = [_init(rng, "W", [16, 8])]
            nodes = [helper.make_node("MatMul", ["X", "W"], ["Y"], name="mm")]
        else:
            inits = [_init(rng, "W", [8, 16]), _init(rng, "B", [8], 0.1)]
            nodes = [helper.make_node("Gemm", ["X", "W", "B"], ["Y"], name="gemm", transB=1)]
        out = [_vi("Y", [3, 8])]
    elif kind in ("add", "concat"):
        inputs = [_vi("X", [2, 4, 6, 6]), _vi("Z", [2, 4, 6, 6])]
        feeds["Z"] = (rng.standard_normal((2, 4, 6, 6)) * 2 + 1).astype(np.float32)
        if kind == "add":
            nodes = [helper.make_node("Add", ["X", "Z"], ["Y"], name="add")]
            out = [_vi("Y", [2, 4, 6, 6])]
        else:
            nodes = [helper.make_node("Concat", ["X", "Z"], ["Y"], name="concat", axis=1)]
            out = [_vi("Y", [2, 8, 6, 6])]
    else:
        raise ValueError(kind)
    g = helper.make_graph(nodes, kind, inputs, out, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10 if opset >= 21 else 8
    return m, feeds


def quantize_tiny(proto: onnx.ModelProto, feeds: dict, preset: str = "cpu-u8s8", **recipe_kw):
    """(prepared model, plan, QdqResult) of ``proto`` calibrated on ``feeds``."""
    from workbench.core.model.load import prepare_proto
    from workbench.core.planning.plan import build_plan
    from workbench.core.recipe.recipe import Recipe
    from workbench.core.writers.registry import write_model

    model = prepare_proto(proto)
    plan = build_plan(model, Recipe(preset=preset, **recipe_kw))
    qp = calib_qparams(model, plan, [feeds]) if plan.mode == "static" else None
    return model, plan, write_model(model, plan, qp)


def save_matmul_model(path, rng: np.random.Generator):
    """A one-MatMul model (X [N, 4] @ W [4, 3], W drawn from ``rng``) saved at ``path``; returns ``path``."""
    w = numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "W")
    g = helper.make_graph([helper.make_node("MatMul", ["X", "W"], ["Y"], name="mm")], "g",
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 3])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(path))
    return path


def ort_rows_reader(name: str, rows: np.ndarray):
    """An onnxruntime ``CalibrationDataReader`` feeding input ``name`` one row of ``rows`` at a time (batch 1),
    for ``onnxruntime.quantization.quantize_static``."""
    from onnxruntime.quantization import CalibrationDataReader

    class Rows(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter([{name: rows[i:i + 1]} for i in range(len(rows))])

        def get_next(self):
            return next(self.feeds, None)

    return Rows()


def ort_digits_exports(folder: Path) -> dict[str, Path]:
    """The bundled digits_cnn quantized by onnxruntime's ``quantize_static`` on its first 8 calibration rows,
    as QDQ and as QOperator: ``{"QDQ": path, "QOperator": path}`` in ``folder``."""
    from onnxruntime.quantization import QuantFormat, quantize_static

    rows = np.load(EXAMPLE / "digits_cnn_calib.npz")["input"][:8]
    paths = {}
    for fmt in (QuantFormat.QDQ, QuantFormat.QOperator):
        paths[fmt.name] = folder / f"digits_{fmt.name}.onnx"
        quantize_static(str(EXAMPLE / "digits_cnn.onnx"), str(paths[fmt.name]), ort_rows_reader("input", rows),
                        quant_format=fmt)
    return paths


def matmul16_files(folder: Path) -> tuple[Path, Path]:
    """``mm.onnx`` (x [N, 16] @ w [16, 16], one MatMul named ``mm``, opset 17, w drawn with seed 3) and its
    ``calib.npz`` (8 rows of x, the same generator) in ``folder``; returns their paths."""
    rng = np.random.default_rng(3)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "mm",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 16])],
                              [numpy_helper.from_array(rng.standard_normal((16, 16)).astype(np.float32), "w")])
    src = Path(folder) / "mm.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), src)
    data = Path(folder) / "calib.npz"
    np.savez(data, x=rng.standard_normal((8, 16)).astype(np.float32))
    return src, data


def cache_quantized_slower(src: Path, data: Path) -> None:
    """A cached latency measurement of ``src`` quantized by cpu-u8s8 on ``data`` (:func:`matmul16_files`): the
    quantized MatMul 5.5 % slower than float (0.8862 vs 0.84 ms a run, 9 runs), in the default latency cache."""
    import json

    from workbench.core import api
    from workbench.core.runtime import latency

    model = api.open_model(str(src))
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(data))
    key = latency.cache_key(model.proto.SerializeToString(), result.proto.SerializeToString(),
                            {"x": np.load(data)["x"][:1]})
    latency.default_cache_dir().mkdir(parents=True, exist_ok=True)
    (latency.default_cache_dir() / f"{key}.json").write_text(json.dumps(
        {"float_s": 0.84e-3, "quant_s": 0.8862e-3, "runs": 9, "float_median_s": 0.84e-3, "quant_median_s": 0.8862e-3}))


@contextlib.contextmanager
def alarm(seconds: int, error: type[Exception] = TimeoutError):
    """Raise ``error`` in this (main) thread when the block has not finished within ``seconds`` (SIGALRM)."""
    def fire(signum, frame):
        raise error(f"hang: no result within {seconds} s")
    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def attention_model(mask_fill: float | None = None, t: int = 8, d: int = 16, seed: int = 0) -> onnx.ModelProto:
    """One attention block, ``Y = softmax(Q Kᵀ [+ mask]) V Wo`` with ``Q, K, V = X Wq, X Wk, X Wv``
    (X: float32 ``[N, t, d]``); ``mask_fill`` fills the upper triangle of an additive causal mask
    initializer (``-inf`` or ``finfo(float32).min``), None leaves the mask out."""
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array((rng.standard_normal((d, d)) * 0.3).astype(np.float32), n)
             for n in ("Wq", "Wk", "Wv", "Wo")]
    nodes = [helper.make_node("MatMul", ["X", w], [o], name=f"{o.lower()}_proj")
             for w, o in (("Wq", "Q"), ("Wk", "K"), ("Wv", "V"))]
    nodes += [helper.make_node("Transpose", ["K"], ["Kt"], perm=[0, 2, 1], name="k_t"),
              helper.make_node("MatMul", ["Q", "Kt"], ["S"], name="qk")]
    scores = "S"
    if mask_fill is not None:
        m = np.zeros((t, t), np.float32)
        m[np.triu_indices(t, 1)] = mask_fill
        inits.append(numpy_helper.from_array(m, "mask"))
        nodes.append(helper.make_node("Add", ["S", "mask"], ["Sm"], name="add_mask"))
        scores = "Sm"
    nodes += [helper.make_node("Softmax", [scores], ["P"], axis=-1, name="softmax"),
              helper.make_node("MatMul", ["P", "V"], ["O"], name="pv"),
              helper.make_node("MatMul", ["O", "Wo"], ["Y"], name="o_proj")]
    g = helper.make_graph(nodes, "attention", [_vi("X", ["N", t, d])], [_vi("Y", ["N", t, d])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def tiny_conv_files(tmp_path) -> tuple:
    """A one-Conv model (input x [N, 3, 8, 8], 4 output channels, opset 17) saved as ``m.onnx`` and 8 rows
    of x as ``calib.npz`` in ``tmp_path``: ``(model path, data path)``."""
    w = numpy_helper.from_array(np.random.default_rng(0).normal(size=(4, 3, 3, 3)).astype(np.float32), "W")
    g = helper.make_graph([helper.make_node("Conv", ["x", "W"], ["y"], name="conv", pads=[1, 1, 1, 1])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 8, 8])], [w])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    data = tmp_path / "calib.npz"
    np.savez(data, x=np.random.default_rng(1).random((8, 3, 8, 8)).astype(np.float32))
    return path, data


_CLI_MODELS = {  # kind: (node kwargs, x shape after N, y shape after N, W shape)
    "matmul": ({"op_type": "MatMul", "name": "mm"}, [4], [8], (4, 8)),
    "conv": ({"op_type": "Conv", "name": "conv", "pads": [1, 1, 1, 1]}, [3, 8, 8], [4, 8, 8], (4, 3, 3, 3)),
}


def cli_model_files(folder: Path, kind: str = "matmul", calib: bool = True, row_axis: bool = False,
                    eval_labels: np.ndarray | None = None) -> Path:
    """A one-node float model ``m.onnx`` in ``folder`` (opset 17, W drawn by ``default_rng(0)``), returns its path.

    ``kind`` "matmul": x [N, 4] @ W [4, 8] -> y [N, 8] (node mm); "conv": x [N, 3, 8, 8] -> Conv W [4, 3, 3, 3],
    pads 1 -> y [N, 4, 8, 8] (node conv). The same rng then draws 8 rows of x in [0, 1) for ``calib.npz``
    (``calib``; float32 [8, *x], or [8, 1, *x] with ``row_axis``) and 8 more for ``eval.npz`` with
    ``gt_label=eval_labels`` (when given), in that order.
    """
    node, x_shape, y_shape, w_shape = _CLI_MODELS[kind]
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.normal(size=w_shape).astype(np.float32), "W")
    n = helper.make_node(inputs=["x", "W"], outputs=["y"], **node)
    g = helper.make_graph([n], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", *x_shape])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", *y_shape])], [w])
    path = folder / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    if calib:
        rows = (8, 1, *x_shape) if row_axis else (8, *x_shape)
        np.savez(folder / "calib.npz", x=rng.random(rows).astype(np.float32))
    if eval_labels is not None:
        np.savez(folder / "eval.npz", x=rng.random((8, *x_shape)).astype(np.float32), gt_label=eval_labels)
    return path


def conv_bn_mul_add_model(seed: int = 0, flatten: bool = False) -> onnx.ModelProto:
    """x [1, 3, 8, 8] -> Conv conv1 -> BatchNormalization bn1 -> Relu relu1 -> Conv conv2 -> Mul mul2
    (per-channel) -> Add add2 (per-channel) -> Relu relu2 -> y [1, 384] (opset 13, every weight an initializer
    drawn by ``default_rng(seed)``). The last node, flat, is a Reshape whose shape comes from an unnamed
    Constant, or a Flatten with ``flatten``."""
    rng = np.random.default_rng(seed)

    def init(name, a):
        return numpy_helper.from_array(np.asarray(a, np.float32), name)

    inits = [init("w1", rng.normal(size=(4, 3, 3, 3)) * .3), init("b1", rng.normal(size=4) * .1),
             init("g", rng.uniform(.5, 1.5, 4)), init("be", rng.normal(size=4) * .1),
             init("mu", rng.normal(size=4) * .1), init("var", rng.uniform(.5, 1.5, 4)),
             init("w2", rng.normal(size=(6, 4, 3, 3)) * .3), init("b2", rng.normal(size=6) * .1),
             init("s", rng.uniform(.5, 1.5, (1, 6, 1, 1))), init("t", rng.normal(size=(1, 6, 1, 1)) * .1)]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], "conv1", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c1", "g", "be", "mu", "var"], ["n1"], "bn1"),
             helper.make_node("Relu", ["n1"], ["r1"], "relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], "conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Mul", ["c2", "s"], ["m2"], "mul2"),
             helper.make_node("Add", ["m2", "t"], ["a2"], "add2"),
             helper.make_node("Relu", ["a2"], ["r2"], "relu2")]
    if flatten:
        nodes.append(helper.make_node("Flatten", ["r2"], ["y"], "flat"))
    else:
        shape = numpy_helper.from_array(np.array([1, -1], np.int64))
        nodes += [helper.make_node("Constant", [], ["shape"], value=shape),
                  helper.make_node("Reshape", ["r2", "shape"], ["y"], "flat")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 384])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def cli_quantized(corpus, folder: str, out, *flags: str, model: str = "model_opset17.onnx", capsys=None):
    """``workbench-cli quantize`` of the corpus model ``folder/model`` on 8 rows of its calib.npz into ``out``
    (``flags`` added); asserts it succeeded, drops what it printed when ``capsys`` is given, returns ``out``."""
    from workbench.cli import main

    d = corpus / folder
    assert main(["quantize", str(d / model), "--data", str(d / "calib.npz"), "--samples", "8", *flags,
                 "-o", str(out)]) == 0
    if capsys is not None:
        capsys.readouterr()
    return out


def matmul_nbits_model(level: int | None, k: int = 64, n: int = 8, block: int = 32, seed: int = 0):
    """A float32 MatMulNBits (4 bits, uint8 zero points 8) with ``accuracy_level`` ``level`` (None: unset),
    its input and the dequantized weight ``[K, N]`` (ContribOperators.md layout: B ``[N, blocks, block / 2]``,
    low nibble first)."""
    rng = np.random.default_rng(seed)
    q = rng.integers(0, 16, size=(n, k), dtype=np.uint8)
    scales = rng.uniform(0.01, 0.05, size=(n, k // block)).astype(np.float32)
    packed = (q[:, 0::2] | (q[:, 1::2] << 4)).reshape(n, k // block, block // 2)
    w = ((q.astype(np.float32) - 8) * np.repeat(scales, block, axis=1)).T
    attrs = {"K": k, "N": n, "bits": 4, "block_size": block}
    if level is not None:
        attrs["accuracy_level"] = level
    node = helper.make_node("MatMulNBits", ["x", "w", "s"], ["y"], name="mm", domain="com.microsoft", **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, n])],
                          [numpy_helper.from_array(packed, "w"), numpy_helper.from_array(scales.reshape(-1), "s")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)])
    return m, rng.standard_normal((4, k)).astype(np.float32), w
