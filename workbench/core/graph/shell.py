"""The weight-less shell of a model proto, for any generated ``ModelProto`` class.

Imports nothing: the quick ``inspect`` path builds it from onnx's protobuf classes loaded without the
``onnx`` package (:mod:`workbench.core.inspection.quick`), preparation from ``onnx.ModelProto``
(:func:`workbench.core.model.shapes.skeleton`); both must serialize the same bytes.
"""

from __future__ import annotations


def model_shell(proto, model_cls):
    """A new ``model_cls`` with ``proto``'s top-level fields (ir_version, producer, domain,
    model_version, doc_string, opset_import, metadata_props, functions) and its main graph's name,
    doc_string, nodes, inputs, outputs and value_info; no initializers (the caller adds them)."""
    sk = model_cls(ir_version=proto.ir_version, producer_name=proto.producer_name,
                   producer_version=proto.producer_version, domain=proto.domain,
                   model_version=proto.model_version, doc_string=proto.doc_string)
    sk.opset_import.extend(proto.opset_import)
    sk.metadata_props.extend(proto.metadata_props)
    sk.functions.extend(proto.functions)
    g, src = sk.graph, proto.graph
    g.name = src.name
    g.doc_string = src.doc_string
    g.node.extend(src.node)
    g.input.extend(src.input)
    g.output.extend(src.output)
    g.value_info.extend(src.value_info)
    return sk
