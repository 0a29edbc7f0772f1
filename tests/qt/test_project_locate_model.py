"""Opening a project whose model is nowhere it names: the app offers Locate Model... instead of a CLI command.

A project copied to another folder looked for its model relative to the copy only; the app's dialog then
told a GUI user to run ``workbench-cli quantize ... --model PATH``. Now the absolute path saved in the
project is tried too, and when neither holds the model a box offers "Locate Model...": the chosen file
(same sha256) opens the project, another file is refused.
"""

from __future__ import annotations

import json
import shutil

import pytest
from PySide6.QtWidgets import QFileDialog, QMessageBox

from workbench.qt.dialogs import LOCATE_MODEL

DIGITS = "digits_cnn/model_opset17.onnx"


@pytest.fixture
def copied(qtbot, window, open_file, corpus, tmp_path):
    """A project saved by the app in A/ naming B/model.onnx, copied to C/d/ (its relative path misses)."""
    for sub in ("A", "B", "C/d"):
        (tmp_path / sub).mkdir(parents=True)
    model = tmp_path / "B" / "model.onnx"
    shutil.copy(corpus / DIGITS, model)
    open_file(window, model)
    proj = window.save_project_to(tmp_path / "A" / "job.wbproj")
    shutil.copy(proj, tmp_path / "C" / "d" / "job.wbproj")
    return model, tmp_path / "C" / "d" / "job.wbproj"


@pytest.fixture
def boxes(monkeypatch):
    """The missing-model boxes shown (text, informative text, button labels); ``answer`` is the button the
    fake box clicks (LOCATE_MODEL unless a test sets it), ``chosen`` what the file dialog returns."""
    class Boxes(list):
        answer = LOCATE_MODEL
        chosen = ""

    shown = Boxes()

    def fake_exec(box):
        labels = [b.text() for b in box.buttons()]
        shown.append((box.text(), box.informativeText(), labels))
        next(b for b in box.buttons() if b.text() == shown.answer).click()
        return 0

    monkeypatch.setattr(QMessageBox, "exec", fake_exec)
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (shown.chosen, "")))
    return shown


def test_copied_project_opens_with_the_model_at_its_absolute_path(qtbot, window, open_file, copied, boxes):
    model, copy = copied
    open_file(window, copy)
    assert window.doc.model_path == model.resolve() and window.doc.project_path == copy.resolve()
    assert boxes == []
    assert f"used {model.resolve()}, the absolute path saved in the project" in window.status_label.text()


def _open_with_model_moved(window, open_file, copied, boxes, tmp_path):
    """Move the project's model away, answer the Locate Model dialog with its new path, open the project."""
    model, copy = copied
    moved = tmp_path / "elsewhere" / "renamed.onnx"
    moved.parent.mkdir()
    model.rename(moved)
    boxes.chosen = str(moved)
    open_file(window, copy)
    return model, copy, moved


def test_locate_model_opens_the_project_with_the_chosen_file(qtbot, window, open_file, copied, boxes, tmp_path):
    model, copy, moved = _open_with_model_moved(window, open_file, copied, boxes, tmp_path)
    [(text, info, labels)] = boxes
    assert labels == [LOCATE_MODEL, "Cancel"]
    assert "project field model.path" in text and str(model.resolve()) in text and "workbench-cli" not in text + info
    assert window.doc.model_path == moved.resolve() and window.doc.model is not None
    assert len(window.doc.model.graph.node) > 0 and window.doc.project_path == copy.resolve()
    assert "save the project to keep it" in window.status_label.text()
    window.save_project()
    assert json.loads(copy.read_text())["model"]["path"] == "../../elsewhere/renamed.onnx"


def test_a_located_model_leaves_the_project_modified_until_saved(qtbot, window, open_file, copied, boxes, tmp_path,
                                                                  save_prompts):
    """The project's stored model path changed when the model was located: the title shows "*", the quit
    prompt asks (naming what is unsaved) and a save clears it."""
    model, copy, moved = _open_with_model_moved(window, open_file, copied, boxes, tmp_path)
    assert window.doc.modified and window.doc.unsaved_text == "unsaved model location"
    assert window.windowTitle() == "job.wbproj * - Workbench"
    save_prompts.answer = "cancel"
    assert not window.keep_or_drop_changes("quitting")
    assert list(save_prompts) == [("job.wbproj", "quitting")]
    window.save_project()
    assert not window.doc.modified and window.windowTitle() == "job.wbproj - Workbench"


def test_a_project_whose_model_is_beside_it_opens_unmodified(qtbot, window, open_file, copied, boxes):
    model, copy = copied
    open_file(window, copy)  # found at the absolute path saved in it: nothing located, nothing asked
    assert not window.doc.modified and window.windowTitle() == "job.wbproj - Workbench"


def test_a_located_file_that_is_another_model_is_refused(qtbot, window, open_file, copied, boxes, dialogs, corpus,
                                                        tmp_path):
    model, copy = copied
    model.unlink()
    other = tmp_path / "model.onnx"
    shutil.copy(corpus / "digits_cnn" / "model_opset13.onnx", other)
    boxes.chosen = str(other)
    window.open_path(copy)
    assert len(boxes) == 1
    text = dialogs.texts()
    dialogs.clear()
    assert f"{other.resolve()} is not the project's model (sha256" in text
    assert window.doc.project_path == (tmp_path / "A" / "job.wbproj").resolve()  # what was open stays
    assert window.status_label.text().startswith("Could not open job.wbproj.")


def test_cancelling_the_locate_box_opens_nothing(qtbot, window, open_file, copied, boxes, dialogs, tmp_path):
    model, copy = copied
    model.unlink()
    boxes.answer = "Cancel"
    window.open_path(copy)
    assert len(boxes) == 1 and list(dialogs) == []
    assert window.doc.project_path == (tmp_path / "A" / "job.wbproj").resolve()
    assert window.status_label.text() == "Could not open job.wbproj. model.onnx is still open."
