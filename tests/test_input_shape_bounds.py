"""``--input-shape`` refuses dimensions no real tensor has (``input:100000000000,...`` was accepted and
written into a QONNX file), in one line naming the input; a real shape still converts."""

from __future__ import annotations

import onnx
import pytest

from workbench.cli import main
from workbench.core.errors import ExportError
from workbench.core.qonnx.shapes import MAX_DIM, parse_input_shape, resolve_input_shapes


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


@pytest.fixture
def qdq(corpus, tmp_path):
    d = corpus / "digits_cnn"
    out = tmp_path / "q.onnx"
    assert main(["quantize", str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--samples", "4",
                 "--no-auto", "-o", str(out)]) == 0
    return out


@pytest.mark.parametrize(("flag", "words"), [
    ("input:100000000000,1,8,8", "'input:100000000000,1,8,8': dimension 0 of input 'input' is 100000000000, "
                                 "over 2147483647 (2**31 - 1), larger than any real tensor's."),
    ("input:100000000,1,8,8", "'input:100000000,1,8,8': input 'input' would hold 6.4e+09 elements, over "
                              "2147483647 (2**31 - 1; 8 GiB of float32), more than any real model input.")])
def test_convert_refuses_an_unreal_input_shape(qdq, tmp_path, capsys, flag, words):
    out = tmp_path / "c.onnx"
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:  # argparse: status 2, one line
        main(["convert", str(qdq), str(out), "--to", "qonnx", "--input-shape", flag])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and words in err[0], err
    assert not out.exists()


def test_the_largest_real_shape_passes_and_converts(qdq, tmp_path):
    assert parse_input_shape("input:4,1,8,8") == ("input", [4, 1, 8, 8])
    assert parse_input_shape(f"x:{MAX_DIM}") == ("x", [MAX_DIM])
    out = tmp_path / "c.onnx"
    assert main(["convert", str(qdq), str(out), "--to", "qonnx", "--input-shape", "input:4,1,8,8"]) == 0
    dims = [d.dim_value for d in onnx.load(str(out)).graph.input[0].type.tensor_type.shape.dim]
    assert dims == [4, 1, 8, 8]


def test_shapes_given_as_a_dict_are_bounded_too(qdq):
    """A project's export section reaches resolve_input_shapes without the parser."""
    with pytest.raises(ExportError, match="dimension 0 of input 'input' is 3000000000"):
        resolve_input_shapes(onnx.load(str(qdq)), {"input": [3_000_000_000, 1, 8, 8]})
