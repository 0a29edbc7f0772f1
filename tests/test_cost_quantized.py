"""``cost`` refuses an already-quantized model (its BOPs under a recipe would be zeros and "BOPs / 0.0")."""

from __future__ import annotations

import onnx
from qdq_helpers import cli_quantized

from workbench.cli import main


def test_cost_refuses_quantized_model_and_points_at_inspect(corpus, tmp_path, capsys):
    path = corpus / "ddddocr_common_old_int8" / "model.onnx"
    integer_ops = {"ConvInteger", "MatMulInteger", "DynamicQuantizeLinear", "DynamicQuantizeLSTM"}
    count = sum(n.op_type in integer_ops for n in onnx.load(path, load_external_data=False).graph.node)
    assert main(["cost", str(path)]) == 2
    out = capsys.readouterr()
    err = out.err.strip()
    assert err.splitlines() == [err] and "BOPs /" not in out.out
    assert f"is already quantized: {count} quantized nodes" in err
    assert f"workbench-cli inspect {path}" in err


def test_cost_refuses_qdq_file_written_by_quantize(corpus, tmp_path, capsys):
    q = cli_quantized(corpus, "digits_cnn", tmp_path / "q.onnx", "--no-search", capsys=capsys)
    nodes = onnx.load(q).graph.node
    count = sum(n.op_type in ("QuantizeLinear", "DequantizeLinear") for n in nodes)
    assert main(["cost", str(q), "--json"]) == 2
    assert f"is already quantized: {count} quantized nodes (DequantizeLinear, QuantizeLinear)" in \
        capsys.readouterr().err
