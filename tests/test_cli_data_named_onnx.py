"""``--data FILE.onnx`` is named by its content: a text file named .onnx was called "an ONNX model"."""

from __future__ import annotations

import pickle

from workbench.cli import main

WHAT_DATA = "the data is an .npz (one array per input), .npy, a folder of them, or a folder of images."


def _errors(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]


def test_a_text_file_named_onnx_given_as_data_is_called_text(corpus, tmp_path, capsys):
    text = tmp_path / "text.onnx"
    text.write_text("hello\nworld\n")
    pick = tmp_path / "pickled.onnx"
    pick.write_bytes(pickle.dumps({"a": 1}, protocol=4))
    model = corpus / "digits_cnn" / "model_opset17.onnx"
    for data, what in ((text, "a text file (its first line: 'hello')"),
                       (pick, "a Python pickle (a PyTorch/scikit-learn checkpoint?)")):
        assert main(["quantize", str(model), "--data", str(data), "-o", str(tmp_path / "q.onnx")]) == 2
        assert _errors(capsys) == [f"error: {data} is {what}, neither data nor an ONNX model: {WHAT_DATA} Give "
                                   "--data (or --eval) a data file."]
    assert main(["quantize", str(model), "--data", str(model), "-o", str(tmp_path / "q.onnx")]) == 2
    assert _errors(capsys) == [f"error: {model} is an ONNX model, not data: {WHAT_DATA} Give --data (or --eval) a "
                               "data file; models are the command's positional arguments."]
    assert not (tmp_path / "q.onnx").exists()
