"""A collapsed group box coloured by SQNR says "kept float" when the recipe keeps its nodes float.

After a calibration of nudenet_320n (its recipe choice keeps 9 units float), the boxes model.0 and model.1
(Conv + Sigmoid + Mul each) read "3 nodes · no value" in grey, the words of a block nothing was measured in;
the op colouring's legend counted them "kept float" while no collapsed box showed it. Now their text is
"kept float"; a block of nodes neither measured nor kept float still reads "no value".
"""

from __future__ import annotations

from graph_models import blocks_model

from workbench.qt.canvas import colors


def _texts(canvas) -> dict[str, tuple[str, object]]:
    d = canvas._state.data
    return {d.hierarchy.titles[g]: (canvas._state.group_texts.get(g), canvas._state.group_fills.get(g))
            for g in d.group_ids}


def test_float_blocks_read_kept_float(qtbot, make_canvas):
    canvas = make_canvas(900, 700)
    with qtbot.waitSignal(canvas.layoutReady, timeout=300_000):
        canvas.set_model(blocks_model(3, 3), depth=0)
    canvas.set_node_values(errors={f"/blk1/Relu_{i}": 20.0 + i for i in range(3)})
    canvas.set_color_mode("error")
    canvas.set_float_nodes([f"/blk0/Relu_{i}" for i in range(3)])  # after the colouring, as the app does
    texts = _texts(canvas)
    assert texts["blk0"] == ("kept float", colors.NO_VALUE)  # was "no value"
    assert texts["blk1"][0] == "worst 20.0 dB"
    assert texts["blk2"] == ("no value", colors.NO_VALUE)
    canvas.set_float_nodes([])
    assert _texts(canvas)["blk0"][0] == "no value"
    canvas.set_float_nodes(["/blk2/Relu_1"])  # one kept float among nodes without a value
    assert _texts(canvas)["blk2"][0] == "kept float"
