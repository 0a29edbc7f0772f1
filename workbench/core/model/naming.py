"""Unique, non-empty node names and unique tensor names across the whole model.

Duplicate or empty names are legal in ONNX for nodes but break anything keyed by name
(onnxruntime refuses duplicate node names; per-node recipes become ambiguous: cases 24 and 01
of ``shared/cases``). Rules:

- a node whose name is already unique keeps it;
- an unnamed node becomes ``<op_type>_<k>``;
- every node of a group sharing one name becomes ``<name>_<k>`` (none keeps the bare name, so
  a recipe naming it cannot silently hit one of them); the group is reported in
  ``ambiguous`` (old name -> new names);
- a tensor defined twice (a second producer, or a subgraph value shadowing an outer one) is
  renamed at its later definition and at the consumers that follow it;
- new names collide with no existing node or tensor name anywhere in the model.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import onnx

from workbench.core.graph.walk import NameAllocator, iter_nodes, subgraphs


@dataclass
class NameChange:
    """One rename: ``kind`` is "node" or "tensor"; ``graph`` is the graph path."""

    kind: str
    old: str
    new: str
    graph: str = ""


def fix_node_names(graph: onnx.GraphProto, names: NameAllocator) -> tuple[list[NameChange], dict[str, list[str]]]:
    """Give every node in ``graph`` and its subgraphs a unique, non-empty name.

    Returns
    -------
    changes : list of NameChange
    ambiguous : dict of str to list of str
        Each non-empty name that several nodes shared -> the new names of those nodes.
    """
    counts = Counter(n.name for _, n in iter_nodes(graph))
    changes: list[NameChange] = []
    ambiguous: dict[str, list[str]] = {}
    for path, node in list(iter_nodes(graph)):
        old = node.name
        if old and counts[old] == 1:
            continue
        new = names.new(old if old else (node.op_type or "node"), always_suffix=True)
        node.name = new
        changes.append(NameChange("node", old, new, path))
        if old:
            ambiguous.setdefault(old, []).append(new)
    return changes, ambiguous


def fix_tensor_names(graph: onnx.GraphProto, names: NameAllocator) -> list[NameChange]:
    """Rename tensors defined more than once so every tensor name is defined exactly once.

    Definitions are graph inputs, initializers and node outputs of every graph; a later
    definition of an already defined name gets a new name, and consumers after it (in the same
    graph and in nested subgraphs) are redirected to the new name.
    """
    changes: list[NameChange] = []
    _fix_graph(graph, "", {}, set(), names, changes)
    return changes


def _fix_graph(graph: onnx.GraphProto, path: str, outer: dict[str, str], defined: set[str],
               names: NameAllocator, changes: list[NameChange]) -> None:
    mapping = dict(outer)  # old name -> current name visible in this scope

    def define(name: str) -> str:
        if not name:
            return name
        if name in defined:
            new = names.new(name)
            changes.append(NameChange("tensor", name, new, path))
            mapping[name] = new
            return new
        defined.add(name)
        mapping.pop(name, None)
        return name

    for vi in graph.input:
        vi.name = define(vi.name)
    input_names = {vi.name for vi in graph.input}
    for t in graph.initializer:
        if t.name not in input_names:  # an initializer also listed as an input is one tensor
            t.name = define(t.name)
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name in mapping:
                node.input[i] = mapping[name]
        for attr_name, sub in subgraphs(node):
            sub_path = f"{path}/{node.name}/{attr_name}" if path else f"{node.name}/{attr_name}"
            _fix_graph(sub, sub_path, mapping, defined, names, changes)
        for i, name in enumerate(node.output):
            node.output[i] = define(name)
    for vi in graph.output:
        if vi.name in mapping:
            vi.name = mapping[vi.name]
    renamed = {c.old for c in changes}
    keep = [vi for vi in graph.value_info if vi.name not in renamed]
    if len(keep) != len(graph.value_info):
        del graph.value_info[:]
        graph.value_info.extend(keep)
