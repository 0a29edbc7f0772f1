"""Graph canvas of the app.

``GraphCanvas`` (view.py) is the public widget. Its pieces: ``worker.LayoutJob`` reads the graph,
groups its nodes and lays them out (``workbench.core.graph.hierarchy`` / ``group_layout``; flat:
``layout``) and builds the geometry (``scene_data``) in a child process, whose result
``transfer`` carries back in pieces that ``slices`` unpickles between GUI events;
``overview.OverviewItem`` draws the nodes meeting the exposed area as batched rectangles when zoomed out; ``groups_item.GroupsItem``
draws group boxes and frames (``group_figures`` gives their aggregate text and fill; zoomed out,
``group_labels`` places and draws their titles at a readable screen size);
``items.NodeItem`` (created lazily for the visible area) and ``items.EdgesItem`` draw the details;
``minimap.Minimap`` is the thumbnail in the corner; ``colors`` holds the op / dtype / SQNR palettes.
"""

from workbench.qt.canvas.view import GraphCanvas

__all__ = ["GraphCanvas"]
