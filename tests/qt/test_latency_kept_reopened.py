"""The units a calibration's latency check kept float stay its after Save Project and reopening.

The app knew them only from its undo stack ("Keep 2 units float (latency check)"), which a reopened project does
not have: they then read like the user's own exclusions (the histogram's "excluded (kept float) by the recipe"),
and autotune did not lift them. The project's ``latency_kept`` records them. The latency measurements are fixed
(latency_fakes.fixed_latency: every unit probe measures its quantized unit 2x float, so the latency placement
keeps digits_cnn's first Conv and its AveragePool float; the whole model 0.5x float), not timed.
"""

from __future__ import annotations

import json
import shutil

import pytest
from cli_projects import MODEL, digits_folder, run_job
from latency_fakes import fixed_latency
from PySide6.QtCore import Qt

from workbench.core import api
from workbench.qt.app_window import MainWindow
from workbench.qt.commands import push_edit, set_exclude
from workbench.qt.quantize_anyway import latency_kept_units
from workbench.qt.recipe_panel import BY_LATENCY, BY_RECORD

#: the units the latency placement keeps float under fixed_latency (probed: a single-channel Conv, an AveragePool)
KEPT = ["/f/f.0/Conv", "/f/f.9/AveragePool"]
#: the user's own exclusion, made before calibrating
MINE = "/f/f.7/Conv"


def _shown(win) -> dict:
    """What the app says of each excluded unit: its Recipe panel line, the inspector's exclude source, the
    histogram's reason for no clip range (of its output tensor), and the Recipe panel's caption."""
    out = {"caption": win.recipe_panel.overrides_caption.text()}
    lines = [win.recipe_panel.overrides.item(i).text() for i in range(win.recipe_panel.overrides.count())]
    outputs = {n.name: n.output[0] for n in win.doc.model.graph.node}
    for node in [*KEPT, MINE]:
        win.inspector.set_nodes([node])
        out[node] = ([line for line in lines if line.startswith(f"{node}  ->")],
                     win.inspector.exclude_source.text(), win._no_clip(outputs[node]))
    return out


def test_latency_kept_units_read_as_the_latency_checks_after_the_project_is_reopened(qtbot, window, open_file, corpus,
                                                                                     monkeypatch, tmp_path):
    fixed_latency(monkeypatch)
    win, doc = window, window.doc
    open_file(win, corpus / "digits_cnn" / "model_opset17.onnx")
    win.calibration.choose_first.setChecked(False)  # the preset as it is: the latency check's edit alone
    win.calibration.samples.setValue(16)
    win.calibration.analysis_samples.setValue(8)
    push_edit(doc, set_exclude(doc.recipe, [MINE], True), "Exclude")
    state, res = run_job(qtbot, win, win.act_calibrate.trigger)
    assert state == "succeeded", res
    assert res["latency_kept"] == KEPT and latency_kept_units(doc) == set(KEPT)

    fresh = _shown(win)
    assert fresh["caption"] == "Node overrides (3 nodes, 3 kept float, 2 of them by the latency check; click one to select it):"
    for node in KEPT:
        assert fresh[node][0] == [f"{node}  ->  {BY_LATENCY}"] and fresh[node][1] == "latency check"
        assert fresh[node][2].startswith(f"no clip range: {node} is kept float by the latency check")
    assert fresh[MINE] == ([f"{MINE}  ->  kept float"], "override",
                           f"no clip range: {MINE} is excluded (kept float) by the recipe")

    path = win.save_project_to(tmp_path / "digits.wbproj")
    saved = json.loads(path.read_text())["latency_kept"]
    assert [e["node"] for e in saved] == KEPT and [e["ratio"] for e in saved] == [2.0, 2.0]
    assert saved[0]["reason"].startswith("kept in float: as QLinearConv it measured 2.00x its float latency")

    open_file(win, path)
    assert doc.undo_stack.count() == 0  # nothing in this session says so: the project does
    assert latency_kept_units(doc) == set(KEPT)
    # the same, except the Recipe panel's lines: measured when the project was saved (maybe on another machine), not
    # "on this machine" as right after the calibration
    assert BY_RECORD == "kept float (latency check: slower quantized when the project was saved)"
    assert _shown(win) == {**fresh, **{node: ([f"{node}  ->  {BY_RECORD}"], *fresh[node][1:]) for node in KEPT}}
    # saved again, the record stays (it is not only of this session's undo stack)
    again = win.save_project_to(tmp_path / "again.wbproj")
    assert json.loads(again.read_text())["latency_kept"] == saved

    # the user quantizes one of them: it is no longer the latency check's, nor saved as such
    push_edit(doc, set_exclude(doc.recipe, [KEPT[0]], False), "Include")
    assert latency_kept_units(doc) == {KEPT[1]}
    third = win.save_project_to(tmp_path / "third.wbproj")
    assert [e["node"] for e in json.loads(third.read_text())["latency_kept"]] == [KEPT[1]]


def test_an_autosave_restored_keeps_the_latency_checks_units_its(qtbot, window, open_file, corpus, monkeypatch,
                                                                   tmp_path, restore_prompts):
    """A session that calibrated (the latency check's edit on its undo stack) dies after an autosave; the next one
    restores it as one edit: the units are the latency check's again, and Undo of the restore forgets them."""
    fixed_latency(monkeypatch)
    folder = digits_folder(corpus, tmp_path)
    crashed = MainWindow()
    qtbot.addWidget(crashed)
    open_file(crashed, folder / MODEL)
    crashed.calibration.choose_first.setChecked(False)
    crashed.calibration.samples.setValue(16)
    crashed.calibration.analysis_samples.setValue(8)
    state, res = run_job(qtbot, crashed, crashed.act_calibrate.trigger)
    assert state == "succeeded", res
    assert latency_kept_units(crashed.doc) == set(KEPT)
    assert crashed.autosaver.save_now() is not None
    crashed.autosaver.stop()
    crashed.autosaver.owned.clear()  # what the killed process forgets: its close never removes the file
    crashed.doc.mark_saved()
    crashed.close()

    restore_prompts.answer = "restore"
    open_file(window, folder / MODEL)
    assert len(restore_prompts) == 1
    assert latency_kept_units(window.doc) == set(KEPT)
    # restored from the autosave's record: as a reopened project, measured when it was saved
    assert f"{KEPT[0]}  ->  {BY_RECORD}" in [window.recipe_panel.overrides.item(i).text()
                                              for i in range(window.recipe_panel.overrides.count())]
    window.act_undo.trigger()  # the model as opened: nothing kept float
    assert latency_kept_units(window.doc) == set() and not window.doc.recipe.overrides
    window.act_redo.trigger()
    assert latency_kept_units(window.doc) == set(KEPT)


@pytest.mark.parametrize("with_data", [True, False])
def test_apply_project_to_model_keeps_the_latency_checks_units_its(qtbot, window, open_file, corpus, tmp_path,
                                                                    with_data):
    """File > Apply Project to Model: the project's latency_kept comes with its recipe in the one edit (a macro
    with the project's data when the open model has none), under the open model's names; Undo forgets it."""
    folder = digits_folder(corpus, tmp_path)
    recipe = api.make_recipe("cpu-u8s8").with_excluded([*KEPT, MINE])
    project = api.new_project(folder / MODEL, recipe, data={"path": str(folder / "calib.npz")}, samples=16)
    project.latency_kept = [api.LatencyKept(node=n, ratio=2.0, reason="kept in float") for n in KEPT]
    path = api.save_project(project, folder / "p.wbproj")
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(folder / MODEL, other / MODEL)
    if with_data:
        shutil.copy(folder / "calib.npz", other / "calib.npz")  # found beside the model: the data stays
    open_file(window, other / MODEL)
    assert bool(window.doc.data) == with_data

    dialog = window.apply_project(path)
    qtbot.mouseClick(dialog.apply_button, Qt.MouseButton.LeftButton)
    assert window.doc.undo_stack.count() == 1 and set(window.doc.recipe.overrides) == {*KEPT, MINE}
    assert latency_kept_units(window.doc) == set(KEPT)
    assert _shown(window)["caption"] == ("Node overrides (3 nodes, 3 kept float, 2 of them by the latency check; "
                                         "click one to select it):")
    saved = json.loads(window.save_project_to(tmp_path / "applied.wbproj").read_text())["latency_kept"]
    assert saved == [{"node": n, "ratio": 2.0, "reason": "kept in float"} for n in KEPT]
    window.act_undo.trigger()
    assert latency_kept_units(window.doc) == set() and not window.doc.recipe.overrides
    window.act_redo.trigger()
    assert latency_kept_units(window.doc) == set(KEPT)
