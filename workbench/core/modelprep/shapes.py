"""Shape inference for preparation: ``onnx.shape_inference`` with data propagation, symbolic
dims kept, run on a weight-less skeleton of the model so that a large model is not serialised
twice (the trick onnx_ir's ShapeInferencePass uses, done here on the proto)."""

from __future__ import annotations

import onnx
from onnx import helper

from workbench.core.modelprep.graphs import iter_graphs


def infer_shapes(proto: onnx.ModelProto, notes: list[str]) -> onnx.ModelProto:
    """``onnx.shape_inference`` (data propagation on, symbolic dims kept) run on a weight-less
    skeleton, so a large model is not serialised twice; ``value_info`` and output types are
    copied back into ``proto``."""
    try:
        inferred = onnx.shape_inference.infer_shapes(_skeleton(proto), strict_mode=False, data_prop=True)
    except Exception as exc:  # noqa: BLE001 - shape inference is best effort; fails on odd ops
        notes.append(f"Shape inference incomplete ({exc.__class__.__name__}: {str(exc).splitlines()[0][:200]}).")
        return proto
    for (_, g), (_, gi) in zip(iter_graphs(proto.graph), iter_graphs(inferred.graph), strict=True):
        del g.value_info[:]
        g.value_info.extend(gi.value_info)
        for out, out_i in zip(g.output, gi.output, strict=True):
            out.CopyFrom(out_i)
    return proto


_SKELETON_BYTES = 1 << 12


def _skeleton(proto: onnx.ModelProto) -> onnx.ModelProto:
    """Copy of ``proto`` whose large main-graph initializers are replaced by typed graph inputs."""
    sk = onnx.ModelProto(ir_version=proto.ir_version)
    sk.opset_import.extend(proto.opset_import)
    sk.functions.extend(proto.functions)
    g, src = sk.graph, proto.graph
    g.name = src.name
    g.node.extend(src.node)
    g.input.extend(src.input)
    g.output.extend(src.output)
    g.value_info.extend(src.value_info)
    listed = {vi.name for vi in src.input}
    for t in src.initializer:
        if t.ByteSize() > _SKELETON_BYTES:
            if t.name not in listed:
                g.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
        else:
            g.initializer.append(t)
    return sk
