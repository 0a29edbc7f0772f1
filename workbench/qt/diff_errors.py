"""The Errors dock follows the shown tab: its bars are of the graph that tab draws, its outline the tab's selection.

Per tab (:func:`shown_view`): the model's graph, a diff tab of the open model and the tab of its exported file show
every bar and outline the unit of the tab's selection (the diff tab's float pane; the exported file keeps the float
model's node names); a subgraph (If / Loop / Scan body) tab shows the bars of its own nodes' units, or says it has
none (:data:`NO_SUBGRAPH_FIGURES`: units inside bodies are not measured one by one); the Netron tab shows the open
model or its export, so every bar, none outlined (its selection does not reach the app); a tab of another model than
the open one has no bar (:data:`OTHER_MODEL`).

A node selected in either pane of a diff tab (a row of its list, a click in the float or the quantized pane) selects
the float nodes it matches in the float pane (:class:`~workbench.qt.diff_panes.DiffPanes` keeps the panes in step:
the quantized Conv selects its float Conv and the BatchNormalization folded into it). The node unit holding the
float pane's selection, or the graph's (a unit's main node or an activation folded into it: ppocrv4_rec's p2o.Clip.0
is of unit p2o.Add.4), when one of the Errors dock's bars is of it (:func:`selected_unit`), is outlined there and
scrolled into view; before results (no bars) the one node selected is (:func:`outlined_unit`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from PySide6.QtWidgets import QWidget

from workbench.qt.canvas.view import GraphCanvas
from workbench.qt.diff_view import DiffTab
from workbench.qt.quant_tab import QuantModelTab

#: the Errors dock's summary on a subgraph tab none of whose nodes has a bar
NO_SUBGRAPH_FIGURES = ("No error data for this view: no node of this subgraph has a per-unit figure (node units inside "
                       "If / Loop / Scan bodies are not measured one by one; the Output SQNR on the Graph tab includes "
                       "them).")
#: the Errors dock's summary on a tab it has no figures for (none of the kinds above)
NO_DATA = "No error data for this view."
#: the Errors dock's summary on a tab of a model that is no longer the open one
OTHER_MODEL = ("No error data for this view: this tab shows another model than the open one; the bars are of the "
               "open model (Graph tab).")


class ErrorsView(NamedTuple):
    """What the Errors dock shows for a tab: ``scope``, the units whose bars it shows (None: every unit); ``note``,
    its summary when none of them has a bar; ``selected``, the nodes whose unit it outlines."""

    scope: frozenset[str] | None
    note: str
    selected: list[str]


def selected_unit(names: Iterable[str], units: Mapping[str, Any], shown: set[str]) -> str | None:
    """The one node unit among ``shown`` (the units the Errors dock has a bar of) that holds any of the float nodes
    ``names``; None when none or several do.

    ``units``: the plan's units, name -> unit with ``node`` (its main node) and ``nodes`` (the folded activations);
    a name that is a unit's name is that unit (the plan may be gone: the bars name their units)."""
    member = {n: name for name, unit in units.items() for n in [unit.node, *unit.nodes]}
    found = {member.get(n, n) for n in names} & shown
    return next(iter(found)) if len(found) == 1 else None


def outlined_unit(names: Sequence[str], units: Mapping[str, Any], shown: set[str]) -> str | None:
    """What the Errors dock outlines for the selected nodes ``names``: :func:`selected_unit` among the units
    ``shown`` as bars; before results (``shown`` empty) the one node selected (its bar is outlined when the results
    come, if it is a unit's), None for none or several."""
    if not shown:
        return names[0] if len(names) == 1 else None
    return selected_unit(names, units, shown)


def shown_view(shown: QWidget | None, graph: GraphCanvas, netron: QWidget | None, shows_open_model: bool) -> ErrorsView:
    """What the Errors dock shows while tab ``shown`` is the current one (see the module): ``graph`` is the model's
    graph tab, ``netron`` the Netron tab (None when closed); ``shows_open_model``: ``shown`` was opened for the open
    model (a diff, exported-file or subgraph tab; the graph and Netron tabs always show it)."""
    if shown is None or shown is graph:
        return ErrorsView(None, "", graph.selected_nodes())
    if shown is netron:
        return ErrorsView(None, "", [])
    if not shows_open_model:
        return ErrorsView(frozenset(), OTHER_MODEL, [])
    if isinstance(shown, DiffTab):
        return ErrorsView(None, "", shown.float_canvas.selected_nodes())
    if isinstance(shown, QuantModelTab):
        return ErrorsView(None, "", shown.canvas.selected_nodes())
    if isinstance(shown, GraphCanvas):  # an If / Loop / Scan body
        return ErrorsView(frozenset(shown.node_names()), NO_SUBGRAPH_FIGURES, shown.selected_nodes())
    return ErrorsView(frozenset(), NO_DATA, [])


def outlined_in_view(view: ErrorsView, units: Mapping[str, Any], shown: set[str]) -> str | None:
    """The unit the Errors dock outlines for ``view`` among the bars ``shown``: :func:`outlined_unit`; in a scoped
    view (a subgraph) only a unit with a bar (before results no node of it stands for a bar to come)."""
    if view.scope is not None:
        return selected_unit(view.selected, units, shown)
    return outlined_unit(view.selected, units, shown)


def bar_canvas(shown: QWidget | None, name: str, shows_open_model: bool) -> GraphCanvas | None:
    """The graph of tab ``shown`` that a bar of node ``name`` clicked in the Errors dock (or a row of the Problems,
    Sensitivity, Cost or Recipe dock) selects in, or None (the window selects it on the Graph tab): the exported
    file's graph when it has a node of that name (the export keeps the float nodes' names, as the dock's outline on
    that tab reads them), a subgraph body's when ``name`` is one of its nodes. Netron (its selection does not reach the app), a diff tab, a tab of another model than the open one
    (``shows_open_model`` False) and the Graph tab itself give None."""
    if not shows_open_model:
        return None
    if isinstance(shown, QuantModelTab):
        canvas = shown.canvas
    elif isinstance(shown, GraphCanvas):  # an If / Loop / Scan body (the Graph tab is not among the tab models)
        canvas = shown
    else:
        return None
    return canvas if name in canvas.node_names() else None
