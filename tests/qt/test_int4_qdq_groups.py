"""An int4 QDQ file's collapsed group and banner say what onnxruntime runs: its DequantizeLinear int4 weight and
MatMul fused into MatMulNBits at the session's default accuracy_level, read from onnxruntime's optimized graph
(test_int4_qdq_as_run). The box read "3 MatMulNBits float/i4" and was filled float-white in the dtype mode, the
banner "QDQ: 6 MatMul float/int4". Offscreen."""

from __future__ import annotations

import pytest
from test_int4_qdq_as_run import FUSED_WORDS, as_run_words, int4_qdq_model

pytest.importorskip("PySide6")

from workbench.core.inspection.quant_summary import summarize_quantization  # noqa: E402
from workbench.qt.canvas import colors  # noqa: E402
from workbench.qt.canvas.group_figures import short_dtypes  # noqa: E402
from workbench.qt.quant_banner import QuantBanner  # noqa: E402
from workbench.qt.quant_tab import quant_info  # noqa: E402


def _collapsed(qtbot, canvas, proto) -> None:
    summary = summarize_quantization(proto)
    canvas.set_quant_info(*quant_info(summary, [], proto), compute=summary.compute)
    with qtbot.waitSignal(canvas.layoutReady, timeout=300_000):
        canvas.set_model(proto, collapse_qdq=True, depth=0)
    canvas.set_node_values(dtypes=summary.node_dtypes)
    canvas.set_color_mode("dtype")


def test_int4_qdq_box_and_banner_read_as_run(qtbot, make_canvas, tmp_path):
    proto = int4_qdq_model(6)  # two groups: blk0 and blk1, three units each
    kind, act = as_run_words(tmp_path, proto)  # from the fused node's accuracy_level
    canvas = make_canvas(1000, 800)
    _collapsed(qtbot, canvas, proto)
    d = canvas._state.data
    shown = [g for g in d.group_ids if g in d.placement.collapsed]
    assert len(shown) == 2
    for g in shown:
        assert canvas._state.group_texts[g] == f"3 MatMulNBits {short_dtypes(act)}/i4"  # "3 MatMulNBits i8/i4"
        assert canvas._state.group_fills[g] == colors.dtype_color(act)
    banner = QuantBanner()
    qtbot.addWidget(banner)
    banner.show_summary(summarize_quantization(proto), "int4.onnx")
    words = FUSED_WORDS if kind == "dynamic" else kind  # names the file's QDQ beside the format it runs as
    assert f"already quantized</b> - {words}: 6 MatMul {act}/int4; quantized ops: 6 MatMul." in banner.text()
