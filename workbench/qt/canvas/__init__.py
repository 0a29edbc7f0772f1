"""Graph canvas of the app: ``GraphCanvas`` (a QGraphicsView) and its items."""

from workbench.qt.canvas.view import GraphCanvas

__all__ = ["GraphCanvas"]
