"""``convert --to qonnx`` refuses what it cannot convert with one line naming the tensor or node and
the reason (exit 2, nothing written): a 4-bit weight whose raw data is short, a float16 QuantizeLinear."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main


def _int4_model(short: bool) -> onnx.ModelProto:
    w = helper.make_tensor("Wq", TensorProto.INT4, [8, 4], vals=np.arange(32, dtype=np.int8) % 8 - 4)
    if short:
        w.ClearField("int32_data")
        w.raw_data = b"\x11" * 5  # 10 elements where [8, 4] needs 16 bytes
    s = numpy_helper.from_array(np.full((1, 4), 0.1, np.float32), "Ws")
    xs = numpy_helper.from_array(np.array(0.02, np.float32), "xs")
    xz = numpy_helper.from_array(np.array(0, np.uint8), "xz")
    nodes = [helper.make_node("QuantizeLinear", ["X", "xs", "xz"], ["Xq"], name="x_q"),
             helper.make_node("DequantizeLinear", ["Xq", "xs", "xz"], ["Xd"], name="x_dq"),
             helper.make_node("DequantizeLinear", ["Wq", "Ws"], ["Wd"], axis=0, block_size=8, name="w_dq"),
             helper.make_node("MatMul", ["Xd", "Wd"], ["Y"], name="mm")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 8])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 4])], [w, s, xs, xz])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    return m


def _fp16_model() -> onnx.ModelProto:
    xs = numpy_helper.from_array(np.array(0.02, np.float16), "xs")
    xz = numpy_helper.from_array(np.array(0, np.uint8), "xz")
    nodes = [helper.make_node("QuantizeLinear", ["X", "xs", "xz"], ["Xq"], name="x_q16"),
             helper.make_node("DequantizeLinear", ["Xq", "xs", "xz"], ["Y"], name="x_dq16")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT16, [2, 8])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT16, [2, 8])], [xs, xz])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    onnx.checker.check_model(m)
    return m


def _convert(tmp_path, proto, capsys, *extra):
    (tmp_path / "in.onnx").write_bytes(proto.SerializeToString())
    before = (tmp_path / "in.onnx").read_bytes()
    code = main(["convert", str(tmp_path / "in.onnx"), str(tmp_path / "out.onnx"), "--to", "qonnx", *extra])
    out = capsys.readouterr()
    assert (tmp_path / "in.onnx").read_bytes() == before
    return code, [line for line in out.err.splitlines() if line.strip()]


def test_int4_weight_with_short_raw_data_is_refused_by_name(tmp_path, capsys):
    code, err = _convert(tmp_path, _int4_model(short=True), capsys)
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("error: ") and "in.onnx" in err[0] and "'Wq'" in err[0] and "5 bytes" in err[0]
    assert "Traceback" not in err[0] and not (tmp_path / "out.onnx").exists()


def test_int4_weight_with_full_raw_data_converts(tmp_path, capsys):
    code, _ = _convert(tmp_path, _int4_model(short=False), capsys)
    assert code == 0
    q = onnx.load(str(tmp_path / "out.onnx"))
    assert {n.op_type for n in q.graph.node} >= {"Quant", "MatMul"}


@pytest.mark.parametrize("partial", [False, True])
def test_fp16_quantize_linear_is_named_with_the_reason(tmp_path, capsys, partial):
    code, err = _convert(tmp_path, _fp16_model(), capsys, *(["--partial"] if partial else []))
    if not partial:
        assert code == 2 and len(err) == 1, err
        assert "'x_q16'" in err[0] and "float16" in err[0] and "fp32" in err[0]
        assert not (tmp_path / "out.onnx").exists()
        return
    # --partial leaves the float16 pair as it is: the file is the same QDQ graph, still valid
    assert code == 0
    q = onnx.load(str(tmp_path / "out.onnx"))
    onnx.checker.check_model(q, full_check=True)
    assert [n.op_type for n in q.graph.node] == ["QuantizeLinear", "DequantizeLinear"]
