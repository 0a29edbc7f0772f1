"""The inspector shows only the settings that apply to the selected op: no weight box on a Relu or an
AveragePool, nothing but a note on a Flatten; a mixed selection's weight edit reaches the Conv only."""

from __future__ import annotations

import onnx


def _shown(win) -> list[str]:
    return [role for role, editor in win.inspector.roles.items() if not editor.isHidden()]


def test_inspector_shows_the_roles_of_the_selected_op(qtbot, window, open_file, corpus):
    win = window
    path = corpus / "digits_cnn" / "model_opset17.onnx"
    open_file(win, path)
    proto = onnx.load(str(path))
    inits = {t.name for t in proto.graph.initializer}
    first = {}
    for n in proto.graph.node:
        first.setdefault(n.op_type, n)
    conv, pool = first["Conv"], first["AveragePool"]
    assert conv.input[1] in inits and len(conv.input) == 3 and conv.input[2] in inits  # weight and bias
    assert not set(pool.input) & inits

    win.focus_node(conv.name)
    assert _shown(win) == ["weight", "activation", "bias"] and win.inspector.roles_note.isHidden()
    assert win.inspector.roles["weight"].granularity.currentText() == "per_channel"
    win.focus_node(pool.name)
    assert _shown(win) == ["activation"]
    win.focus_node(first["Relu"].name)
    assert _shown(win) == []
    assert "folded into the unit of the node before it" in win.inspector.roles_note.text()
    assert not win.inspector.roles_note.isHidden()
    win.focus_node(first["Flatten"].name)
    assert _shown(win) == [] and "passes its input through" in win.inspector.roles_note.text()

    # Conv + AveragePool: weight settings shown (they apply to the Conv) and edited on the Conv only
    win.canvas.select_nodes([conv.name, pool.name])
    assert _shown(win) == ["weight", "activation", "bias"]
    win.inspector.roles["weight"].granularity.setCurrentText("per_tensor")
    overrides = win.doc.recipe.overrides
    assert overrides[conv.name].weight.granularity.value == "per_tensor" and pool.name not in overrides
    assert win.doc.plan.units[conv.name].config.weight.granularity.value == "per_tensor"
    win.act_undo.trigger()
    assert conv.name not in win.doc.recipe.overrides


def test_exclude_is_offered_only_for_node_units(qtbot, window, open_file, corpus):
    """A Relu folded into the Conv's unit had its exclude box enabled: ticking it recorded an override
    (title '*', a save prompt later) that changed nothing in the plan. Now the box is off there with a
    tooltip, and a mixed selection's exclude reaches the unit only."""
    win = window
    open_file(win, corpus / "digits_cnn" / "model_opset17.onnx")
    conv, relu = "/f/f.0/Conv", "/f/f.2/Relu"
    assert relu in win.doc.plan.units[conv].nodes and relu not in win.doc.plan.units  # folded
    win.focus_node(relu)
    box = win.inspector.exclude
    assert not box.isEnabled() and "Not a node unit of its own" in box.toolTip()
    win.canvas.select_nodes([conv, relu])
    assert box.isEnabled()
    box.click()
    assert win.doc.plan.units[conv].excluded
    assert set(win.doc.recipe.overrides) == {conv}  # nothing recorded for the folded Relu
