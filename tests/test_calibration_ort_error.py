"""onnxruntime refusing a calibration sample is one line that reads as sentences: its message ended with no full
stop before the hint ("... inclusive range [0,2] Check that these samples ..."), and a cut at 400 characters could
stop mid-word."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.errors import CalibrationError, ModelError, runtime_reason


def _gather_model(path) -> str:
    """ids (int64 [N, 1]) -> Gather from a 3 x 4 table, plus x (float [N, 4]) MatMul W -> y [N, 1, 4]."""
    table = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4), "table")
    w = numpy_helper.from_array(np.eye(4, dtype=np.float32), "w")
    nodes = [helper.make_node("Gather", ["table", "ids"], ["emb"], name="gather"),
             helper.make_node("MatMul", ["x", "w"], ["xw"], name="matmul"),
             helper.make_node("Unsqueeze", ["xw", "one"], ["xw1"], name="unsqueeze"),
             helper.make_node("Add", ["emb", "xw1"], ["y"], name="add")]
    one = numpy_helper.from_array(np.array([1], np.int64), "one")
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, ["N", 1]),
                                       helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1, 4])], [table, w, one])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return str(path)


def test_an_index_out_of_range_is_one_line_of_sentences(tmp_path):
    model = api.open_model(_gather_model(tmp_path / "m.onnx"))
    data = tmp_path / "d.npz"
    np.savez(data, ids=np.array([[1], [7]], np.int64), x=np.ones((2, 4), np.float32))  # row 1: 7 is past the table
    with pytest.raises(CalibrationError) as got:
        api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(data), latency_check=False)
    text = str(got.value)
    assert "\n" not in text and text.startswith("onnxruntime failed on calibration sample")
    assert "Name:'gather'" in text and "idx=7 must be within the inclusive range [-3,2]. Check that these samples " \
                                      "match the model's inputs (shapes, and values such as indices in the range the " \
                                      "model takes)." in text


def test_compare_quotes_onnxruntime_as_a_sentence(tmp_path):
    """`compare` (and the weights vs activations split) quoted onnxruntime the same way: '... [-3,2] Pick data'."""
    path = _gather_model(tmp_path / "m.onnx")
    data = tmp_path / "d.npz"
    np.savez(data, ids=np.array([[7]], np.int64), x=np.ones((1, 4), np.float32))
    model = api.open_model(path)
    with pytest.raises(ModelError) as got:
        api.compare_models(model, onnx.load(path), str(data))
    assert "idx=7 must be within the inclusive range [-3,2]. Pick data made for both models" in str(got.value)


def test_a_long_onnxruntime_message_is_cut_between_words():
    words = runtime_reason(RuntimeError("a" * 5 + " bcdefgh" * 100))
    assert len(words) <= 404 and words.endswith(" bcdefgh ...") and " b ." not in words
    assert runtime_reason(RuntimeError("bad  input\n shape.")) == "bad input shape."
