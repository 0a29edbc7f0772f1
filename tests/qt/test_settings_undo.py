"""Calibration settings are undoable edits, like recipe edits (README: Ctrl+Z / Ctrl+Y undo every edit).

Changing Samples called the document directly: Ctrl+Z then undid the edit before it (an int16 override
went) and the sample count stayed. Consecutive steps of a spin box are one edit, as typing is in a text
editor, and undoing back to the saved state leaves nothing to save.
"""

from __future__ import annotations

from cli_projects import MODEL, digits_folder, read_json

NODE = "/f/f.0/Conv"


def _int16(win) -> None:
    win.canvas.select_nodes([NODE])
    win.inspector.set_nodes([NODE])
    win.inspector.roles["activation"].dtype.setCurrentText("int16")
    assert win.doc.recipe.overrides[NODE].activation.dtype == "int16"


def test_ctrl_z_undoes_a_sample_count_not_the_edit_before(qtbot, window, open_file, corpus, tmp_path):
    folder = digits_folder(corpus, tmp_path)
    open_file(window, folder / MODEL)
    _int16(window)
    panel = window.calibration
    for n in range(1, 21):  # the spin box stepped up to 20: one edit
        panel.samples.setValue(n)
    assert window.doc.samples == 20
    assert window.doc.undo_stack.undoText() == "Change calibration samples"
    window.act_undo.trigger()
    assert window.doc.samples is None and panel.samples.value() == 0
    assert window.doc.recipe.overrides[NODE].activation.dtype == "int16"
    window.act_redo.trigger()
    assert window.doc.samples == 20 and panel.samples.value() == 20
    window.act_undo.trigger()
    window.act_undo.trigger()  # now the int16 edit
    assert NODE not in window.doc.recipe.overrides and window.doc.samples is None
    assert not window.doc.modified


def test_data_edits_undo_and_the_saved_state_is_clean(qtbot, window, open_file, corpus, tmp_path):
    folder = digits_folder(corpus, tmp_path)
    open_file(window, folder / MODEL)
    panel = window.calibration
    opened = window.doc.data
    assert opened == {"kind": "npz", "path": str(folder / "calib.npz")}
    proj = window.save_project_to(folder / "p.wbproj")
    assert not window.doc.modified

    panel.samples.setValue(5)
    panel.samples.setValue(0)  # back where it was saved: no edit, nothing to save
    assert not window.doc.modified and not window.doc.undo_stack.canUndo()

    panel.path.setText(str(folder / "calibdir"))
    panel.path.editingFinished.emit()
    panel.kind.setCurrentIndex(panel.kind.findData("folder"))
    assert window.doc.data == {"kind": "folder", "path": str(folder / "calibdir")}
    assert window.doc.modified and "*" in window.windowTitle()
    window.act_undo.trigger()
    window.act_undo.trigger()
    assert window.doc.data == opened and panel.path.text() == str(folder / "calib.npz")
    assert panel.kind.currentData() == "file"
    assert not window.doc.modified and "*" not in window.windowTitle()
    window.act_redo.trigger()
    window.act_redo.trigger()
    assert window.doc.data == {"kind": "folder", "path": str(folder / "calibdir")}
    window.save_project()
    assert read_json(proj)["data"] == {"kind": "folder", "path": "calibdir"}
    window.act_undo.trigger()  # before the save: an unsaved change again
    assert window.doc.modified


def test_an_image_scale_undoes_to_the_exact_value(qtbot, window, open_file, corpus, tmp_path):
    folder = digits_folder(corpus, tmp_path)
    open_file(window, folder / MODEL)
    panel = window.calibration
    spec = {"kind": "images", "path": str(folder / "imgs"), "scale": 1 / 255}
    panel.set_data_spec(spec, None)
    window.sync_data_spec()
    assert window.doc.data == spec
    depth = window.doc.undo_stack.count()
    panel.scale.setValue(0.5)
    panel.scale.setValue(0.25)
    assert window.doc.data == dict(spec, scale=0.25)
    assert window.doc.undo_stack.count() == depth + 1  # the steps of one spin box: one edit
    window.act_undo.trigger()
    assert window.doc.data == spec  # 1/255 exactly, not the box's 0.00392157
