"""The Calibration panel's line after a project with saved per-unit results opened.

The panel said "Idle." at 0 % while the Errors panel showed the project's restored SQNR bars, as if
nothing had been calibrated; it now says the results are the saved ones and what the latency check kept.
"""

from __future__ import annotations

from workbench.core.wording import count
from workbench.qt.latency_edits import latency_kept_units
from workbench.qt.nothing_quantized import nothing_quantized_status


def restored_done_line(doc) -> str:
    """The panel's line for ``doc`` (a :class:`~workbench.qt.document.Document`) just opened from a project:
    "Done (results restored from P.wbproj): 4 node units analysed. The latency check kept 1 unit float."
    ("Done, but nothing is quantized: ..." when the saved calibration quantized nothing); "" when the
    document has no project or no restored per-unit results (the panel then stays "Idle.")."""
    if doc.project_path is None or (not doc.errors and doc.result_recipe is None):
        return ""
    source = f"results restored from {doc.project_path.name}"
    nothing = nothing_quantized_status(doc)
    if nothing:
        return nothing.replace("Done,", f"Done ({source}),", 1)
    line = f"Done ({source}): {count(len(doc.errors), 'node unit')} analysed."
    kept = len(latency_kept_units(doc))
    if kept:
        line += f" The latency check kept {count(kept, 'unit')} float."
    return line + " F5 calibrates again."
