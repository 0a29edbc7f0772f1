"""``render FLOAT --compare QUANTIZED``: the colour legends cover no node. The two panes share one view,
and each canvas's own fit kept clear of its own legend only: on ppocrv4_rec the quantized pane's taller
SQNR legend covered its first 13 nodes (p2o.Conv.0 on)."""

from __future__ import annotations

import onnx
import pytest

from workbench.core import api
from workbench.qt.render import draw_panes


def _covered(canvas) -> tuple[list[str], list[str]]:
    """Nodes whose rectangle (viewport pixels) meets the legend's, and nodes not fully in the viewport."""
    legend = canvas.legend_rect()
    assert not legend.isEmpty()
    under, outside = [], []
    for name in canvas._state.data.names:
        rect = canvas.mapFromScene(canvas.node_scene_rect(name)).boundingRect()
        if legend.intersects(rect):
            under.append(name)
        if not canvas.viewport().rect().contains(rect):
            outside.append(name)
    return under, outside


@pytest.mark.parametrize("name,file", [("ppocrv4_rec", "model.onnx"), ("digits_transformer", "model_opset17.onnx")])
def test_no_node_under_either_legend(qtbot, corpus, tmp_path, name, file):
    folder = corpus / name
    model = api.open_model(folder / file)
    quant = tmp_path / "q.onnx"
    api.export(api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(folder / "calib.npz"), samples=4,
                            latency_check=False), quant)
    errors = {o: 30.0 for n in onnx.load(str(quant)).graph.node for o in n.output}  # SQNR colours, as --data gives
    panes = draw_panes(str(folder / file), str(quant), edge_errors=errors)
    try:
        for canvas in (panes.float_canvas, panes.quant_canvas):
            under, outside = _covered(canvas)
            assert under == [] and outside == []
        assert panes.width() <= 2400 and panes.height() <= 2400
    finally:
        panes.shutdown()
        panes.close()
