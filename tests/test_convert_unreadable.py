"""`convert` of an unreadable .onnx file says what `inspect` says (truncated / not ONNX / empty), in one
line naming the file, writes nothing and leaves the input unchanged (it said "(DecodeError)", and an
empty file "has no quantization nodes")."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main


def _model_bytes(tmp_path) -> bytes:
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "W")
    g = helper.make_graph([helper.make_node("Conv", ["x", "W"], ["y"], name="conv")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])], [w])
    path = tmp_path / "ok.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path.read_bytes()


def _errors(capsys) -> list[str]:
    return [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]


@pytest.mark.parametrize("kind, says", [("truncated", "the file is truncated or not ONNX"),
                                        ("junk", "this is a text file (its first line: 'hello, not a model')"),
                                        ("binary", "the file is truncated or not ONNX"),
                                        ("empty", "the file is empty (0 bytes)")])
@pytest.mark.parametrize("to", ["qdq", "qonnx"])
def test_convert_says_what_inspect_says(tmp_path, capsys, kind, says, to):
    data = _model_bytes(tmp_path)
    bad = tmp_path / "bad.onnx"
    bad.write_bytes({"truncated": data[: len(data) // 2], "junk": b"hello, not a model", "empty": b"",
                     "binary": b"\x08\x07\xff\xfe\x00\x93" * 8}[kind])
    before = bad.read_bytes()
    assert main(["inspect", str(bad)]) == 2
    inspect_err = _errors(capsys)
    out = tmp_path / "out.onnx"
    assert main(["convert", str(bad), str(out), "--to", to]) == 2
    err = _errors(capsys)
    assert len(err) == 1 and err == inspect_err
    assert err[0].startswith(f"error: {bad}:") and says in err[0] and "DecodeError" not in err[0]
    assert not out.exists() and bad.read_bytes() == before
