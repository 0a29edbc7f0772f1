"""The quick inspect path (no onnx / numpy import) gives exactly the full path's report, and steps
aside for every model preparation would change."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from qdq_helpers import save_matmul_model

from workbench.cli import main
from workbench.core.inspection.quick import quick_report
from workbench.core.inspection.report import format_report, inspect_model
from workbench.core.model.load import load_model


def _full(path) -> dict:
    return inspect_model(load_model(path))


def _conv_model(path, *, dtype=TensorProto.FLOAT, batch="N") -> None:
    """x[batch,2,6,6] -> Conv(3x3, 4 ch, 288-byte weight kept, big weight stand-in) -> Relu -> Flatten -> Gemm."""
    rng = np.random.default_rng(0)
    np_dtype = helper.tensor_dtype_to_np_dtype(dtype)
    w = numpy_helper.from_array(rng.normal(0, 1, (4, 2, 3, 3)).astype(np_dtype), "w")
    g = numpy_helper.from_array(rng.normal(0, 1, (64, 16)).astype(np_dtype), "g")  # 4 KiB+: a skeleton input
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[0, 0, 0, 0]),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Flatten", ["r"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "g"], ["y"], name="gemm")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", dtype, [batch, 2, 6, 6])],
                              [helper.make_tensor_value_info("y", dtype, [batch, None])], initializer=[w, g])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="test")
    m.ir_version = 8
    onnx.save(m, str(path))


@pytest.mark.parametrize("dtype", [TensorProto.FLOAT, TensorProto.FLOAT16])
def test_quick_report_equals_the_full_report(tmp_path, dtype):
    path = tmp_path / "m.onnx"
    _conv_model(path, dtype=dtype)
    quick = quick_report(path)
    assert quick is not None
    full = _full(path)
    assert quick == full
    # the undeclared output dim comes from shape inference: [N, 16], as the full path infers it
    assert quick["outputs"] == [{"name": "y", "dtype": "float32" if dtype == TensorProto.FLOAT else "float16",
                                 "shape": ["N", 16]}]
    assert format_report(quick) == format_report(full)


def _edit(path, fn) -> None:
    m = onnx.load(str(path))
    fn(m)
    onnx.save(m, str(path))


def _constant(m):
    m.graph.node.insert(0, helper.make_node("Constant", [], ["k"], name="k",
                                            value=numpy_helper.from_array(np.ones(3, np.float32))))


def _bn(m):
    m.graph.node[0].output[0] = "c0"
    m.graph.node.insert(1, helper.make_node("BatchNormalization", ["c0", "s", "b", "mu", "var"], ["c"], name="bn"))
    m.graph.initializer.extend(numpy_helper.from_array(np.ones(4, np.float32), n) for n in ("s", "b", "mu", "var"))


def _conv_scale(m):
    """Conv -> Mul by a per-channel constant: preparation folds the Mul into the Conv."""
    m.graph.node[0].output[0] = "c0"
    m.graph.node.insert(1, helper.make_node("Mul", ["c0", "k"], ["c"], name="scale"))
    m.graph.initializer.append(numpy_helper.from_array(np.full((1, 4, 1, 1), 2.0, np.float32), "k"))


@pytest.mark.parametrize("edit", [
    lambda m: setattr(m.graph.node[1], "name", ""),                           # unnamed node
    lambda m: setattr(m.graph.node[1], "name", "conv"),                       # shared node name
    lambda m: m.graph.input.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [4, 2, 3, 3])),
    lambda m: m.opset_import[0].__setattr__("version", 11),                   # opset upgrade on load
    lambda m: m.graph.initializer[0].__setattr__("raw_data", b"\0" * 8),      # data does not match dims
    lambda m: m.graph.node[1].input.__setitem__(0, "nowhere"),              # onnx.checker refuses it
    lambda m: setattr(m, "ir_version", 99),                                   # newer than onnx knows
    _constant, _bn, _conv_scale,
])
def test_quick_path_steps_aside_when_preparation_changes_the_model(tmp_path, edit):
    path = tmp_path / "m.onnx"
    _conv_model(path)
    _edit(path, edit)
    assert quick_report(path) is None


def test_quick_path_steps_aside_for_bad_files(tmp_path):
    assert quick_report(tmp_path / "missing.onnx") is None
    (tmp_path / "junk.onnx").write_bytes(b"\xff\xfe not a model")
    assert quick_report(tmp_path / "junk.onnx") is None


@pytest.mark.slow
@pytest.mark.parametrize("name", ["digits_cnn/model_opset13.onnx", "digits_cnn/model_opset17.onnx",
                                  "digits_mlp/model_opset17.onnx", "nudenet_320n/model.onnx",
                                  "ppocrv4_rec/model.onnx", "digits_transformer/model_opset17.onnx"])
def test_corpus_reports_are_unchanged(corpus, name):
    """On real models: where the quick path answers, its report is the full one, field for field;
    ppocrv4_rec (Constant-node weights) and digits_transformer are left to the full path."""
    path = corpus / name
    quick = quick_report(path)
    if name.startswith(("ppocrv4_rec", "digits_transformer")):
        assert quick is None
    else:
        assert quick == _full(path)


def test_plain_matmul_model(tmp_path):
    path = save_matmul_model(tmp_path / "m.onnx", np.random.default_rng(0))
    quick = quick_report(path)
    assert quick == _full(path) and quick["op_histogram"] == {"MatMul": 1} and quick["weights"]["elements"] == 12


def test_text_names_dtypes_alike_and_says_a_float_model_is_not_quantized(corpus):
    """A new user read "input: float32" beside "logits: float", and no line said the model was float."""
    path = corpus / "digits_cnn" / "model_opset17.onnx"
    text = format_report(quick_report(path)).splitlines()
    assert "  input: float32 [N, 1, 8, 8]" in text and "  logits: float32 [N, 10]" in text
    assert "quantized:   no (a float model: no Q/DQ pairs or integer kernels)" in text
    full = _full(corpus / "digits_transformer" / "model_opset17.onnx")
    assert {o["dtype"] for o in full["outputs"]} == {"float32"} and set(full["weights"]["by_dtype"]) <= {
        "float32", "int64"}
    quantized = format_report(_full(corpus / "ddddocr_common_old_int8" / "model.onnx")).splitlines()
    assert any(line.startswith("quantized:   45 nodes") for line in quantized)
    assert not any(line.startswith("quantized:   no") for line in quantized)


def test_inspect_units_lists_the_unit_names_in_text(corpus, capsys):
    """A warning says to use a name `inspect` shows; with --units the text listed counts only."""
    path = corpus / "digits_cnn" / "model_opset17.onnx"
    assert main(["inspect", str(path), "--units"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("units:"))
    model = onnx.load(str(path))
    wanted = [n.name for n in model.graph.node if n.op_type in ("Conv", "AveragePool", "Gemm")]
    assert lines[at + 1:at + 1 + len(wanted)] == [f"  {n}" for n in wanted]


def test_unknown_and_computed_dims_print_as_a_question_mark(corpus):
    """nudenet_320n's output0 printed about 400 characters of floor(...) and ppocr_mobile_v2_cls's
    output [-1, 2] beside its input's [?, 3, ?, ?]."""
    nudenet = format_report(_full(corpus / "nudenet_320n" / "model.onnx")).splitlines()
    assert "  output0: float32 [batch, 22, ?]" in nudenet and "  images: float32 [batch, 3, height, width]" in nudenet
    cls = format_report(_full(corpus / "ppocr_mobile_v2_cls" / "model.onnx")).splitlines()
    assert "  save_infer_model/scale_0.tmp_1: float32 [?, 2]" in cls and "  x: float32 [?, 3, ?, ?]" in cls
    assert any(line.startswith("weights:") and line.endswith("(after lifting 308 Constant nodes)") for line in cls)
