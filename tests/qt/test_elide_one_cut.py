"""Names too long for their column read with one cut where that keeps them apart.

When even a name's telling segments did not fit, the label dropped the shared start and then cut the middle of
what was left: minilm_l6_v2's "/bert/embeddings/word_embeddings/Gather" read "…word_emb…s/Gather" in a 150 px
column (the diff tab's list, the Errors bars), "/bert/ConstantOfShape" read "…Con…ape" at 80 px. Such a label is
now the name's end after one ellipsis ("…rd_embeddings/Gather") when no other name's end reads the same; names
whose ends are alike still get the forms that tell them apart (offscreen)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from PySide6.QtWidgets import QTreeWidget  # noqa: E402

from workbench.qt.elide import ELLIPSIS, distinct_labels  # noqa: E402

EMBEDDINGS = ["/bert/embeddings/word_embeddings/Gather", "/bert/embeddings/token_type_embeddings/Gather",
              "/bert/embeddings/position_embeddings/Gather", "/bert/embeddings/Add", "/bert/embeddings/Add_1",
              "/bert/embeddings/LayerNorm/LayerNormalization", "/bert/embeddings/Constant_1",
              "/bert/embeddings/Constant_2", "/bert/embeddings/Unsqueeze", "/bert/ConstantOfShape",
              "/bert/ConstantOfShape_1"]
LAYERS = [f"/bert/encoder/layer.{k}/attention/self/{part}/MatMul" for k in range(6) for part in ("query", "key")]


def test_a_long_name_keeps_its_end_after_one_ellipsis(qapp):
    names = EMBEDDINGS + LAYERS
    metrics = QTreeWidget().fontMetrics()
    for width in (80, 110, 150):
        labels = distinct_labels(names, [""] * len(names), metrics, width)
        shown = dict(zip(names, labels, strict=True))
        assert len(set(labels)) == len(names), (width, labels)
        assert all(metrics.horizontalAdvance(t) <= width for t in labels)
        for name in EMBEDDINGS[3:] if width < 150 else EMBEDDINGS:  # the Gathers' ends read alike below 150 px
            label = shown[name]
            assert label.count(ELLIPSIS) <= 1 and name.endswith(label.lstrip(ELLIPSIS)), (width, name, label)
    shown = dict(zip(names, distinct_labels(names, [""] * len(names), metrics, 150), strict=True))
    assert shown["/bert/embeddings/word_embeddings/Gather"].endswith("_embeddings/Gather")  # was "…word_emb…s/Gather"
    # the layers' ends are alike ("…query/MatMul" six times): each label still names its layer
    for k in range(6):
        assert f"{k}/" in shown[f"/bert/encoder/layer.{k}/attention/self/query/MatMul"]
