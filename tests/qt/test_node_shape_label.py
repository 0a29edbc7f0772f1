"""A node's output shape keeps every dim when it is too wide for the box: the long named dims are cut at their end
("p2o.Dyna… x 480 x ? x ?") instead of the whole text in the middle, which on every node of ppocrv4_rec (batch dim
"p2o.DynamicDimension.0") read "p2o.Dynamic…480 x ? x ?": three dims, the first of them "p2o.Dynamic…480"."""

from __future__ import annotations

import onnx
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetricsF

from workbench.core.graph.layout import graph_structure
from workbench.qt.canvas.items import _Fonts, fit_shape
from workbench.qt.canvas.scene_data import NODE_W

ROOM = NODE_W - 10  # what a node box leaves for its text (px)


@pytest.fixture
def metrics(qapp) -> QFontMetricsF:
    _Fonts.ensure()
    return QFontMetricsF(_Fonts.name)


def _dims(text: str) -> list[str]:
    return text.split(" x ")


def test_a_long_batch_name_is_cut_and_the_sizes_stay(metrics):
    shape = "p2o.DynamicDimension.0 x 480 x ? x ?"
    assert metrics.horizontalAdvance(shape) > ROOM  # the case: too wide for the box
    label = fit_shape(shape, metrics, ROOM)
    assert metrics.horizontalAdvance(label) <= ROOM
    first, *rest = _dims(label)
    assert rest == ["480", "?", "?"]
    assert first.endswith("\u2026") and "p2o.DynamicDimension.0".startswith(first[:-1]) and len(first) > 4
    elided = metrics.elidedText(shape, Qt.TextElideMode.ElideMiddle, ROOM)
    assert len(_dims(elided)) == 3  # what the box drew before: a dim lost


def test_the_longest_name_is_cut_first_and_short_shapes_stay_whole(metrics):
    label = fit_shape("batch x 3 x sequence_length_of_the_input", metrics, ROOM)
    dims = _dims(label)
    assert dims[:2] == ["batch", "3"] and dims[2].endswith("\u2026") and len(dims) == 3
    for shape in ("batch x 64 x ? x ?", "1x3x48x320", "scalar"):
        assert fit_shape(shape, metrics, ROOM) == shape


#: the shapes most nodes of ppocrv4_rec quantized by Workbench show (its shape inference names the batch dim)
QUANTIZED_SHAPES = ("p2o.DynamicDimension.0 x 240 x ? x ?", "p2o.DynamicDimension.0 x 480 x ? x ?",
                    "p2o.DynamicDimension.0 x 64 x ? x ?", "p2o.DynamicDimension.0 x 240 x 1 x 1")


def test_every_long_shape_of_ppocrv4_rec_keeps_its_dims(metrics, corpus):
    structure = graph_structure(onnx.load(corpus / "ppocrv4_rec" / "model.onnx"))
    output = "p2o.DynamicDimension.2 x p2o.DynamicDimension.3 x 6625"  # the float model's output, two names
    assert output in structure.out_shapes
    for shape in (output, *QUANTIZED_SHAPES):
        assert metrics.horizontalAdvance(shape) > ROOM, shape
        label = _Fonts.shape_label(shape)
        assert metrics.horizontalAdvance(label) <= ROOM, shape
        assert len(_dims(label)) == len(_dims(shape)), (shape, label)
        assert [d for d in _dims(label) if d.isdigit() or d == "?"] == \
            [d for d in _dims(shape) if d.isdigit() or d == "?"], (shape, label)
        assert all(d.startswith("p2o.") for d in _dims(label) if not (d.isdigit() or d == "?")), label
