"""The units the latency check kept float are counted one way everywhere: units, and the islands they form.

On ppocr_mobile_v2_cls (under load) the undo item said "Keep 135 units float (latency check)" while Problems said
"13 x unit kept float: its integer kernel measured slower": 13 islands (of 3 to 54 units) called units.
Now the undo item and the status say "135 units float (... 13 islands ...)" and the Problems group says islands, each
row naming its units; the note about the whole model (every unit float) is a group apart. The latency
measurements are replaced (latency_fakes), not timed: quantized 1.5x float keeps all 13 islands float.
"""

from __future__ import annotations

from cli_projects import run_job
from latency_fakes import slow_quantized

from workbench.core.issues import IssueCode, Severity
from workbench.core.wording import ISLAND_MEANS
from workbench.qt.problems_panel import group_title


def test_units_and_islands_agree(qtbot, window, open_file, monkeypatch, corpus):
    slow_quantized(monkeypatch)
    open_file(window, corpus / "ppocr_mobile_v2_cls" / "model.onnx")
    assert window.doc.data["path"].endswith("calib.npz")
    window.calibration.choose_first.setChecked(False)
    state, res = run_job(qtbot, window, window.act_calibrate.trigger)
    assert state == "succeeded", res
    units = len(res["latency_kept"])
    islands = [i for i in window.doc.result_issues
               if i.code == IssueCode.LATENCY_KEPT_FLOAT and i.severity == Severity.WARNING and i.node]
    assert (units, len(islands)) == (135, 13) and units == len(window.doc.plan.units)
    # each island's row names how many units it holds: together the units the recipe now keeps float
    sizes = [int(i.message.split("island of ")[1].split(" ")[0]) for i in islands]
    assert sum(sizes) == units
    assert window.doc.undo_stack.undoText() == f"Keep {units} units float (latency check, {len(islands)} islands)"
    assert (f"The latency check kept {units} units float ({len(islands)} islands, slower quantized on this machine)"
            in window.calibration.status.text())
    title = group_title(islands[0], len(islands))
    assert title.startswith(f"{len(islands)} \u00d7 island of units kept float")
    panel = window.problems
    panel.refresh()
    row = panel.item_of(panel.row_of(islands[0].message)).parent()
    assert row is not None and row.text(2) == title


def test_a_microsecond_models_islands_are_counted_as_islands(qtbot, window, open_file, monkeypatch, corpus):
    """At 1.5x of a 20 us float run (a microsecond model: no island tried, every island left float at once) the
    latency fallback's island notes are notes (info, ``island`` set): the app counted only warnings as islands, so
    the undo item said "Keep 135 units float (latency check)" with no island where the CLI says 13, and Problems
    grouped the 13 islands under the latency placement's title "unit kept float: its integer kernel measured
    slower" (no kernel was measured)."""
    slow_quantized(monkeypatch, ratio=1.5, float_s=20e-6)
    open_file(window, corpus / "ppocr_mobile_v2_cls" / "model.onnx")
    window.calibration.choose_first.setChecked(False)
    state, res = run_job(qtbot, window, window.act_calibrate.trigger)
    assert state == "succeeded", res
    units = len(res["latency_kept"])
    islands = [i for i in window.doc.result_issues if i.code == IssueCode.LATENCY_KEPT_FLOAT and i.island]
    assert (units, len(islands)) == (135, 13) and {i.severity for i in islands} == {Severity.INFO}
    assert sum(len(i.units) for i in islands) == units
    assert window.doc.undo_stack.undoText() == f"Keep {units} units float (latency check, 13 islands)"
    assert (f"The latency check kept {units} units float (13 islands, slower quantized on this machine)"
            in window.calibration.status.text())
    assert window.errors.summary.text().startswith(
        f"Nothing is quantized: the latency check kept all {units} node units float in 13 islands (")
    panel = window.problems
    panel.refresh()
    row = panel.item_of(panel.row_of(islands[0].message)).parent()
    assert row is not None and row.text(2) == "13 \u00d7 island of units kept float: quantization does not pay at this size"
    # what an island is: in the group row's tooltip and in each row (the CLI's note words)
    assert row.toolTip(2).startswith(f"{row.text(2)} (an island: {ISLAND_MEANS})\n")
    assert all("between float nodes; " in row.child(k).text(2) for k in range(row.childCount()))
    assert row.childCount() == 13
