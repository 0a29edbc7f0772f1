"""Aligned panes of ppocrv4_rec vs onnxruntime's quantize_static QDQ file (api.pane_layout).

Counts are read from the two files with onnx: every Q/DQ node of the quantized file is marked on
something the right pane draws, every matched node and every Constant weight sits where its partner
does, and the Clip / Relu ops onnxruntime fuses into the quantization of their producer keep rows
of their own in the float pane, between that producer and their consumer.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import pytest
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

from workbench.core import api


class _Reader(CalibrationDataReader):
    def __init__(self, name: str, x: np.ndarray):
        self.it = iter([{name: x[i:i + 1]} for i in range(len(x))])

    def get_next(self):
        return next(self.it, None)


@pytest.mark.slow
def test_ppocrv4_rec_panes_vs_quantize_static(corpus, tmp_path):
    folder = corpus / "ppocrv4_rec"
    fproto = onnx.load(str(folder / "model.onnx"))
    name = fproto.graph.input[0].name
    with np.load(folder / "calib.npz") as npz:
        x = npz[name if name in npz.files else npz.files[0]][:2]
    out = tmp_path / "ort.onnx"
    quantize_static(str(folder / "model.onnx"), str(out), _Reader(name, x), quant_format=QuantFormat.QDQ)
    qproto = onnx.load(str(out))
    diff = api.diff_models(fproto, qproto)
    layout = api.pane_layout(fproto, qproto, diff, use_cache=False)
    qdq = [n.name for n in qproto.graph.node if n.op_type in ("QuantizeLinear", "DequantizeLinear")]
    assert len(qdq) > 1000 and set(layout.qdq_marks) == set(qdq)
    assert all(layout.qdq_marks[n] for n in qdq)  # each one marked somewhere
    structure = api.graph_structure(qproto, collapse_qdq=True)
    assert sorted(layout.quant_positions) == sorted(structure.names)
    assert len(structure.names) == len(qproto.graph.node) - len(qdq)
    assert sorted(layout.float_positions) == sorted(n.name or f"{n.op_type}#{i}" for i, n in enumerate(fproto.graph.node))
    for m in diff.matches:
        assert layout.float_positions[m.float_node] == layout.quant_positions[m.quant_node]
    constants = Counter(n.op_type for n in fproto.graph.node)["Constant"]
    assert len(layout.pairs) == constants > 0
    for f, q in layout.pairs.items():
        assert layout.float_positions[f] == layout.quant_positions[q]
    # ops folded / fused by onnxruntime: the float graph's Clip and Relu that its file no longer has
    fops, qops = Counter(n.op_type for n in fproto.graph.node), Counter(n.op_type for n in qproto.graph.node)
    folded = Counter(op for _n, op in diff.folded)
    assert folded == {op: fops[op] - qops[op] for op in ("Clip", "Relu") if fops[op] > qops[op]} and folded
    producers = {o: n for n in fproto.graph.node for o in n.output}
    used = set(layout.quant_positions.values())
    for node, into in diff.folded_into.items():
        src = producers[next(n for n in fproto.graph.node if n.name == node).input[0]]
        assert diff.partner(src.name) == into  # the matched node it reads from
        y = layout.float_positions[node][1]
        assert y > layout.float_positions[src.name][1]
        assert layout.float_positions[node] not in used  # a place of its own: a gap on the right
