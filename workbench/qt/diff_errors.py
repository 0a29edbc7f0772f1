"""The Errors dock follows the selection of a diff tab, as it follows the selection on the model's graph.

A node selected in either pane of a diff tab (a row of its list, a click in the float or the quantized pane) selects
the float nodes it matches in the float pane (:class:`~workbench.qt.diff_panes.DiffPanes` keeps the panes in step:
the quantized Conv selects its float Conv and the BatchNormalization folded into it). The node unit holding them, when
one of the Errors dock's bars is of it (:func:`selected_unit`), is outlined there and scrolled into view.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def selected_unit(names: Iterable[str], units: Mapping[str, Any], shown: set[str]) -> str | None:
    """The one node unit among ``shown`` (the units the Errors dock has a bar of) that holds any of the float nodes
    ``names``; None when none or several do.

    ``units``: the plan's units, name -> unit with ``node`` (its main node) and ``nodes`` (the folded activations);
    a name that is a unit's name is that unit (the plan may be gone: the bars name their units)."""
    member = {n: name for name, unit in units.items() for n in [unit.node, *unit.nodes]}
    found = {member.get(n, n) for n in names} & shown
    return next(iter(found)) if len(found) == 1 else None
