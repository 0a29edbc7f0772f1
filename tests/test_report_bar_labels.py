"""The report's per-unit SQNR bars: node names shortened in the middle (the last 40 characters were kept,
"ncoder/layer.5/..." with the layer number cut off) and drawn inside the figure (the labels started left
of its edge; only the tight bounding box of the SVG hid that)."""

from __future__ import annotations

from types import SimpleNamespace

from workbench.core.report.figures import _short_names, sqnr_bars

NAMES = [f"/bert/encoder/layer.{i % 6}/attention/output/dense/MatMul_{i}" for i in range(10)] + [
    "/bert/encoder/layer.5/intermediate/intermediate_act_fn/Mul_1", "/bert/embeddings/LayerNorm/LayerNormalization"]


def test_names_keep_both_ends_and_stay_apart_inside_the_figure():
    rows = [SimpleNamespace(node=n, op_type="MatMul", sqnr_db=5.0 + 3 * i) for i, n in enumerate(NAMES)]
    fig = sqnr_bars(rows, top=12, note="12 samples")
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == "/bert/encoder/layer.0/at...ion/output/dense/MatMul_0 (MatMul)"
    assert labels[11] == "/bert/embeddings/LayerNorm/LayerNormalization (MatMul)"  # short enough: whole
    assert len(set(labels)) == 12
    for name, label in zip(NAMES, labels, strict=True):
        shown = label.removesuffix(" (MatMul)")
        head, _, tail = shown.partition("...")
        assert name.startswith(head) and name.endswith(tail) and len(shown) <= 52
    fig.draw_without_rendering()
    left = min(t.get_window_extent().x0 for t in ax.get_yticklabels())
    assert left >= 0.0  # pixels from the figure's left edge


def test_shortening_widens_until_names_read_apart():
    names = ["/model/layers.0/block/sub/deep/path/Conv", "/model/layers.1/block/sub/deep/path/Conv"]
    # at 20..32 characters both read "/model/layers....": widened by 4 until the layer number shows
    assert _short_names(names, width=20) == ["/model/layers.0/...ub/deep/path/Conv", "/model/layers.1/...ub/deep/path/Conv"]
