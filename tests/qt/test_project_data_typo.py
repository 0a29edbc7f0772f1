"""A project whose ``data`` section a hand edit broke is refused at open, in one line naming the field.

``"pth": "calib.npz"`` for ``"path"`` opened: the status line read "recipe and data restored" while the
Calibration panel showed no data (the document held ``{"pth": "calib.npz"}``), and a save wrote the data
away; ``"kind": "npzz"`` opened too and failed only at F5. Now the open is refused like any other invalid
field (the work open before stays), and so is the CLI's replay.
"""

from __future__ import annotations

from cli_projects import MODEL, digits_folder, read_json, refused_open, write_variant

from workbench.core import api
from workbench.qt.commands import push_edit, set_exclude

THIRD = "/f/f.3/Conv"
HINT = "Fix the field, or choose the calibration data again in the app and re-save."


def test_a_misspelt_data_field_is_refused_naming_it(
    qtbot, window, open_file, corpus, tmp_path, dialogs, save_prompts
):
    folder = digits_folder(corpus, tmp_path)
    open_file(window, folder / MODEL)
    base = window.save_project_to(folder / "p.wbproj")
    assert read_json(base)["data"] == {"kind": "npz", "path": "calib.npz"}
    assert push_edit(window.doc, set_exclude(window.doc.recipe, [THIRD], True), f"Keep {THIRD} in float")
    recipe, rows, edits = window.doc.recipe.to_json(), window.doc.rows, window.doc.undo_stack.count()
    cases = [
        (
            write_variant(base, base.with_name("pth.wbproj"), data={"kind": "npz", "pth": "calib.npz"}),
            "data.pth: unknown field 'pth' (did you mean 'path'?)",
        ),
        (
            write_variant(base, base.with_name("kind.wbproj"), data={"kind": "npzz", "path": "calib.npz"}),
            "data.kind: unknown kind 'npzz' (did you mean 'npz'?); use one of npz, npy, folder, images, python, "
            "random",
        ),
        (
            write_variant(base, base.with_name("nopath.wbproj"), data={"kind": "npz"}),
            "data.path: missing (the calibration data file or folder)",
        ),
    ]
    save_prompts.answer = "discard"
    for project, field in cases:
        # failed before: opened, the data shown as none (or as 'npzz', failing at F5)
        assert refused_open(qtbot, window, project, dialogs) == [
            ("Workbench", f"{project}: invalid project field {field}.\n\n{HINT}")
        ]
        assert window.status_label.text() == f"Could not open {project.name}. {MODEL} is still open."
        # the work open before is all there, still unsaved
        assert window.doc.recipe.to_json() == recipe and window.doc.rows == rows
        assert (
            window.doc.undo_stack.count() == edits and window.doc.modified and window.doc.project_path == base
        )


def test_data_sections_the_app_and_the_cli_write_still_load(corpus, tmp_path):
    folder = digits_folder(corpus, tmp_path)
    recipe = api.make_recipe("cpu-u8s8")
    for data in (
        folder / "calib.npz",
        {"kind": "npz", "path": str(folder / "calib.npz"), "layout": "batch"},
        {"kind": "folder", "path": str(folder / "calibdir")},
        {"kind": "random", "count": 8, "seed": 1},
        {"kind": "images", "path": str(folder / "imgs"), "size": [8, 8], "layout": "NCHW", "scale": 255.0},
    ):
        path = api.save_project(api.new_project(folder / MODEL, recipe, data=data), folder / "ok.wbproj")
        assert api.load_project(path).data == read_json(path)["data"]
