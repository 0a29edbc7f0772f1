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
