"""The nodes a recipe keeps float are listed in the Recipe panel and marked on the canvas in every colour mode.

After F5's recipe choice kept units float (overrides, not rules) the status said "The Recipe panel shows it"
while that panel listed only rules (none), and in the default op colour mode nothing on the canvas told a
float node from a quantized one. Now the Recipe panel lists the node overrides ("mm0  ->  kept float"; a
click selects the node) and the canvas draws a dashed outline around nodes kept float, named in the op
legend. Model: a MatMul chain whose first MatMul reads an outlier (the choice keeps it float); the latency
measurements are replaced (latency_fakes: quantized faster, so the latency check keeps nothing), not timed.
"""

from __future__ import annotations

from cli_projects import run_job
from latency_fakes import slow_quantized
from outlier_chain import outlier_chain

from workbench.qt.canvas.legend import legend_entries


def test_overrides_listed_and_outlined(qtbot, window, open_file, monkeypatch, tmp_path):
    slow_quantized(monkeypatch, ratio=0.5)
    open_file(window, outlier_chain(tmp_path))
    panel, canvas = window.recipe_panel, window.canvas
    assert panel.overrides.count() == 0 and canvas.float_nodes() == set()
    assert canvas.color_mode() == "op" and legend_entries(canvas)[2] == []
    state, res = run_job(qtbot, window, window.act_calibrate.trigger)
    assert state == "succeeded", res
    assert res["choice"]["promoted"] == ["mm0"] and not res["latency_kept"]
    assert [panel.overrides.item(i).text() for i in range(panel.overrides.count())] == ["mm0  ->  kept float"]
    assert panel.overrides_caption.text().startswith("Node overrides (1 node, 1 kept float")
    panel.overrides.itemClicked.emit(panel.overrides.item(0))
    assert canvas.selected_nodes() == ["mm0"]
    # the canvas marks it in the default op colours, and the legend says what the mark means
    assert canvas.float_nodes() == {"mm0"}
    assert legend_entries(canvas)[2] == ["dashed dark blue outline: kept float (1 node)"]
    window.act_undo.trigger()  # the preset again: nothing float, nothing listed
    assert canvas.float_nodes() == set() and panel.overrides.count() == 0
