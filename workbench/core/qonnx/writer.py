"""QONNX writer: a quantization plan as ``Quant`` / ``BipolarQuant`` / ``FloatQuant`` nodes.

The plan is first written as QDQ by :mod:`workbench.core.writers.qdq` (same placement, aliases,
int32 biases, names), with QONNX-only dtypes carried in 8-bit storage, then rewritten by
:func:`workbench.core.qonnx.convert.qdq_to_qonnx` with the true dtype of every tensor. Weights and
biases end as ``Quant(float initializer)`` (QONNX style): where the original float weights give
the same integers they are restored, otherwise the dequantized values are kept (same integers).

Every quantized tensor gets a ``quantization_annotation`` entry: ``finn_datatype`` (what qonnx
reads; ``SCALEDINT<b>`` unless scale 1 and zero point 0, so qonnx never rounds a scaled tensor),
``QUANT_DATATYPE`` (the integer grid: INT8, UINT8, INT4, INT3, BIPOLAR, FLOAT<4,3,7>) and the
ONNX keys ``SCALE_TENSOR`` / ``ZERO_POINT_TENSOR``. Op definitions: the ``qonnx`` package,
``qonnx/custom_op/general/{quant,bipolar_quant,floatquant}.py`` (domain
``qonnx.custom_op.general``, opset 1).
"""

from __future__ import annotations

import logging

import numpy as np
import onnx
from onnx import helper, numpy_helper

from workbench.core.errors import ExportError
from workbench.core.formats.qtypes import QType, get_qtype
from workbench.core.graph.index import NameAllocator
from workbench.core.graph.static_shapes import fold_fixed_nodes, infer_static
from workbench.core.qonnx.reader import DOMAIN, DOMAINS

log = logging.getLogger(__name__)

QONNX_OPSET = 1
#: FloatQuant parameters (exponent bits, mantissa bits, exponent bias, max value) of the OCP
#: float8 formats: E4M3FN saturates at 448, E5M2 at 57344 (the all-ones exponents are Inf/NaN).
FLOAT_FORMATS = {"float8e4m3fn": (4, 3, 7, 448.0), "float8e5m2": (5, 2, 15, 57344.0)}


def grid_name(qt: QType, bits: int | None = None) -> str:
    """QONNX DataType name of the integer / minifloat grid (INT8, UINT4, BIPOLAR, FLOAT<4,3,7>)."""
    if qt.name == "bipolar":
        return "BIPOLAR"
    if qt.is_float:
        e, m, b, _ = FLOAT_FORMATS[qt.name]
        return f"FLOAT<{e},{m},{b}>"
    return f"{'INT' if qt.signed else 'UINT'}{bits or qt.bits}"


class QonnxBuilder:
    """Makes QONNX nodes, their parameter initializers and annotations."""

    def __init__(self, alloc: NameAllocator):
        self.alloc = alloc
        self.inits: list[onnx.TensorProto] = []
        self.annotations: list[tuple[str, dict[str, str]]] = []

    def param(self, base: str, value: np.ndarray) -> str:
        """A float32 initializer holding ``value``, one per node input (qonnx's cleanup would
        otherwise un-share them, ``GiveUniqueParameterTensors``, at O(N^2) cost)."""
        name = self.alloc.new(base)
        self.inits.append(numpy_helper.from_array(np.asarray(value, np.float32), name))
        return name

    def data(self, base: str, value: np.ndarray) -> str:
        """A float32 initializer for tensor data (never shared)."""
        name = self.alloc.new(base)
        self.inits.append(numpy_helper.from_array(np.asarray(value, np.float32), name))
        return name

    def quant(self, x: str, out: str, scale: np.ndarray, zero_point: np.ndarray, qt: QType,
              base: str) -> onnx.NodeProto:
        """``Quant(x, scale, zeropt, bitwidth)`` for integer type ``qt`` (narrow=0, ROUND = half even).

        ``narrow`` stays 0 because QuantizeLinear saturates to the full range of the type; the
        symmetric range only decides the scale. ``scale`` / ``zero_point`` must broadcast to x.
        """
        if qt.name == "bipolar":
            return self.bipolar(x, out, scale, base)
        if qt.is_float:
            return self.float_quant(x, out, scale, qt, base)
        s = self.param(f"{base}_scale", scale)
        z = self.param(f"{base}_zeropt", np.asarray(zero_point, np.float32))
        b = self.param(f"{base}_bitwidth", np.float32(qt.bits))
        node = helper.make_node("Quant", [x, s, z, b], [out], name=self.alloc.new(f"{base}_Quant"),
                                domain=DOMAIN, signed=int(qt.signed), narrow=0, rounding_mode="ROUND")
        unit = bool(np.all(np.asarray(scale) == 1) and np.all(np.asarray(zero_point) == 0))
        self._annotate(out, qt, unit, s, z)
        return node

    def bipolar(self, x: str, out: str, scale: np.ndarray, base: str) -> onnx.NodeProto:
        s = self.param(f"{base}_scale", scale)
        self._annotate(out, get_qtype("bipolar"), bool(np.all(np.asarray(scale) == 1)), s, None)
        return helper.make_node("BipolarQuant", [x, s], [out], name=self.alloc.new(f"{base}_BipolarQuant"),
                                domain=DOMAIN)

    def float_quant(self, x: str, out: str, scale: np.ndarray, qt: QType, base: str) -> onnx.NodeProto:
        e, m, bias, top = FLOAT_FORMATS[qt.name]
        ins = [x, self.param(f"{base}_scale", scale), self.param(f"{base}_exponent_bitwidth", np.float32(e)),
               self.param(f"{base}_mantissa_bitwidth", np.float32(m)),
               self.param(f"{base}_exponent_bias", np.float32(bias)), self.param(f"{base}_max_val", np.float32(top))]
        self._annotate(out, qt, False, ins[1], None)
        return helper.make_node("FloatQuant", ins, [out], name=self.alloc.new(f"{base}_FloatQuant"),
                                domain=DOMAIN, rounding_mode="ROUND", has_inf=int(qt.name == "float8e5m2"),
                                has_nan=1, has_subnormal=1, saturation=1)

    def _annotate(self, tensor: str, qt: QType, unit_scale: bool, scale: str, zero_point: str | None) -> None:
        grid = grid_name(qt)
        if qt.is_float:
            finn = grid
        elif unit_scale:
            finn = grid
        else:
            finn = "FLOAT32" if qt.name == "bipolar" else f"SCALEDINT<{qt.bits}>"
        keys = {"finn_datatype": finn, "QUANT_DATATYPE": grid, "SCALE_TENSOR": scale}
        if zero_point is not None:
            keys["ZERO_POINT_TENSOR"] = zero_point
        self.annotations.append((tensor, keys))

    def finish(self, proto: onnx.ModelProto) -> None:
        """Add the initializers, the annotations and the QONNX opset import to ``proto``."""
        proto.graph.initializer.extend(self.inits)
        for tensor, keys in self.annotations:
            ann = proto.graph.quantization_annotation.add()
            ann.tensor_name = tensor
            for k, v in keys.items():
                ann.quant_parameter_tensor_names.add(key=k, value=v)
        if not any(o.domain == DOMAIN for o in proto.opset_import):
            proto.opset_import.append(helper.make_opsetid(DOMAIN, QONNX_OPSET))


# -- writing a plan ----------------------------------------------------------------------------------


















def with_static_shapes(proto: onnx.ModelProto, input_shapes: dict[str, list[int]], *,
                       fold_constants: bool = True) -> onnx.ModelProto:
    """Copy of a QONNX model ready for the ``qonnx`` package's executor, ``cleanup_model`` and
    ``inference_cost``: fixed input shapes, a ``value_info`` for every tensor, fixed-value nodes
    folded.

    qonnx needs every tensor's static shape; its ``InferShapes`` gets there but is quadratic in
    the number of tensors, and its ``FoldConstants`` folds one node per pass, each pass costing
    O(edges x tensors): digits_transformer's 130 shape-arithmetic nodes took cleanup_model 126 s
    CPU, 5-6 s once folded here. Here one ONNX shape inference with data propagation (QONNX nodes seen
    as ``Identity``) gives the shapes, and :func:`workbench.core.graph.static_shapes.fold_fixed_nodes`
    folds the shape arithmetic in one onnxruntime run. QONNX nodes are never folded.
    ``value_info`` also covers the initializers read by standard nodes (qonnx runs each node as
    a one-node onnxruntime model; QONNX nodes read their parameters from the context).

    Parameters
    ----------
    proto : onnx.ModelProto
        QONNX model (not modified).
    input_shapes : dict of str to list of int
        Static shape of each graph input to fix.
    fold_constants : bool
        Fold the standard nodes of fixed value into initializers (see above).

    Raises
    ------
    ExportError
        An input name is not a graph input.
    """
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    graph_inputs = {i.name: i for i in out.graph.input}
    for name, shape in input_shapes.items():
        if name not in graph_inputs:
            raise ExportError(f"{name!r} is not an input of the model.", hint=f"Use one of {list(graph_inputs)}.")
        dims = graph_inputs[name].type.tensor_type.shape
        del dims.dim[:]
        for d in shape:
            dims.dim.add().dim_value = int(d)
    if fold_constants:
        n, inferred = fold_fixed_nodes(out, opaque_domains=DOMAINS, drop_declared=True)
        log.info("QONNX static copy: %d fixed-value nodes folded", n)
    else:
        inferred = infer_static(out, DOMAINS, drop_declared=True)
    del out.graph.value_info[:]
    declared = {i.name for i in list(out.graph.input) + list(out.graph.output)}
    out.graph.value_info.extend(v for v in inferred.graph.value_info if v.name not in declared)
    known = declared | {v.name for v in out.graph.value_info}
    std_inputs = {i for n in out.graph.node if n.domain not in DOMAINS for i in n.input}
    out.graph.value_info.extend(helper.make_tensor_value_info(i.name, i.data_type, list(i.dims))
                                for i in out.graph.initializer if i.name not in known and i.name in std_inputs)
    outs = {o.name: o for o in inferred.graph.output}
    for o in out.graph.output:
        if o.name in outs:
            o.CopyFrom(outs[o.name])
    return out
