"""``read_as_written``: the opened float file read again, prepared without folding; None when it changed."""

from __future__ import annotations

import logging

import onnx
from qdq_helpers import conv_bn_mul_add_model

from workbench.core.inspection.float_graph import float_as_written
from workbench.core.model.as_written import read_as_written
from workbench.core.model.load import load_model


def test_unchanged_file_keeps_the_batchnorm_and_mul_add(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(conv_bn_mul_add_model(), path)
    model = load_model(path)
    assert {"BatchNormalization", "Mul", "Add"}.isdisjoint(n.op_type for n in model.proto.graph.node)
    raw = read_as_written(model)
    assert [n.name for n in raw.graph.node][:7] == ["conv1", "bn1", "relu1", "conv2", "mul2", "add2", "relu2"]
    assert float_as_written(model).graph.node[1].op_type == "BatchNormalization"


def test_changed_file_gives_none_and_compare_uses_the_opened_graph(tmp_path, caplog):
    path = tmp_path / "m.onnx"
    onnx.save(conv_bn_mul_add_model(seed=0), path)
    model = load_model(path)
    onnx.save(conv_bn_mul_add_model(seed=1), path)  # other weights: not the bytes that were opened
    with caplog.at_level(logging.WARNING):
        assert read_as_written(model) is None
    assert "changed since it was opened" in caplog.text
    assert float_as_written(model) is model.proto


def test_model_without_file_gives_none(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(conv_bn_mul_add_model(), path)
    model = load_model(path)
    path.unlink()
    assert read_as_written(model) is None
    assert float_as_written(model) is model.proto
