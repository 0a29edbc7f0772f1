"""A text file where the model goes, and an empty data file, through the CLI: one line saying what the file is
and what to do, exit 2, nothing written, the file unchanged. A text .onnx (a Git LFS pointer, a saved web page,
notes) read 'not a readable ONNX model: the file is truncated or not ONNX (Error parsing message with type
'onnx.ModelProto': Wire format was corrupt)', and an empty .npz 'not a readable .npz/.npy file (File is not a
zip file)'."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main

LFS = ("version https://git-lfs.github.com/spec/v1\noid sha256:4d7a2146e9ca1e1b1c2f0a6c1e3f6d4b\n"
       "size 102400000\n")
TEXTS = {
    "notes": ("this is not a model\nsecond line\n",
              "this is a text file (its first line: 'this is not a model'), not an ONNX model. Give the binary .onnx "
              "model file itself (exported with torch.onnx.export / onnx.save)."),
    "Git LFS pointer": (LFS, "this is a Git LFS pointer (the model's bytes were never downloaded), not an ONNX model. "
                             "Fetch the file itself: git lfs pull in its repository, or download it again from the "
                             "file's own link."),
    "web page": ("\ufeff<!DOCTYPE html>\n<html><body>Not found</body></html>\n",
                 "this is a web page (HTML: the download saved a page instead of the model), not an ONNX model. "
                 "Download the model again from the file's own (raw / resolve) link."),
    "JSON": ('{"model": "resnet50", "opset": 17}\n',
             "this is a text file (its first line: '{\"model\": \"resnet50\", \"opset\": 17}'), not an ONNX model. "
             "Give the binary .onnx model file itself (exported with torch.onnx.export / onnx.save)."),
}


def _model(path):
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "W")
    g = helper.make_graph([helper.make_node("Conv", ["x", "W"], ["y"], name="conv", pads=[1, 1, 1, 1])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 8, 8])], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def _errors(capsys) -> list[str]:
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return out.err.splitlines()


@pytest.mark.parametrize("kind", TEXTS)
@pytest.mark.parametrize("verb", ["inspect", "quantize"])
def test_a_text_file_given_as_the_model_is_named_as_text(tmp_path, capsys, kind, verb):
    text, line = TEXTS[kind]
    path = tmp_path / "model.onnx"
    path.write_text(text, encoding="utf-8")
    argv = [verb, str(path)] + (["-o", str(tmp_path / "q.onnx")] if verb == "quantize" else [])
    assert main(argv) == 2
    assert _errors(capsys) == [f"error: {path}: {line}"]
    assert path.read_text(encoding="utf-8") == text and sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx"]


def test_a_real_model_is_never_taken_for_text(tmp_path, capsys):
    assert _model(tmp_path / "m.onnx").read_bytes()[:1] == b"\x08"  # ir_version's tag, a control character
    assert main(["inspect", str(tmp_path / "m.onnx")]) == 0


@pytest.mark.parametrize("name", ["calib.npz", "calib.npy"])
def test_an_empty_data_file_is_said_empty(tmp_path, capsys, name):
    model = _model(tmp_path / "m.onnx")
    data = tmp_path / name
    data.write_bytes(b"")
    assert main(["quantize", str(model), "--data", str(data), "-o", str(tmp_path / "q.onnx"), "--no-auto",
                 "--no-latency-check"]) == 2
    assert _errors(capsys) == [f"error: {data}: the file is empty (0 bytes). Its save was interrupted or it is the "
                               "wrong file: save the data again with numpy.savez / numpy.save."]
    assert data.read_bytes() == b"" and not (tmp_path / "q.onnx").exists()
