"""The diff panes (View > Compare) and ``render --compare`` draw a tensor whose SQNR is -inf (all noise, no
signal left) red at -100 dB, as the app's canvas and ``render --colour sqnr`` draw such a unit (606ffb5,
``error_rank.canvas_sqnr``). They left it out of the colour values and drew it grey ("no value")."""

from __future__ import annotations

import math
import re

import onnx
import pytest
from bundled_example import EXAMPLE

from workbench.cli import main
from workbench.cli_sqnr_colours import colour_db
from workbench.core import api
from workbench.qt.canvas import colors
from workbench.qt.canvas.legend import legend_entries
from workbench.qt.diff_panes import INF_DB
from workbench.qt.error_rank import canvas_db, canvas_values
from workbench.qt.render import draw_panes

RED = colors.ERROR_STOPS[0][1].name()


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    """digits_cnn, its calibration data and our QDQ export of it (cpu-u8s8, 8 samples)."""
    float_path, calib = EXAMPLE / "digits_cnn.onnx", EXAMPLE / "digits_cnn_calib.npz"
    out = tmp_path_factory.mktemp("noise") / "q.onnx"
    api.export(api.quantize(api.open_model(float_path), api.make_recipe("cpu-u8s8"), data=str(calib), samples=8,
                            latency_check=False), out)
    return float_path, out, calib


def test_one_mapping_for_every_sqnr_picture():
    for db in (math.inf, -math.inf, 12.5, -3.0, 0.0):
        assert colour_db(db) == canvas_db(db, INF_DB)  # render (CLI side) and the app
    assert canvas_values({"a": -math.inf, "b": math.inf, "c": math.nan, "d": 7.0}, INF_DB) == {
        "a": -100.0, "b": 100.0, "d": 7.0}  # NaN (not measured) left out: grey


def _first_conv(q: onnx.ModelProto) -> tuple[str, str]:
    conv = next(n for n in q.graph.node if n.op_type == "Conv")
    return conv.name, conv.output[0]


def test_the_quantized_pane_draws_all_noise_red(qtbot, export):
    float_path, quant, _calib = export
    q = onnx.load(str(quant))
    conv, tensor = _first_conv(q)
    errors = {o: 30.0 for n in q.graph.node for o in n.output}
    errors[tensor] = -math.inf  # as compare_models measures a tensor with no signal left
    panes = draw_panes(str(float_path), str(quant), edge_errors=errors)
    try:
        qc = panes.quant_canvas
        assert qc.node_color(conv).name() == RED  # was colors.NO_VALUE (grey)
        structure = qc._state.data.structure
        edges = [e for e, (a, _b) in enumerate(structure.edges) if structure.names[a] == conv]
        assert edges and all(qc.edge_error(e) == -INF_DB and qc.edge_color(e).name() == RED for e in edges)
        assert legend_entries(qc)[2][0] == ("linear between the stops; bit-exact shown as 100 dB, all noise (-inf) "
                                            "as -100 dB (red)")  # the diff key's words, as the app's legend says
        others = [n.name for n in q.graph.node if n.op_type in ("Gemm", "MatMul")]
        assert others and all(qc.node_color(n) == colors.error_color(30.0) for n in others)
    finally:
        panes.shutdown()
        panes.close()


@pytest.mark.slow
def test_render_compare_draws_all_noise_red(qtbot, export, tmp_path, monkeypatch):
    float_path, quant, calib = export
    conv, tensor = _first_conv(onnx.load(str(quant)))
    compare = api.compare_models

    def all_noise_at_the_first_conv(*args, **kwargs):
        diff = compare(*args, **kwargs)
        back = {qt: ft for ft, qt in diff.tensors.items()}
        diff.sqnr[back[tensor]] = -math.inf
        return diff

    monkeypatch.setattr(api, "compare_models", all_noise_at_the_first_conv)
    svg = tmp_path / "panes.svg"
    assert main(["render", str(float_path), "--compare", str(quant), "--data", str(calib), "--samples", "4",
                 "-o", str(svg)]) == 0
    fills = re.findall(r'fill="(#[0-9a-f]{6})"', svg.read_text(encoding="utf-8"))
    assert fills.count(RED) >= 2  # the Conv and its edge (none before: grey)
