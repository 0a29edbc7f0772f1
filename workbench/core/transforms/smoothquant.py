"""SmoothQuant scale migration: move activation outlier channels into the weights.

For a layer ``y = X W`` with a constant weight, SmoothQuant (Xiao et al., "SmoothQuant: Accurate
and Efficient Post-Training Quantization for Large Language Models", ICML 2023, arXiv:2211.10438,
eq. 4) rewrites it as ``y = (X diag(s)^-1) (diag(s) W)`` with one factor per input channel ``j``::

    s_j = max|X_j| ** alpha / max|W_j| ** (1 - alpha)

so channels of ``X`` with a wide range shrink and a per-tensor activation grid fits all of them,
while ``W`` (quantized per output channel) absorbs the factor. ``alpha`` (0..1) sets how much of
the difficulty moves to the weights. Here the division of ``X`` is an explicit float ``Mul`` by
``1 / s`` inserted before the layer (``<node>.smooth``, element-wise work that stays in float), so
the rewrite is valid whatever produces ``X`` (Hardswish, LayerNorm, a residual Add).

Supported layers: ``MatMul`` with a constant 2-D weight ``[K, N]`` (channel = last axis of ``X``),
``Conv`` with ``group == 1`` (channel = axis 1, weight ``[Cout, Cin, ...]``) and depthwise ``Conv``
(``group == Cin == Cout``, weight ``[C, 1, ...]``; there the weight's per-output-channel scale
absorbs ``s`` at no cost). ``max|X_j|`` comes from a float run over calibration data.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import numpy as np
import onnx
from onnx import helper, numpy_helper

from workbench.core.errors import RecipeError
from workbench.core.graph.index import attrs_of
from workbench.core.progress import CancelToken
from workbench.core.runtime.session import add_outputs, make_session

log = logging.getLogger(__name__)

#: Suffix of the inserted Mul nodes (and their 1/s initializers).
SUFFIX = ".smooth"


def _channel_axis(node: onnx.NodeProto, w: np.ndarray) -> int | None:
    """Axis of the weight that runs over input channels, or None when the layer is not supported."""
    if node.op_type == "MatMul":
        return 0 if w.ndim == 2 else None
    if node.op_type == "Conv" and w.ndim >= 3:
        group = int(attrs_of(node).get("group", 1))
        if group == 1:
            return 1
        if w.shape[1] == 1 and w.shape[0] == group:
            return 0  # depthwise, channel multiplier 1
    return None


def smoothable(proto: onnx.ModelProto, op_types: Iterable[str] = ("Conv", "MatMul"),
               exclude: Iterable[str] = ()) -> dict[str, int]:
    """Node name -> weight channel axis for the layers :func:`smooth_proto` can rewrite.

    A layer qualifies when its input 0 is not an initializer, its input 1 is a float32
    initializer of a supported shape (see the module docstring) and its name is not in ``exclude``.
    """
    inits = {i.name: i for i in proto.graph.initializer}
    skip = set(exclude)
    out: dict[str, int] = {}
    for node in proto.graph.node:
        if node.op_type not in op_types or node.name in skip or len(node.input) < 2:
            continue
        if node.input[0] in inits or node.input[1] not in inits:
            continue
        init = inits[node.input[1]]
        if init.data_type != onnx.TensorProto.FLOAT:
            continue
        axis = _channel_axis(node, numpy_helper.to_array(init))
        if axis is not None:
            out[node.name] = axis
    return out


def activation_absmax(proto: onnx.ModelProto, nodes: Iterable[str], batches: Iterable[dict[str, np.ndarray]],
                      cancel: CancelToken | None = None) -> dict[str, np.ndarray]:
    """Per-channel ``max|X_j|`` (float64, shape ``[C]``) of input 0 of each node, over ``batches``.

    The channel axis is 1 for Conv and the last axis for MatMul. Non-finite values are ignored.
    """
    wanted = set(nodes)
    targets = [n for n in proto.graph.node if n.name in wanted]
    tensors = sorted({n.input[0] for n in targets})
    sess = make_session(add_outputs(proto, tensors))
    acc: dict[str, np.ndarray] = {}
    for feed in batches:
        if cancel is not None:
            cancel.check()
        values = dict(zip(tensors, sess.run(tensors, feed), strict=True))
        for n in targets:
            x = np.abs(np.asarray(values[n.input[0]], dtype=np.float64))
            axis = 1 if n.op_type == "Conv" else x.ndim - 1
            x = np.where(np.isfinite(x), x, 0.0)
            m = x.max(axis=tuple(i for i in range(x.ndim) if i != axis))
            acc[n.name] = m if n.name not in acc else np.maximum(acc[n.name], m)
    return acc


def smoothing_factors(x_absmax: np.ndarray, w: np.ndarray, axis: int, alpha: float) -> np.ndarray:
    """``s_j = max|X_j|**alpha / max|W_j|**(1 - alpha)`` (Xiao et al. 2023, eq. 4), float64 ``[C]``.

    ``max|W_j|`` is taken over every weight axis except ``axis`` (the input-channel axis). Channels
    with a zero (or non-finite) activation or weight range get ``s_j = 1``.

    Raises
    ------
    RecipeError
        ``alpha`` outside [0, 1].
    """
    if not 0.0 <= alpha <= 1.0:
        raise RecipeError(f"SmoothQuant alpha {alpha} is outside [0, 1].", hint="Use e.g. 0.5.")
    w_absmax = np.abs(w.astype(np.float64)).max(axis=tuple(i for i in range(w.ndim) if i != axis))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        s = np.power(x_absmax, alpha) / np.power(w_absmax, 1.0 - alpha)
    ok = np.isfinite(s) & (s > 0) & (x_absmax > 0) & (w_absmax > 0)
    return np.where(ok, s, 1.0)


def smooth_proto(proto: onnx.ModelProto, x_absmax: dict[str, np.ndarray], alpha: float = 0.5) -> onnx.ModelProto:
    """A copy of ``proto`` where each node of ``x_absmax`` computes ``(X / s) (s W)``.

    Inserts ``Mul(X, 1/s)`` named ``<node>.smooth`` before the node and stores ``W * s`` (broadcast
    along the weight's input-channel axis) as a new initializer ``<weight>.<node>.smooth``, so
    weights shared with other nodes are untouched. ``proto`` is not modified.
    """
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    g = out.graph
    inits = {i.name: i for i in g.initializer}
    new_nodes: list[onnx.NodeProto] = []
    for node in g.node:
        if node.name in x_absmax and node.input[1] in inits:
            w = numpy_helper.to_array(inits[node.input[1]])
            axis = _channel_axis(node, w)
            if axis is not None:
                new_nodes.append(_smooth_node(g, node, w, axis, x_absmax[node.name], alpha))
        new_nodes.append(node)
    del g.node[:]
    g.node.extend(new_nodes)
    return out


def _smooth_node(g: onnx.GraphProto, node: onnx.NodeProto, w: np.ndarray, axis: int, x_absmax: np.ndarray,
                 alpha: float) -> onnx.NodeProto:
    s = smoothing_factors(x_absmax, w, axis, alpha)
    shape = [1] * w.ndim
    shape[axis] = s.size
    w_new = (w.astype(np.float64) * s.reshape(shape)).astype(np.float32)
    w_name = f"{node.input[1]}.{node.name}{SUFFIX}"
    g.initializer.append(numpy_helper.from_array(w_new, w_name))
    inv_shape = [s.size] if node.op_type == "MatMul" else [1, s.size] + [1] * (w.ndim - 2)
    inv_name = f"{node.name}{SUFFIX}.inv_scale"
    g.initializer.append(numpy_helper.from_array((1.0 / s).astype(np.float32).reshape(inv_shape), inv_name))
    # alpha in the tensor name: a calibration cache made with another alpha never matches it
    x_new = f"{node.input[0]}.{node.name}{SUFFIX}.alpha{alpha:g}"
    mul = helper.make_node("Mul", [node.input[0], inv_name], [x_new], name=f"{node.name}{SUFFIX}")
    node.input[0] = x_new
    node.input[1] = w_name
    log.debug("SmoothQuant %s: s in [%.3g, %.3g]", node.name, float(s.min()), float(s.max()))
    return mul
