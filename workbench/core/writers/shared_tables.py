"""Tables shared by a quantized unit and a float node are stored once (tied embeddings).

A language model often ties its token embedding to its output projection: one ``[vocab, hidden]``
initializer is read by a ``Gather`` (the embedding lookup, never quantized) and by the LM head's
``Gemm`` / ``MatMul`` (quantized). Writing the head's integer copy and keeping the float table for
the Gather stores the table twice, and the "quantized" file is then larger than the float one.

:func:`share_tables` rewires every float node still reading such a table to a
``DequantizeLinear`` of the integer copy (the same scale and zero point as the quantized unit, and
a ``Transpose`` where the writer stored the copy transposed), so the file holds the table once,
in its quantized dtype. The Gather then reads exactly the values the quantized head uses; the
cost is one dequantization of the table per run (onnxruntime does not constant-fold
DequantizeLinear, so its QDQ fusions still see it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import onnx
from onnx import helper

from workbench.core.graph.index import NameAllocator
from workbench.core.io.tensor_bytes import model_tensor_bytes
from workbench.core.issues import IssueCode, PlanIssue
from workbench.core.wording import plural


@dataclass
class TableCopy:
    """How a float weight was stored quantized: the DequantizeLinear inputs (integer tensor,
    scale, zero point or ""), its attributes (axis, block_size) and whether the integer copy is
    the transpose of the float table (a ``Gemm(transB=1)`` weight written as ``[K, N]``)."""

    inputs: list[str]
    attrs: dict = field(default_factory=dict)
    transposed: bool = False
    unit: str = ""


def share_tables(proto: onnx.ModelProto, copies: dict[str, TableCopy], alloc: NameAllocator,
                 units: set[str]) -> list[PlanIssue]:
    """Rewire main-graph nodes that still read a float table in ``copies`` to its dequantized copy.

    Nodes named in ``units`` (planned units, e.g. an excluded MatMul on the same weight) are left
    alone: an excluded unit keeps its float weight, as asked.

    Parameters
    ----------
    proto : onnx.ModelProto
        The written model, modified in place (new DequantizeLinear / Transpose nodes first, so the
        graph stays topologically sorted; the float initializer is dropped later as unused).
    copies : dict of str to TableCopy
        Float weight name -> its first integer copy, as recorded by the writer.

    Returns
    -------
    list of PlanIssue
        One ``shared-table`` info per table, naming the table, the quantized unit and the float
        readers.
    """
    graph = proto.graph
    readers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            if name in copies and node.name not in units:
                readers.setdefault(name, []).append(node)
    new: list[onnx.NodeProto] = []
    issues = []
    for name, nodes in readers.items():
        c = copies[name]
        out = alloc.new(f"{name}_dequantized_shared")
        inputs = c.inputs if c.inputs[-1] else c.inputs[:-1]  # MX: no zero point
        new.append(helper.make_node("DequantizeLinear", inputs, [out], name=alloc.new(f"{name}_DequantizeLinear_shared"), **c.attrs))
        if c.transposed:
            t_out = alloc.new(f"{name}_shared")
            new.append(helper.make_node("Transpose", [out], [t_out], perm=[1, 0], name=alloc.new(f"{name}_Transpose_shared")))
            out = t_out
        for node in nodes:
            for k, i in enumerate(node.input):
                if i == name:
                    node.input[k] = out
        who = ", ".join(sorted({n.name for n in nodes}))
        issues.append(PlanIssue(c.unit, "info", f"table {name!r} is read by this quantized unit and by float "
                                f"{plural(len(nodes), 'node')} {who}: stored once, quantized; they read its DequantizeLinear "
                                "(the same scale)", code=IssueCode.SHARED_TABLE))
    if new:
        nodes = list(graph.node)
        del graph.node[:]
        graph.node.extend(new + nodes)
    return issues


def size_issue(written: onnx.ModelProto, original: onnx.ModelProto) -> list[PlanIssue]:
    """A warning when the written model's tensors take more bytes than the float model's
    (:func:`~workbench.core.io.tensor_bytes.model_tensor_bytes`, initializers of every graph)."""
    after, before = model_tensor_bytes(written), model_tensor_bytes(original)
    if after <= before:
        return []
    return [PlanIssue("", "warning", f"the quantized model's tensors take {after:,} bytes, more than the float "
                      f"model's {before:,}: small weights gain scale / zero-point tensors, or a weight is "
                      "stored both float and quantized; exclude the units whose weights are tiny",
                      code=IssueCode.LARGER_THAN_FLOAT)]
