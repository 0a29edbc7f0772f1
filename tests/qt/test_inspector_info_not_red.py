"""The inspector's plan notes by severity. An ``info`` issue (expected where 16-bit units meet 8-bit ones: "tensor
'/f/f.2/Relu_output_0' uses the activation spec of '/f/f.0/Conv' (int16 ...) ... this is expected") was shown in the
red line under the fields that holds invalid combinations, as if the edit were wrong; infos now go to a line of
their own in the normal text colour, errors and warnings stay red."""

from __future__ import annotations

from bundled_example import EXAMPLE

CONV = "/f/f.0/Conv"


def test_an_info_is_a_note_not_a_red_problem(qtbot, window, open_file):
    win = window
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    win.canvas.select_nodes([CONV])
    assert win.inspector.problems.text() == "" and win.inspector.notes.text() == ""
    win.inspector.roles["activation"].dtype.setCurrentText("int16")
    infos = [i for i in win.doc.plan.issues if i.node == CONV and i.severity == "info"]
    assert len(infos) == 1 and "uses the activation spec of '/f/f.0/Conv' (int16" in infos[0].message
    assert win.inspector.problems.text() == ""  # nothing wrong with the edit
    assert win.inspector.notes.text() == f"info: {CONV}: {infos[0].message}"
    assert "c62828" not in win.inspector.notes.styleSheet()
    assert not win.inspector.notes.isHidden() and win.inspector.problems.isHidden()
    win.act_undo.trigger()
    assert win.inspector.notes.text() == "" and win.inspector.problems.text() == ""


def test_an_invalid_choice_stays_red_beside_a_note(qtbot, window, open_file):
    win = window
    open_file(win, EXAMPLE / "digits_cnn.onnx")
    win.canvas.select_nodes([CONV])
    win.inspector.roles["activation"].dtype.setCurrentText("int16")
    win.inspector.roles["activation"].granularity.setCurrentText("per_block")  # refused by the recipe
    problems = win.inspector.problems.text()
    assert "block_size" in problems and "c62828" in win.inspector.problems.styleSheet()
    assert not win.inspector.problems.isHidden()
    assert not problems.startswith("info: ") and "\ninfo: " not in problems
