"""The noise split inside If bodies: Q -> DQ pairs and weight DequantizeLinear nodes in a branch (reading
the outer graph's QuantizeLinear and initializers, or the branch's own) are rewritten in the variants
as in the main graph, so their noise counts on one side only."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.analysis.noise_split import activations_only, noise_split, weights_only
from workbench.core.graph.walk import iter_nodes

RNG = np.random.default_rng(31)
W1 = RNG.normal(size=(4, 3)).astype(np.float32)
W2 = RNG.normal(size=(4, 3)).astype(np.float32)
X = RNG.normal(size=(6, 1, 4)).astype(np.float32)
COND = np.array([True, False, True, False, True, False])
XS, YS, WS = np.float32(0.02), np.float32(0.04), np.float32(0.015)


def _model(nodes, then_nodes, else_nodes, inits, then_inits=(), else_inits=()) -> onnx.ModelProto:
    out = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 3])  # noqa: E731
    then_g = helper.make_graph(then_nodes, "then", [], [out("t_out")], list(then_inits))
    else_g = helper.make_graph(else_nodes, "else", [], [out("e_out")], list(else_inits))
    g = helper.make_graph(
        [*nodes, helper.make_node("If", ["cond"], ["y"], name="branch", then_branch=then_g, else_branch=else_g)], "g",
        [helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])], [out("y")], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def float_model() -> onnx.ModelProto:
    """cond ? x @ W1 : x @ W2, both weights in the main graph (outer scope of the branches)."""
    return _model([], [helper.make_node("MatMul", ["x", "w1"], ["t_out"], name="then_mm")],
                  [helper.make_node("MatMul", ["x", "w2"], ["e_out"], name="else_mm")],
                  [numpy_helper.from_array(W1, "w1"), numpy_helper.from_array(W2, "w2")])


def int8(w: np.ndarray) -> np.ndarray:
    return np.clip(np.round(w / WS), -127, 127).astype(np.int8)


def qdq_model() -> onnx.ModelProto:
    """x quantized in the main graph and dequantized in each branch; w1 int8 in the main graph, w2 int8
    in the else branch; each branch's MatMul output goes through its own Q -> DQ."""
    main_inits = [numpy_helper.from_array(int8(W1), "w1_q"), numpy_helper.from_array(np.array(WS), "w_s"),
                  numpy_helper.from_array(np.array(XS), "x_s"), numpy_helper.from_array(np.array(YS), "y_s"),
                  numpy_helper.from_array(np.array(0, np.int8), "zp")]

    def branch(tag: str, w: str, out: str) -> list[onnx.NodeProto]:
        return [helper.make_node("DequantizeLinear", ["x_q", "x_s", "zp"], [f"x_dq_{tag}"], name=f"x_dequant_{tag}"),
                helper.make_node("DequantizeLinear", [f"{w}_q", "w_s"], [f"{w}_dq"], name=f"{w}_dequant"),
                helper.make_node("MatMul", [f"x_dq_{tag}", f"{w}_dq"], [f"{tag}_pre"], name=f"{tag}_mm"),
                helper.make_node("QuantizeLinear", [f"{tag}_pre", "y_s", "zp"], [f"{tag}_q"], name=f"{tag}_quant"),
                helper.make_node("DequantizeLinear", [f"{tag}_q", "y_s", "zp"], [out], name=f"{tag}_dequant")]

    return _model([helper.make_node("QuantizeLinear", ["x", "x_s", "zp"], ["x_q"], name="x_quant")],
                  branch("then", "w1", "t_out"), branch("else", "w2", "e_out"), main_inits,
                  else_inits=[numpy_helper.from_array(int8(W2), "w2_q")])


def fake_quant(x: np.ndarray, scale: np.float32) -> np.ndarray:
    return (np.clip(np.round(x / scale), -128, 127) * scale).astype(np.float32)


def sqnr(ref: np.ndarray, out: np.ndarray) -> float:
    ref, out = ref.astype(np.float64), out.astype(np.float64)
    return 10 * math.log10(np.sum(ref ** 2) / np.sum((ref - out) ** 2))


def ops(proto: onnx.ModelProto) -> list[str]:
    return [n.op_type for _, n in iter_nodes(proto.graph)]


def test_the_variants_rewrite_the_branches():
    qp, fp = qdq_model(), float_model()
    w = weights_only(qp, fp)
    assert "QuantizeLinear" not in ops(w) and ops(w).count("DequantizeLinear") == 2  # w1, w2
    a, unmatched = activations_only(qp, fp)
    assert unmatched == []
    assert ops(a).count("DequantizeLinear") == 4 and ops(a).count("QuantizeLinear") == 3  # x, then, else pairs
    assert sorted(t.name for t in a.graph.initializer) == ["w1", "w2", "x_s", "y_s", "zp"]
    body_inits = [t.name for _, n in iter_nodes(a.graph) for at in n.attribute if at.type == onnx.AttributeProto.GRAPH
                  for t in at.g.initializer]
    assert body_inits == []  # w2_q, read by nothing any more, is dropped from the else branch


def test_noise_split_of_an_if_model_counts_each_source_once(tmp_path):
    onnx.save(float_model(), tmp_path / "f.onnx")
    np.savez(tmp_path / "d.npz", x=X, cond=COND)
    split = noise_split(api.open_model(tmp_path / "f.onnx"), qdq_model(), str(tmp_path / "d.npz"))
    x = X[:, 0]
    ref = np.stack([x[i] @ (W1 if c else W2) for i, c in enumerate(COND)])
    w_deq = {True: int8(W1).astype(np.float32) * WS, False: int8(W2).astype(np.float32) * WS}
    w_only = np.stack([x[i] @ w_deq[bool(c)] for i, c in enumerate(COND)])
    a_only = np.stack([fake_quant(fake_quant(x[i], XS) @ (W1 if c else W2), YS) for i, c in enumerate(COND)])
    both = np.stack([fake_quant(fake_quant(x[i], XS) @ w_deq[bool(c)], YS) for i, c in enumerate(COND)])
    assert split.samples == 6
    assert split.weights_db == pytest.approx(sqnr(ref, w_only), abs=1e-3)
    assert split.activations_db == pytest.approx(sqnr(ref, a_only), abs=1e-3)
    assert split.all_db == pytest.approx(sqnr(ref, both), abs=1e-3)
