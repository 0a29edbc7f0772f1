"""The ids Model Explorer gives the nodes of an ONNX file, and which of them is each of our units.

Model Explorer (``ai-edge-model-explorer``) reads ONNX through its ONNX adapter
(``model-explorer-onnx``). From its source (version 0.4): the adapter reads the file with onnx,
converts it to onnx_ir and runs onnx_ir's ``NameFixPass``, which keeps every name that is unique
in its graph and gives unnamed and repeated nodes new ones; a node's id is then its (fixed) name,
and the main graph's id is the graph's name (``"<main>"`` when it has none). We run the same
onnx_ir pass on the user's file, so the ids agree without depending on the viewer.

Our units are named after the prepared model (:mod:`workbench.core.model.load` renames unnamed
and repeated nodes its own way), so a unit's head node is found in the file by its original name
when that name is unique there, and otherwise by its first output tensor.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import onnx
import onnx_ir as ir
from onnx_ir.passes.common import NameFixPass

from workbench.core.errors import ModelError

#: Id of a main graph without a name (the adapter's choice).
UNNAMED_GRAPH_ID = "<main>"


@dataclass
class ExplorerIds:
    """Model Explorer's view of one ONNX file's main graph.

    Attributes
    ----------
    graph_id : str
        Id of the main graph (the key of a per-model node-data file).
    node_ids : list of str
        Id of every node of the main graph, in file order.
    by_name : dict of str to str
        Node name in the file (unique, non-empty names only) -> id.
    by_output : dict of str to str
        Output tensor name in the file -> id of the node that produces it.
    """

    graph_id: str
    node_ids: list[str] = field(default_factory=list)
    by_name: dict[str, str] = field(default_factory=dict)
    by_output: dict[str, str] = field(default_factory=dict)

    def find(self, name: str, output: str | None = None) -> str | None:
        """Id of the node called ``name`` in the file, else of the producer of ``output``; None when neither."""
        if name in self.by_name:
            return self.by_name[name]
        return self.by_output.get(output) if output else None


def explorer_ids(path: str | Path) -> ExplorerIds:
    """Read ``path`` (an ONNX file; external data is not loaded) as Model Explorer's ONNX adapter names it.

    Raises
    ------
    ModelError
        The file cannot be read as ONNX.
    """
    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # onnx raises DecodeError, OSError, ... for a bad file
        raise ModelError(f"{path}: cannot be read as ONNX for the Model Explorer node ids ({exc}).",
                         hint="Pass the float model file the figures were measured on.") from exc
    before = [(n.name, list(n.output)) for n in proto.graph.node]
    model = ir.serde.deserialize_model(proto)
    NameFixPass()(model)
    ids = [n.name for n in model.graph]
    counts = Counter(name for name, _ in before)
    out = ExplorerIds(model.graph.name or UNNAMED_GRAPH_ID, ids)
    for (name, outputs), node_id in zip(before, ids, strict=True):
        if name and counts[name] == 1:
            out.by_name[name] = node_id
        for t in outputs:
            if t:
                out.by_output.setdefault(t, node_id)
    return out
