"""A table read by a Gather and by a quantized Gemm (tied embeddings) is stored once, and the writer
says when the quantized tensors would take more bytes than the float ones."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main
from workbench.core import api
from workbench.core.issues import IssueCode
from workbench.core.model.load import load_model


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


V, D, T = 512, 64, 8


def _tied(tmp_path):
    rng = np.random.default_rng(0)
    e = (rng.standard_normal((V, D)) * 0.5).astype(np.float32)
    w = (rng.standard_normal((D, D)) * 0.2).astype(np.float32)
    nodes = [helper.make_node("Gather", ["E", "ids"], ["h"], name="embed"),
             helper.make_node("MatMul", ["h", "W"], ["h2"], name="mm"),
             helper.make_node("Gemm", ["h2", "E"], ["logits"], transB=1, name="lm_head")]
    g = helper.make_graph(nodes, "tied", [helper.make_tensor_value_info("ids", TensorProto.INT64, [T])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [T, V])],
                          [numpy_helper.from_array(e, "E"), numpy_helper.from_array(w, "W")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(tmp_path / "tied.onnx"))
    ids = rng.integers(0, V, (16, T)).astype(np.int64)
    np.savez(tmp_path / "calib.npz", ids=ids)
    return e, ids


@pytest.mark.parametrize("preset", ["cpu-u8s8", "dynamic-u8", "w4-block"])
def test_tied_embedding_is_stored_once(tmp_path, capsys, preset):
    e, ids = _tied(tmp_path)
    argv = ["quantize", str(tmp_path / "tied.onnx"), "--preset", preset, "-o", str(tmp_path / "q.onnx")]
    if preset == "cpu-u8s8":
        argv += ["--data", str(tmp_path / "calib.npz")]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "table 'E'" in err and "embed" in err and "larger" not in err
    q = onnx.load(str(tmp_path / "q.onnx"))
    # no float copy of E is left; exactly one initializer holds V * D elements (the integer table)
    assert all(i.name != "E" for i in q.graph.initializer)
    big = [i for i in q.graph.initializer if int(np.prod(i.dims)) == V * D]
    assert len(big) == 1 and big[0].data_type != TensorProto.FLOAT
    assert (tmp_path / "q.onnx").stat().st_size < 0.3 * (tmp_path / "tied.onnx").stat().st_size
    gather = next(n for n in q.graph.node if n.op_type == "Gather")
    assert gather.input[0] != "E"
    # the Gather reads the dequantized table: its rows are within the table's quantization error
    probe = onnx.ModelProto()
    probe.CopyFrom(q)
    probe.graph.output.append(helper.make_empty_tensor_value_info(gather.input[0]))
    sess = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    table = sess.run([gather.input[0]], {"ids": ids[0]})[0]
    table = table if table.shape == e.shape else table.T
    err = float(np.abs(table - e).max() / np.abs(e).max())
    assert 0 < err < (0.1 if preset == "w4-block" else 0.005), err  # int4 blocks / int8 rounding of the table
    f = ort.InferenceSession(str(tmp_path / "tied.onnx"), providers=["CPUExecutionProvider"]).run(None, {"ids": ids[1]})[0]
    out = sess.run(["logits"], {"ids": ids[1]})[0]
    rel = float(np.linalg.norm(out - f) / np.linalg.norm(f))
    assert rel < (0.2 if preset == "w4-block" else 0.05), rel


def _two_matmuls(tmp_path):
    """``Y = X W + X W`` with one W read by two MatMuls."""
    w = numpy_helper.from_array(np.random.default_rng(1).standard_normal((64, 32)).astype(np.float32), "W")
    nodes = [helper.make_node("MatMul", ["X", "W"], ["A"], name="mm_a"),
             helper.make_node("MatMul", ["X", "W"], ["B"], name="mm_b"),
             helper.make_node("Add", ["A", "B"], ["Y"], name="add")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 64])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 32])], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(tmp_path / "m.onnx"))
    return load_model(tmp_path / "m.onnx")


def test_a_weight_kept_float_for_an_excluded_unit_and_quantized_for_another_reports_a_larger_file(tmp_path):
    model = _two_matmuls(tmp_path)
    res = api.quantize(model, api.make_recipe("dynamic-u8", exclude=["mm_b"]))
    hits = [i for i in res.issues if i.code == IssueCode.LARGER_THAN_FLOAT]
    before = sum(numpy_helper.to_array(i).nbytes for i in model.proto.graph.initializer)
    after = sum(numpy_helper.to_array(i).nbytes for i in res.proto.graph.initializer)
    # an independent count: the float W (8192 bytes) is still there for mm_b, plus its int8 copy
    assert sorted(i.name for i in res.proto.graph.initializer if int(np.prod(i.dims)) == 64 * 32) == \
        ["W", "W_quantized"]
    assert after > before
    assert len(hits) == 1 and hits[0].severity == "warning" and f"{before:,}" in hits[0].message
    # both quantized: one integer copy read by both MatMulIntegers, no warning
    res = api.quantize(model, api.make_recipe("dynamic-u8"))
    assert not [i for i in res.issues if i.code == IssueCode.LARGER_THAN_FLOAT]
    assert [i.name for i in res.proto.graph.initializer if int(np.prod(i.dims)) == 64 * 32] == ["W_quantized"]
    assert sum("W_quantized" in n.input for n in res.proto.graph.node if n.op_type == "MatMulInteger") == 2
