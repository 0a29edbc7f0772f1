"""The one table of what integer / contrib ops compute (:mod:`workbench.core.graph.op_equivalents`) agrees with the
operator schemas onnxruntime registers (its contrib ops and the ONNX ops): the inputs it picks are, by name, the
inputs of the standard op it names, in that op's order, and its bias positions are bias inputs."""

from __future__ import annotations

import pytest
from onnxruntime.capi import onnxruntime_pybind11_state as ort_c

from workbench.core.analysis.cost import KERNEL_MAC_OPS
from workbench.core.graph.op_equivalents import EQUIVALENTS, FLOAT_OP

#: where each op's schema is registered, first match wins (QLinearConvTranspose: onnxruntime's NHWC domain only)
_DOMAINS = ("com.microsoft", "", "com.ms.internal.nhwc")
#: (kernel, its input's name) -> the standard op's name for the same input, where the schemas word them apart
_RENAMED = {("QLinearSoftmax", "x"): "input", ("QAttention", "weight"): "weights"}


def _schemas() -> dict[tuple[str, str], list[str]]:
    """(domain, op) -> input names of its newest schema registered in onnxruntime."""
    newest: dict[tuple[str, str], tuple[int, list[str]]] = {}
    for s in ort_c.get_all_operator_schema():
        key = (s.domain, s.name)
        if key not in newest or s.since_version > newest[key][0]:
            newest[key] = (s.since_version, [i.name for i in s.inputs])
    return {k: names for k, (_, names) in newest.items()}


SCHEMAS = _schemas()


def _inputs(op: str, domains=_DOMAINS) -> list[str]:
    return next(SCHEMAS[(d, op)] for d in domains if (d, op) in SCHEMAS)


@pytest.mark.parametrize("name", [n for n, e in EQUIVALENTS.items() if not isinstance(e.inputs, slice)])
def test_the_picked_inputs_are_the_standard_ops_inputs(name):
    e = EQUIVALENTS[name]
    own = _inputs(name)
    standard = _inputs(e.op, ("com.microsoft",) if e.op == "Attention" else ("",))  # ONNX's Attention takes Q, K, V
    picked = [_RENAMED.get((name, n.lower()), n).lower() for n in e.pick(own)]
    assert picked == [n.lower() for n in standard[:len(picked)]]
    assert len(picked) == len(e.inputs)  # every position is one of the op's inputs
    if e.bias is not None:
        assert own[e.bias] in ("B", "C", "bias")


def test_the_variadic_concat_and_what_the_readers_take():
    assert _inputs("QLinearConcat") == ["Y_scale", "Y_zero_point", "inputs"]  # then (X, scale, zero point) triples
    assert EQUIVALENTS["QLinearConcat"].pick(["ys", "yz", "a", "as", "az", "b", "bs", "bz"]) == ["a", "b"]
    assert EQUIVALENTS["DynamicQuantizeLSTM"].pick(["x", "w", "r"]) == ["x", "w", "r"]  # optional inputs left out
    assert FLOAT_OP["QLinearConv"] == "Conv" and "FusedMatMul" not in FLOAT_OP  # a float fusion is no quantized op
    assert KERNEL_MAC_OPS["QGemm"] == ("Gemm", 0, 3, 6) and KERNEL_MAC_OPS["FusedMatMul"] == ("MatMul", 0, 1, None)
    assert KERNEL_MAC_OPS["DynamicQuantizeLSTM"] == ("LSTM", 0, 1, 3) == KERNEL_MAC_OPS["LSTM"]
