"""An int4 QDQ file (DequantizeLinear int4 weight in blocks + MatMul, float activation) is said as onnxruntime runs
it. onnxruntime fuses each such unit into MatMulNBits as it loads the file, with the accuracy_level of the session
option session.qdq_matmulnbits_accuracy_level; at level 4 that kernel quantizes its activation to int8 per block.
The banner and ``inspect`` read "QDQ: 2 MatMul float/int4" while a MatMulNBits file at level 4 read
"dynamic: ... int8/uint4". The expected words here come from the accuracy_level onnxruntime writes on the fused
node of its optimized graph (``SessionOptions.optimized_model_filepath``), not from the code under test."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main
from workbench.core.inspection.quant_summary import run_dtypes, summarize_quantization

K, N, BLOCK = 64, 64, 32
#: the format words of a file whose int4 QDQ MatMuls onnxruntime runs as MatMulNBits at accuracy_level 4
FUSED_WORDS = "dynamic (int4 QDQ weights fused by onnxruntime into MatMulNBits)"


def int4_qdq_model(units: int = 2, seed: int = 0) -> onnx.ModelProto:
    """``units`` chained MatMuls ``blk<i // 3>/mm<i>`` of a float activation [4, K] and an int4 weight [K, N] behind a
    blocked DequantizeLinear ``blk<i // 3>/dq<i>`` (axis 0, blocks of 32), opset 21: a weight-only int4 QDQ file."""
    rng = np.random.default_rng(seed)
    nodes, inits, x = [], [], "x"
    for i in range(units):
        q = rng.integers(-8, 8, size=(K, N))
        inits += [helper.make_tensor(f"w{i}", TensorProto.INT4, [K, N], q.ravel().tolist()),
                  numpy_helper.from_array(rng.uniform(0.01, 0.05, (K // BLOCK, N)).astype(np.float32), f"s{i}")]
        nodes += [helper.make_node("DequantizeLinear", [f"w{i}", f"s{i}"], [f"wf{i}"], name=f"blk{i // 3}/dq{i}", axis=0,
                                   block_size=BLOCK),
                  helper.make_node("MatMul", [x, f"wf{i}"], [f"y{i}"], name=f"blk{i // 3}/mm{i}")]
        x = f"y{i}"
    g = helper.make_graph(nodes, "int4_qdq", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, K])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, [4, N])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    onnx.checker.check_model(m)
    return m


def fused_accuracy_levels(m: onnx.ModelProto, tmp_path) -> list[int]:
    """The accuracy_level (unset: 0) of every MatMulNBits in onnxruntime's optimized graph of ``m``, with the
    session options left at their defaults."""
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "ort_optimized.onnx")
    ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    opt = onnx.load(so.optimized_model_filepath)
    return [next((a.i for a in n.attribute if a.name == "accuracy_level"), 0)
            for n in opt.graph.node if n.op_type == "MatMulNBits"]


def as_run_words(tmp_path, m: onnx.ModelProto) -> tuple[str, str]:
    """(format, activation dtype) onnxruntime's optimized graph of ``m`` runs its MatMuls at: at accuracy_level 4
    the fused MatMulNBits quantizes its float activation to int8 as it runs ("dynamic", "int8"), at 0 to 3 it
    computes in float on the dequantized weight ("QDQ", "float")."""
    levels = fused_accuracy_levels(m, tmp_path)
    units = sum(n.op_type == "MatMul" for n in m.graph.node)
    assert len(levels) == units and len(set(levels)) == 1, levels  # every unit fused, at one level
    return ("dynamic", "int8") if levels[0] == 4 else ("QDQ", "float")


def test_int4_qdq_matmuls_read_as_onnxruntime_runs_them(tmp_path, capsys):
    m = int4_qdq_model()
    kind, act = as_run_words(tmp_path, m)
    assert (kind, act) == ("dynamic", "int8")  # onnxruntime 1.32's default: accuracy_level 4 on the fused node
    s = summarize_quantization(m)
    # the format as run and the QDQ the file holds; was "QDQ: 2 MatMul float/int4", then "dynamic: 2 MatMul int8/int4"
    words = FUSED_WORDS if kind == "dynamic" else kind
    assert s.text() == f"{words}: 2 MatMul {act}/int4"
    assert s.kinds == {kind: 2}
    assert s.fused_qdq == ({"int4": 2} if kind == "dynamic" else {})
    assert s.kernels == {"blk0/mm0": "QDQ -> MatMulNBits", "blk0/mm1": "QDQ -> MatMulNBits"}
    assert s.compute == {"blk0/mm0": "float/int4", "blk0/mm1": "float/int4"}  # the file's dtypes stay
    path = tmp_path / "int4_qdq.onnx"
    onnx.save(m, path)
    assert main(["inspect", str(path)]) in (0, None)
    assert f"summary:     {words}: 2 MatMul {act}/int4\n" in capsys.readouterr().out


def test_run_dtypes_of_each_kernel():
    assert run_dtypes("float/int4", "QDQ -> MatMulNBits") == "int8/int4"
    assert run_dtypes("uint16/uint8", "QDQ -> MatMulNBits") == "int8/uint8"  # a 16-bit activation: 8 bits there
    assert run_dtypes("float/uint4", "MatMulNBits") == "int8/uint4"  # a file's MatMulNBits at level 4
    assert run_dtypes("float/uint4", None) == "float/uint4"  # below level 4: weight-only, no kernel
    assert run_dtypes("uint8/int8", "QDQ -> QLinearConv") == "uint8/int8"


def test_compare_does_not_call_an_int4_qdq_file_weight_only(tmp_path, capsys):
    """``compare`` split the noise of an int4 QDQ file as weight-only ('100% of the output noise comes from the
    weights'), measuring float activations onnxruntime does not run: at the fused node's accuracy_level 4 they are
    quantized to int8 per block as they run, as in a MatMulNBits file at level 4, which reads 'not measured'."""
    m = int4_qdq_model()
    kind, _act = as_run_words(tmp_path, m)
    rng = np.random.default_rng(1)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w0"], ["y0"], name="blk0/mm0"),
                           helper.make_node("MatMul", ["y0", "w1"], ["y1"], name="blk0/mm1")], "f",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, K])],
                          [helper.make_tensor_value_info("y1", TensorProto.FLOAT, [4, N])],
                          [numpy_helper.from_array(rng.normal(0, 0.1, (K, N)).astype(np.float32), f"w{i}")
                           for i in range(2)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)]), tmp_path / "f.onnx")
    onnx.save(m, tmp_path / "q.onnx")
    np.savez(tmp_path / "d.npz", x=rng.standard_normal((2, 4, K)).astype(np.float32))
    assert main(["compare", str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"), "--data", str(tmp_path / "d.npz")]) \
        in (0, None)
    out = capsys.readouterr().out
    if kind == "dynamic":
        assert ("weights vs activations: not measured (onnxruntime fuses the quantized file's DequantizeLinear "
                "weights and MatMuls into MatMulNBits at accuracy_level 4 (its default): it quantizes their "
                "activations to int8 per block as they run, so there is no fixed activation quantization to take "
                "out)\n") in out
        assert "is weight-only (float activations)" not in out
    else:
        assert "q.onnx is weight-only (float activations)" in out
