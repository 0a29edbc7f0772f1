"""The Errors dock follows the selection of the shown tab: the model's graph, or a diff tab of the open model.

A node selected in either pane of a diff tab (a row of its list, a click in the float or the quantized pane) selects
the float nodes it matches in the float pane (:class:`~workbench.qt.diff_panes.DiffPanes` keeps the panes in step:
the quantized Conv selects its float Conv and the BatchNormalization folded into it). The node unit holding the
float pane's selection, or the graph's (a unit's main node or an activation folded into it: ppocrv4_rec's p2o.Clip.0
is of unit p2o.Add.4), when one of the Errors dock's bars is of it (:func:`selected_unit`), is outlined there and
scrolled into view; before results (no bars) the one node selected is (:func:`outlined_unit`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any


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
