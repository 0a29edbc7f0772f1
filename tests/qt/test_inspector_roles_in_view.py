"""Selecting a node in a 1024 x 700 window shows its weight and its activation settings without scrolling. The
Inspector stacked the Node section (327 px for nudenet_320n's first Conv) and three role boxes of ten rows each
(about 300 px each) in a 367 px viewport: the Activation box started at y = 690. The role sections now come before
the Node section, take fewer rows, and fold: one is unfolded (the weight's, or the one the user unfolded last), the
others show their settings in one line under their header."""

from __future__ import annotations

from PySide6.QtCore import Qt

CONV = "/model.0/conv/Conv"


def _in_view(inspector, widget) -> bool:
    """Whether ``widget`` (in the Inspector's scrolled body) is shown and wholly inside the viewport."""
    viewport = inspector.scroll.viewport()
    top = widget.mapTo(viewport, widget.rect().topLeft()).y()
    return widget.isVisible() and top >= 0 and top + widget.height() <= viewport.height()


def _words(spec, source: str) -> str:
    """A folded role section's line for the QuantSpec ``spec`` resolved from ``source``."""
    sym = "symmetric" if spec.symmetric else "asymmetric"
    return f"{spec.dtype}, {sym}, {spec.granularity.value}, {spec.observer} ({source})"


def test_weight_and_activation_settings_show_without_scrolling(qtbot, window, open_file, corpus):
    win = window
    win.resize(1024, 700)
    open_file(win, corpus / "nudenet_320n" / "model.onnx")
    win.inspector.set_nodes([CONV])
    qtbot.wait(50)  # the body's layout settles
    insp = win.inspector
    weight, activation = insp.roles["weight"], insp.roles["activation"]
    assert insp.scroll.viewport().height() < 400
    resolved = win.doc.resolve(CONV)
    # the weight's fields and the activation's settings in view, none scrolled to
    assert insp.scroll.verticalScrollBar().value() == 0
    assert _in_view(insp, activation.toggle) and _in_view(insp, activation.summary)  # y = 690 before
    for field in (weight.dtype, weight.granularity, weight.axis, weight.observer, weight.symmetric):
        assert _in_view(insp, field), field
    assert activation.summary.text() == _words(resolved.config.activation, resolved.sources["activation"])
    assert activation.summary.text() == "uint8, asymmetric, per_tensor, minmax (preset cpu-u8s8)"
    assert not activation.dtype.isVisible() and weight.summary.isHidden()

    # unfolding the activation folds the weight to its line; both in view
    qtbot.mouseClick(activation.toggle, Qt.MouseButton.LeftButton)
    qtbot.wait(50)
    assert activation.expanded() and not weight.expanded()
    assert _in_view(insp, weight.summary)
    assert weight.summary.text() == _words(resolved.config.weight, resolved.sources["weight"])
    assert weight.summary.text() == "int8, symmetric, per_channel, minmax (preset cpu-u8s8)"
    for field in (activation.dtype, activation.granularity, activation.observer, activation.symmetric):
        assert _in_view(insp, field), field
    assert not activation.axis.isVisible()  # per_tensor: no axis row

    # an edit shows in the folded line; the unfolded section stays the one the user chose for the next node
    activation.dtype.setCurrentText("int16")
    assert win.doc.recipe.overrides[CONV].activation.dtype == "int16"
    qtbot.mouseClick(weight.toggle, Qt.MouseButton.LeftButton)
    assert weight.expanded() and not activation.expanded()
    assert activation.summary.text() == "int16, asymmetric, per_tensor, minmax (override)"
    qtbot.mouseClick(activation.toggle, Qt.MouseButton.LeftButton)
    concat = next(n.name for n in win.doc.model.proto.graph.node if n.op_type == "Concat")
    win.inspector.set_nodes([concat])  # no weight settings
    assert weight.isHidden() and activation.expanded()
    win.inspector.set_nodes(["/model.1/conv/Conv"])
    assert activation.expanded() and not weight.expanded()
    assert _in_view(insp, weight.summary) and _in_view(insp, activation.observer)
