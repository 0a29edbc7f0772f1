"""`compare` counts 1 in the singular on the shared failure cases where a count of 1 occurs.

Commit f70124d said it printed '1 nodes matched' "on the cases 07 and 05"; the case with a count of 1 beside
07 is 06 (Gemm with a (1, N) bias: one Q/DQ pair, printed '1 Q/DQ pairs inserted' before). Case 05 (Conv +
Relu, NaN/Inf data) has no count of 1: both nodes match and two pairs are inserted.
"""

from __future__ import annotations

import pytest

from workbench.cli import main


def _summary(cases, tmp_path, capsys, case: str) -> str:
    q = tmp_path / f"{case}.q.onnx"
    assert main(["quantize", str(cases / f"{case}.onnx"), "--data", str(cases / f"{case}.npz"), "--no-auto",
                 "--no-latency-check", "-o", str(q)]) == 0
    capsys.readouterr()
    assert main(["compare", str(cases / f"{case}.onnx"), str(q)]) == 0
    return capsys.readouterr().out.splitlines()[0]


@pytest.mark.parametrize(("case", "summary"), [
    ("06_gemm_bias_2d", "2 nodes matched (1 quantized, 0 compute ops left float); 1 Q/DQ pair inserted, "
                        "2 DequantizeLinear without a Q (2 weight/bias); 0 folded or fused, 0 removed, 0 added"),
    ("07_bias_int32_overflow", "1 node matched (1 quantized, 0 compute ops left float); 2 Q/DQ pairs inserted, "
                               "2 DequantizeLinear without a Q (2 weight/bias); 0 folded or fused, 0 removed, 0 added"),
    ("05_nan_inf_calibration", "2 nodes matched (1 quantized, 0 compute ops left float); 2 Q/DQ pairs inserted, "
                               "1 DequantizeLinear without a Q (1 weight/bias); 0 folded or fused, 0 removed, 0 added"),
])
def test_compare_summary_of_a_shared_case(cases, tmp_path, capsys, case, summary):
    assert _summary(cases, tmp_path, capsys, case) == summary
