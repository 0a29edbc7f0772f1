"""``compare`` / ``render --compare`` refuse two models that are not float + quantized versions of one model."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

from workbench import cli


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


def _one_op(path, op: str, in_name: str = "x", rank: int = 2):
    shape = [1, 4][:rank] if rank <= 2 else [1, 4] + [1] * (rank - 2)
    g = helper.make_graph([helper.make_node(op, [in_name], ["y"], name=f"n_{op}")], "g",
                          [helper.make_tensor_value_info(in_name, TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return str(path)


def test_compare_refuses_models_with_other_inputs(corpus, tmp_path, capsys):
    d = corpus / "digits_mlp"
    quant = tmp_path / "mlp.int8.onnx"
    assert cli.main(["quantize", str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--samples", "8",
                     "--no-search", "-o", str(quant)]) == 0
    capsys.readouterr()
    cnn = corpus / "digits_cnn" / "model_opset17.onnx"  # same input name, rank 4 (the MLP's is rank 2)
    assert cli.main(["compare", str(cnn), str(quant)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err]
    assert "do not correspond: graph input 'input' has rank 4 vs 2" in err and str(quant) in err
    png = tmp_path / "r.png"
    assert cli.main(["render", str(cnn), "--compare", str(quant), "--data",
                     str(corpus / "digits_cnn" / "calib.npz"), "-o", str(png)]) == 2
    assert "do not correspond" in capsys.readouterr().err and not png.exists()


def test_compare_refuses_other_input_names(tmp_path, capsys):
    a, b = _one_op(tmp_path / "a.onnx", "Relu", "x"), _one_op(tmp_path / "b.onnx", "Relu", "z")
    assert cli.main(["compare", a, b]) == 2
    assert "graph inputs ['x'] vs ['z']" in capsys.readouterr().err


def test_compare_refuses_when_no_node_matches(tmp_path, capsys):
    a, b = _one_op(tmp_path / "a.onnx", "Relu"), _one_op(tmp_path / "b.onnx", "Sigmoid")
    assert cli.main(["compare", a, b]) == 2
    err = capsys.readouterr().err
    assert "do not correspond: the float model's only node matches no node of the quantized file." in err


def test_compare_same_model_still_matches_every_node(tmp_path, capsys):
    a, b = _one_op(tmp_path / "a.onnx", "Relu"), _one_op(tmp_path / "b.onnx", "Relu")
    assert cli.main(["compare", a, b]) == 0
    # a count of 1 takes the singular (was "1 nodes matched")
    assert capsys.readouterr().out.startswith("1 node matched (0 quantized, 0 compute ops left float); 0 Q/DQ pairs "
                                              "inserted, 0 DequantizeLinear without a Q (0 weight/bias);")


def test_compare_with_a_qonnx_file_says_to_convert_it(corpus, tmp_path, capsys):
    """It failed with "onnxruntime cannot load the model ... Quant(-1) is not a registered function/op"
    and told the user to check the model with inspect."""
    d = corpus / "digits_mlp"
    quant = tmp_path / "mlp.qonnx.onnx"
    assert cli.main(["quantize", str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--samples", "8",
                     "--no-auto", "--format", "qonnx", "-o", str(quant)]) == 0
    # its latency lines are of the QDQ form, and it says so (it advised on a file onnxruntime cannot run)
    assert "note: the latency figures above are of the QDQ form of this model" in capsys.readouterr().err
    assert cli.main(["compare", str(d / "model_opset17.onnx"), str(quant), "--data", str(d / "calib.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err]
    assert "is a QONNX file (Quant nodes of qonnx.custom_op.general)" in err
    assert f"workbench-cli convert {quant} OUT.onnx --to qdq" in err  # the file named, as evaluate does


def test_compare_with_a_float_file_says_it_holds_no_quantization(corpus, capsys):
    """Two float files gave "0 quantized, 4 compute ops left float" and nothing more."""
    d = corpus / "digits_cnn"
    assert cli.main(["compare", str(d / "model_opset17.onnx"), str(d / "model_opset13.onnx")]) == 0
    out = capsys.readouterr().out
    assert "0 Q/DQ pairs inserted" in out
    assert "; the second file holds no quantization (no Q/DQ, no integer op): both compute in float" in out
