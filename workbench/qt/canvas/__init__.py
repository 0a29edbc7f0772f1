"""Graph canvas of the app.

``GraphCanvas`` (view.py) is the public widget. Its pieces: ``worker.LayoutJob`` reads the graph,
lays it out (``workbench.core.graph.layout``) and builds the geometry (``scene_data``) in a thread-pool
thread; ``overview.OverviewItem`` draws all nodes as batched paths when zoomed out;
``items.NodeItem`` (created lazily for the visible area) and ``items.EdgesItem`` draw the details;
``colors`` holds the op / dtype / SQNR palettes.
"""

from workbench.qt.canvas.view import GraphCanvas

__all__ = ["GraphCanvas"]
