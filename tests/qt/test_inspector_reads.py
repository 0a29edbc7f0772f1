"""The inspector says what the selected nodes actually read, greys the settings of an excluded node, counts
the weight ops without a constant weight, and wraps its text instead of scrolling sideways.

A Conv set to int16 activations still read uint8 in the exported model (its input is its producer's output,
on the producer's grid) and only 'tensor X uses the activation spec of Y' rows in Problems said why; an
excluded node showed 'quantize' ticked and its dtype as if they applied; 48 MatMuls of which 36 have a
constant weight said 'MatMul has no constant float32 weight: weight settings do not apply' while the weight
fields stayed editable.
"""

from __future__ import annotations

import onnx
from onnx import TensorProto

from workbench.core import api

CONV, PRODUCER = "/f/f.3/Conv", "/f/f.0/Conv"  # digits_cnn: the second Conv reads the first one's Relu output


def _activation(win):
    return win.inspector.roles["activation"]


def _written_input_dtype(proto: onnx.ModelProto, node: str) -> int:
    """The zero point dtype of the DequantizeLinear feeding ``node``'s first input in a written QDQ model."""
    by_out = {o: n for n in proto.graph.node for o in n.output}
    inits = {t.name: t for t in proto.graph.initializer}
    (conv,) = [n for n in proto.graph.node if n.name == node]
    dq = by_out[conv.input[0]]
    assert dq.op_type == "DequantizeLinear"
    return inits[dq.input[2]].data_type


def test_reads_says_the_producers_dtype(qtbot, window, open_file, corpus, tmp_path):
    win = window
    folder = corpus / "digits_cnn"
    open_file(win, folder / "model_opset17.onnx")
    win.focus_node(CONV)
    act = _activation(win)
    assert act.reads.text() == "reads uint8 from /f/f.0/Conv, as its own setting"
    act.dtype.setCurrentText("int16")
    assert win.doc.recipe.overrides[CONV].activation.dtype == "int16"
    assert act.reads.text() == "reads uint8 from /f/f.0/Conv (set its activation to change this)"
    assert not act.reads.isHidden()
    # the written model agrees: the Conv's input is still uint8
    model = api.open_model(folder / "model_opset17.onnx")
    written = api.quantize(model, win.doc.recipe, data={"kind": "npz", "path": str(folder / "calib.npz")},
                           samples=4).proto
    assert _written_input_dtype(written, CONV) == TensorProto.UINT8
    # a selection: counted (the last Conv reads its own uint8 grid: the MaxPool before it is requantized)
    win.canvas.select_nodes([CONV, "/f/f.7/Conv"])
    assert act.reads.text() == ("1 of 2 read uint8 from the nodes before them (/f/f.0/Conv): set those nodes' "
                                "activation to change it; 1 of 2 read uint8 as set")
    # setting the producer changes what it reads
    win.focus_node(PRODUCER)
    _activation(win).dtype.setCurrentText("int16")
    win.focus_node(CONV)
    assert act.reads.text() == "reads int16 from /f/f.0/Conv, as its own setting"
    written = api.quantize(model, win.doc.recipe, data={"kind": "npz", "path": str(folder / "calib.npz")},
                           samples=4).proto
    assert _written_input_dtype(written, CONV) == TensorProto.INT16


def test_excluded_node_greys_its_settings(qtbot, window, open_file, corpus):
    win = window
    open_file(win, corpus / "digits_cnn" / "model_opset17.onnx")
    win.focus_node(CONV)
    assert all(e.isEnabled() for e in win.inspector.roles.values())
    win.inspector.exclude.click()
    assert win.doc.plan.units[CONV].excluded
    assert not any(e.isEnabled() for e in win.inspector.roles.values())
    assert win.inspector.roles_note.text().startswith("Excluded: kept in float, so the settings below do not apply")
    assert _activation(win).source.text().startswith("excluded: kept in float")
    assert _activation(win).reads.isHidden()  # an excluded unit reads float
    win.canvas.select_nodes([CONV, PRODUCER])
    assert all(e.isEnabled() for e in win.inspector.roles.values() if not e.isHidden())
    assert win.inspector.roles_note.text().startswith("1 of 2 selected nodes are excluded (kept in float)")


def test_matmul_weight_note_counts(qtbot, window, open_file, corpus):
    win = window
    path = corpus / "minilm_l6_v2" / "model.onnx"
    open_file(win, path)
    proto = onnx.load(str(path), load_external_data=False)
    inits = {t.name: t.data_type for t in proto.graph.initializer}
    matmuls = [n for n in proto.graph.node if n.op_type == "MatMul"]
    weighted = sum(inits.get(n.input[1]) == TensorProto.FLOAT for n in matmuls)
    assert (len(matmuls), weighted) == (48, 36)
    win.canvas.select_nodes([n.name for n in matmuls])
    note = win.inspector.roles_note.text()
    assert "12 of 48 MatMul have no constant float32 weight; weight settings apply to the other 36." in note, note
    assert "weight settings do not apply" not in note
    assert not win.inspector.roles["weight"].isHidden()
    bare = [n.name for n in matmuls if inits.get(n.input[1]) != TensorProto.FLOAT]
    win.canvas.select_nodes(bare)
    assert "None of the 12 MatMul has a constant float32 weight" in win.inspector.roles_note.text()
    assert win.inspector.roles["weight"].isHidden()


def test_narrow_inspector_wraps_instead_of_scrolling(qtbot, window, open_file, corpus):
    win = window
    open_file(win, corpus / "digits_cnn" / "model_opset17.onnx")
    win.focus_node(CONV)
    _activation(win).dtype.setCurrentText("int16")
    win.inspector.resize(230, 600)
    win.inspector.setFixedWidth(230)
    qtbot.wait(50)
    bar = win.inspector.scroll.horizontalScrollBar()
    assert bar.maximum() == 0, bar.maximum()  # was 37 px past the right edge
