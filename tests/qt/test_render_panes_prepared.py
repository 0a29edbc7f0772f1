"""``render FLOAT --compare QUANTIZED`` diffs the quantized file prepared as ``compare`` prepares it.

The panes diffed the raw ``onnx.load`` of the quantized file: its unnamed nodes had other keys than in
``compare`` (which names them as ``open_model`` does, ``Conv_0``), so the pane diff's matches and the
SQNR the CLI measured (keyed by ``compare``'s tensor names) disagreed with ``compare`` on the same pair.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

from workbench.core import api
from workbench.qt.render import draw_panes


class _Rows(CalibrationDataReader):
    def __init__(self, feed: dict[str, np.ndarray]):
        self.feed, self.i = feed, 0

    def get_next(self):
        n = len(next(iter(self.feed.values())))
        if self.i >= n:
            return None
        self.i += 1
        return {k: v[self.i - 1:self.i] for k, v in self.feed.items()}


@pytest.fixture
def pair(corpus, tmp_path):
    """digits_cnn's float file, and onnxruntime's quantize_static QDQ file of it with every node unnamed."""
    folder = corpus / "digits_cnn"
    fpath, qpath, data = folder / "model_opset13.onnx", tmp_path / "q_unnamed.onnx", tmp_path / "rows.npz"
    feed = {k: v[:4] for k, v in np.load(folder / "calib.npz").items()}
    np.savez(data, **feed)
    quantize_static(str(fpath), str(qpath), _Rows(feed), quant_format=QuantFormat.QDQ)
    q = onnx.load(str(qpath))
    for n in q.graph.node:
        n.name = ""
    onnx.save(q, str(qpath))
    return fpath, qpath, data


def test_pane_diff_counts_equal_compare(qtbot, pair):
    """Every count (matched by status, Q/DQ pairs, folded, removed, added) and every matched node pair of
    the panes equals ``compare``'s; the SQNR ``render --compare`` measured (keyed by ``compare``'s quantized
    tensor names) reaches every matched float tensor."""
    fpath, qpath, data = pair
    model = api.open_model(fpath)
    diff = api.compare_models(model, api.open_model(qpath).proto, str(data), quant_label=str(qpath))
    finite = {q: db for f, db in diff.sqnr.items() if db > -math.inf for q in [diff.tensors[f]]}
    assert diff.counts()["added"] == 0 and len(diff.matches) > 0
    panes = draw_panes(str(fpath), str(qpath), edge_errors=finite)
    try:
        assert panes.diff.counts() == diff.counts()
        pairs = sorted((m.float_node, m.quant_node) for m in panes.diff.matches)
        assert pairs == sorted((m.float_node, m.quant_node) for m in diff.matches)
        assert panes.diff.sqnr == {f: db for f, db in diff.sqnr.items() if db > -math.inf}
        assert {n.name for n in panes.quant_proto.graph.node} == {n.name for n in diff.quant_proto.graph.node}
    finally:
        panes.shutdown()
        panes.close()
