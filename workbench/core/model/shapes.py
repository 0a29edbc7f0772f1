"""Shape inference for preparation: ``onnx.shape_inference`` with data propagation, symbolic
dims kept, run on a weight-less skeleton of the model so that a large model is not serialised
twice (the trick onnx_ir's ShapeInferencePass uses, done here on the proto)."""

from __future__ import annotations

import onnx
from onnx import helper

from workbench.core.graph.contrib_stand_ins import stand_in_contrib_ops
from workbench.core.graph.dim_names import named_dim
from workbench.core.graph.shell import model_shell
from workbench.core.graph.walk import iter_graphs
from workbench.core.io.tensor_bytes import tensor_nbytes


def infer_shapes(proto: onnx.ModelProto, notes: list[str]) -> onnx.ModelProto:
    """``onnx.shape_inference`` (data propagation on, symbolic dims kept) run on a weight-less
    skeleton, so a large model is not serialised twice, with onnxruntime's contrib ops stood in for by ONNX
    ops of the same output types and shapes (:func:`~workbench.core.graph.contrib_stand_ins.stand_in_contrib_ops`:
    a QOperator or MatMulNBits model's tensors after its QLinearSigmoid / QLinearMul / MatMulNBits ... get
    shapes); ``value_info`` and output types are copied back into ``proto``."""
    sk = skeleton(proto)[0]
    stood = stand_in_contrib_ops(sk)
    try:
        inferred = onnx.shape_inference.infer_shapes(sk, strict_mode=False, data_prop=True)
    except Exception as exc:  # noqa: BLE001 - shape inference is best effort; fails on odd ops
        notes.append(f"Shape inference incomplete ({exc.__class__.__name__}: {str(exc).splitlines()[0][:200]}).")
        return proto
    # the stand-ins' own tensors (a MatMulNBits' [K, N] weight shape, a cast's input) are not the model's
    ours = ({o for n in proto.graph.node for o in n.output} | {t.name for t in proto.graph.initializer}
            if stood else None)
    for (path, g), (_, gi) in zip(iter_graphs(proto.graph), iter_graphs(inferred.graph), strict=True):
        del g.value_info[:]
        g.value_info.extend(vi for vi in gi.value_info if ours is None or path or vi.name in ours)
        for out, out_i in zip(g.output, gi.output, strict=True):
            out.CopyFrom(out_i)
    return proto


_SKELETON_BYTES = 1 << 12

def shared_dim_name(param: str | None) -> bool:
    """True when the dim_param ``param`` names a size several dimensions share ("batch", "sequence"):
    those dimensions must agree. False for an unnamed dimension, a placeholder that only says the size
    is unknown (``""``, ``"?"``, ``"-1"``, ``"dynamic"``, ``unk__3`` from shape inference) and an expression:
    each of those is an unknown of its own (PaddleOCR's ``[-1, 3, "?", "?"]`` has a height and a width that
    differ). The rule the canvas and the inspector show names by: :func:`workbench.core.graph.dim_names.named_dim`."""
    return named_dim(param)


def skeleton(proto: onnx.ModelProto) -> tuple[onnx.ModelProto, list[onnx.TensorProto]]:
    """Copy of ``proto`` whose large main-graph initializers are replaced by typed graph inputs.

    Returns
    -------
    skeleton : onnx.ModelProto
        Same top-level fields, nodes, inputs, outputs and value_info; initializers over 4 KiB
        become graph inputs of the same type and shape (not listed twice).
    stripped : list of onnx.TensorProto
        The original large initializers (references into ``proto``, not copies).
    """
    sk = model_shell(proto, onnx.ModelProto)
    g, src = sk.graph, proto.graph
    g.sparse_initializer.extend(src.sparse_initializer)
    listed = {vi.name for vi in src.input}
    stripped = []
    for t in src.initializer:
        if tensor_nbytes(t) > _SKELETON_BYTES and t.name not in listed:
            g.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
            stripped.append(t)
        else:
            g.initializer.append(t)
    return sk, stripped


def restore_weights(model: onnx.ModelProto, stripped: list[onnx.TensorProto]) -> onnx.ModelProto:
    """Undo :func:`skeleton` on a model derived from it: drop the stand-in inputs, put the
    initializers back (in ``model``, which is returned)."""
    names = {t.name for t in stripped}
    keep = [vi for vi in model.graph.input if vi.name not in names]
    del model.graph.input[:]
    model.graph.input.extend(keep)
    model.graph.initializer.extend(stripped)
    return model
