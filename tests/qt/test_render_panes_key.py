"""``render FLOAT --compare QUANTIZED``: the key above the panes names the dtypes of the quantized pane's edge pills.

The key was written when the panes were made, before the quantized pane was laid out, and only the app's diff tab
(one key for both panes, refreshed on colour changes) wrote it again: render's picture of ppocrv4_rec vs
onnxruntime's QDQ file read "edge pills: Q/DQ pair inserted" where the app says "edge pills (u8, i8)". It is
written again once both panes are drawn.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import onnx
from quant_bias_models import quantized_model
from test_diff_key_wrap import key_text

from workbench.core.api import graph_structure
from workbench.qt.render import draw_panes


def test_render_key_names_the_pill_dtypes_and_tags(qtbot, tmp_path):
    quant = quantized_model(tmp_path, "QDQ")  # onnxruntime's QDQ file: int8 pairs, int32 biases
    badges = graph_structure(onnx.load(str(quant)), collapse_qdq=True).edge_badges.values()
    assert Counter(badges) == Counter({"i8": 3})  # conv -> relu ... -> gemm -> mm: the pairs inside the graph
    panes = draw_panes(str(Path(tmp_path) / "float.onnx"), str(quant))
    try:
        text = panes.key.text()
        assert ("edge pills (i8): Q/DQ pair inserted; w: weight DQ; b: bias DQ; out: pair before a graph output"
                in key_text(text))
    finally:
        panes.shutdown()
        panes.close()
