""""Show the quantized model's errors": the Errors panel's way out of a latency check that kept every unit float.

When a calibration ends with nothing quantized because the latency check kept every unit float (the quantized
model measured slower than float on this machine: ppocr_mobile_v2_cls, 135 units in 13 islands), there is no
error to show. The button (and the status bar's link) does the documented steps as one user action: undo the
latency check's edit (the undoable "Keep N units float (latency check...)" command the calibration pushed,
:meth:`workbench.qt.runs.RunController._adopt_latency`) and analyse the recipe as it is (F6, which runs no
latency check), so the bars show the quantized model's per-node errors.

:class:`QuantizedShelf` keeps the results of both recipes while the other is shown: Redo (Ctrl+Y) brings the
float units back with their "nothing is quantized" results, Undo the quantized rows, without measuring again.
"""

from __future__ import annotations

import shiboken6

from workbench.core import api
from workbench.core.issues import IssueCode
from workbench.qt.latency_edits import (
    LATENCY_EDIT,
    is_latency_edit,
    latency_edit_done,
    latency_edit_undone,
    latency_kept_units,
)
from workbench.qt.nothing_quantized import latency_islands, latency_kept_float, nothing_quantized

#: The button's and the link's text.
SHOW_QUANTIZED = "Show the quantized model's errors"
#: The document's fields that make up the results shown (the calibration cache is shared: not among them).
SHOWN = ("qparams", "errors", "split", "outputs", "weights", "local", "issues", "result_issues", "result_recipe",
         "result_data", "written")


def after_each_step(doc, slot) -> None:
    """Call ``slot()`` after each push, undo or redo on ``doc``'s undo stack, once the stack counts the step (a
    view of :func:`latency_kept_units`: during a push or redo the recipe changes before its command is counted as
    done); not while the stack is being destroyed with its document (it clears itself then), nor once the widget
    of ``slot`` (a bound method) is gone."""
    stack, owner = doc.undo_stack, slot.__self__
    stack.indexChanged.connect(lambda _index: slot() if shiboken6.isValid(stack) and shiboken6.isValid(owner) else None)


def latency_kept_entries(doc) -> list | None:
    """The project's ``latency_kept`` for ``doc`` as it is now: a :class:`~workbench.core.api.LatencyKept` per
    unit of :func:`latency_kept_units`, sorted by node, with the ratio and note recorded when it was kept; None
    when there is none."""
    record = doc.latency_record
    return [record.get(n) or api.LatencyKept(node=n, reason="kept float by the latency check")
            for n in sorted(latency_kept_units(doc))] or None


def can_show_quantized(doc) -> bool:
    """True when nothing is quantized because the latency check kept every unit float
    (:func:`~workbench.qt.nothing_quantized.nothing_quantized`, with the latency check's islands among the
    result's issues, or the units of its done edit still excluded: an export's, whose figures an analysis measured
    again) and its edit is the one Ctrl+Z undoes: not when the recipe's own exclusions keep them."""
    return nothing_quantized(doc) and latency_kept_float(doc) and latency_edit_done(doc)


def measured_ratio(doc) -> float | None:
    """The quantized / float latency ratio the last calibration's latency check measured before it kept units
    float (1.4 for 1.4 ms vs 1.0 ms), as its island warnings print it ("as quantized the model measured 1.40x its
    float latency"), read from their ``ratio`` field; None when no such warning is among the result's issues. (The
    kept model's own ``latency`` is of the model as written: every unit float, about 1.00x.)"""
    for issue in latency_islands(doc.result_issues) + [i for i in doc.result_issues if not i.node]:
        if issue.code != IssueCode.LATENCY_KEPT_FLOAT:
            continue
        if issue.ratio is not None:  # a reopened project's issues keep it too (Document.results_json)
            return issue.ratio
    return None


def quantized_note(doc, ratio: float | None) -> str:
    """The sentence the Errors summary ends with while it shows the quantized model's errors after the latency
    check's edit was undone ("" otherwise): measured slower here, by ``ratio`` when known, and what an export
    writes: it runs the latency check again (as ``workbench-cli quantize`` does), so on this machine it keeps
    the units float again."""
    if not (doc.errors and doc.results_current and latency_edit_undone(doc)):
        return ""
    slower = f"{ratio:.2f}x the float model's latency" if ratio is not None else "slower than float"
    return (f" These are the quantized model's errors, the latency check's edit undone (Ctrl+Y keeps the units float "
            f"again); it measured {slower} here. Export runs the latency check again, as `workbench-cli quantize` "
            "does, and keeps them float while they measure slower; `workbench-cli quantize --no-latency-check` writes "
            "the model analysed here, and a node with an override of its own (\"exclude (keep in float)\" unticked) "
            "keeps its island quantized.")


class QuantizedShelf:
    """The results of the recipe with the latency check's units float and of the recipe without them, each kept
    while the other is shown (the document has one set of results). Set up by :meth:`show_quantized`; forgotten
    when another model opens (:meth:`forget`) or another job succeeds (:meth:`job_done`)."""

    def __init__(self, doc):
        self.doc = doc
        self.ratio: float | None = None  #: the latency check's measured ratio (:func:`measured_ratio`)
        self._kept: dict[str, dict] = {}  # result recipe JSON -> the SHOWN fields
        self._analysing = False  # the analysis show_quantized asked for has not reported yet

    def forget(self) -> None:
        self.ratio, self._kept, self._analysing = None, {}, False

    def job_done(self, kind: str, _result: dict | None = None) -> None:
        """A job succeeded (``RunController.succeeded``): the analysis :meth:`show_quantized` started keeps the
        results; any later job (a calibration, an export: new ranges, or a recipe edit of its own) forgets them,
        so no result measured with other ranges comes back."""
        if self._analysing and kind == "calibrate":
            self._analysing = False
        elif self._kept:
            self.forget()

    def show_quantized(self) -> None:
        """Undo the latency check's edit (keeping the nothing-quantized results for a redo); the caller then
        analyses the recipe as it is (F6). Does nothing unless :func:`can_show_quantized`."""
        if not can_show_quantized(self.doc):
            return
        self.forget()
        self.ratio = measured_ratio(self.doc)
        self._keep()
        self._analysing = True
        self.doc.undo_stack.undo()

    def note(self) -> str:
        """:func:`quantized_note` with the ratio measured before the undo."""
        return quantized_note(self.doc, self.ratio)

    def swap(self) -> bool:
        """After an undo or redo: when the recipe is one whose results are kept (of the same data rows) and the
        results shown are not of it, keep those and show the kept ones (emits ``resultsChanged``). True when
        swapped."""
        doc = self.doc
        kept = self._kept.get(doc.recipe.to_json())
        if kept is None or doc.results_current or kept["result_data"] != doc.rows:
            return False
        self._keep()
        for name, value in kept.items():
            setattr(doc, name, value)
        doc.resultsChanged.emit()
        return True

    def _keep(self) -> None:
        if self.doc.result_recipe:
            self._kept[self.doc.result_recipe] = {name: getattr(self.doc, name) for name in SHOWN}


__all__ = ["LATENCY_EDIT", "SHOWN", "SHOW_QUANTIZED", "QuantizedShelf", "after_each_step", "can_show_quantized",
           "is_latency_edit", "latency_edit_done", "latency_edit_undone", "latency_kept_entries", "latency_kept_units",
           "measured_ratio", "quantized_note"]
