"""Node positions for the report's graph picture: the canvas's layered layout
(:func:`workbench.core.graph.layout.layout_graph`, igraph's Sugiyama ordering) when igraph is
installed, else the same longest-path layers with nodes in model order inside each layer."""

from __future__ import annotations

import logging

from workbench.core.graph.layout import X_SPACING, Y_SPACING, GraphStructure, assign_layers, layout_graph

log = logging.getLogger(__name__)


def node_positions(structure: GraphStructure) -> dict[str, tuple[float, float]]:
    """Node name -> (x, y) centre in the canvas's scene pixels; ``y`` grows with the layer."""
    try:
        return layout_graph(structure, use_cache=False)
    except ImportError:  # igraph is in the app's extra; the CLI may run without it
        log.info("report: igraph not installed; nodes keep model order inside each layer")
    layers = assign_layers(len(structure.names), structure.edges)
    slot: dict[int, int] = {}
    pos = {}
    for name, layer in zip(structure.names, layers, strict=True):
        i = slot.get(layer, 0)
        slot[layer] = i + 1
        pos[name] = (i * X_SPACING, layer * Y_SPACING)
    return pos
