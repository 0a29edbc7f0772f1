"""A file of the wrong kind where a model belongs: one line naming the file and what it is, for every verb
(a project, an .npz, a folder, an empty file), and ``evaluate`` refuses two models that do not correspond
before running them."""

from __future__ import annotations

import shutil

import numpy as np
import onnx
import pytest
from bundled_example import EXAMPLE
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main


@pytest.fixture
def job(tmp_path, capsys):
    model, data = tmp_path / "model.onnx", tmp_path / "calib.npz"
    shutil.copy(EXAMPLE / "digits_cnn.onnx", model)
    shutil.copy(EXAMPLE / "digits_cnn_calib.npz", data)
    proj, quant = tmp_path / "job.wbproj", tmp_path / "q.onnx"
    assert main(["quantize", str(model), "--data", str(data), "--samples", "8", "-o", str(quant),
                 "--save-project", str(proj), "--no-latency-check"]) == 0
    capsys.readouterr()
    return model, data, proj, quant


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


def test_a_project_where_a_model_belongs_names_the_model_it_records(job, tmp_path, capsys):
    model, data, proj, quant = job
    for argv in (["compare", proj, quant, "--data", data], ["render", proj, "-o", tmp_path / "g.png"],
                 ["convert", proj, tmp_path / "x.onnx", "--to", "qonnx"], ["evaluate", model, proj, "--data", data],
                 ["autotune", proj, "--data", data, "--eval", data, "--metric", "sqnr", "-o", tmp_path / "t.onnx"]):
        assert main([str(a) for a in argv]) == 2, argv
        line = _one_line(capsys)
        assert line == (f"error: {proj} is a Workbench project, not a model. Give the model it records ({model}); "
                        "quantize, analyze, report and sweep also take the project itself."), argv
    assert not any((tmp_path / f).exists() for f in ("g.png", "x.onnx", "t.onnx"))


def test_evaluate_reads_its_second_file_like_the_first(job, tmp_path, capsys):
    model, data, _, _ = job
    (tmp_path / "empty.onnx").write_bytes(b"")
    for second, says in ((tmp_path, "is not a file"), (data, "is a NumPy data file (.npz, arrays input), not an ONNX model"),
                         (tmp_path / "empty.onnx", "the file is empty (0 bytes)")):
        assert main(["evaluate", str(model), str(second), "--data", str(data)]) == 2
        assert says in _one_line(capsys), second


def test_evaluate_refuses_models_whose_inputs_differ_in_rank(job, tmp_path, capsys):
    """digits_cnn takes input[N,1,8,8]; an MLP with the same input name takes [N,64]: onnxruntime failed on
    the first batch ("Invalid rank"); now the pair is refused as compare refuses it."""
    model, data, _, _ = job
    w = numpy_helper.from_array(np.zeros((64, 10), np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["input", "w"], ["logits"])], "mlp",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 64])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], [w])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "mlp.onnx")
    assert main(["evaluate", str(model), str(tmp_path / "mlp.onnx"), "--data", str(data)]) == 2
    assert _one_line(capsys) == (f"error: {model} and {tmp_path / 'mlp.onnx'} do not correspond: input 'input' has "
                                 "rank 4 vs 2. Evaluate a model with its own quantized version (same graph inputs).")


def test_data_where_a_model_goes_and_a_model_where_data_goes_say_what_each_is(job, tmp_path, capsys):
    """``compare MODEL calib.npz`` read the .npz as "a zip archive (a PyTorch checkpoint, .npz or .keras file?)"
    and said to export it to ONNX; ``--data MODEL.onnx`` said "unsupported data file type '.onnx'"."""
    model, data, proj, quant = job
    assert main(["compare", str(model), str(data)]) == 2
    assert _one_line(capsys) == (f"error: {data} is a NumPy data file (.npz, arrays input), not an ONNX model. "
                                 f"Give it as data (--data {data}) and a .onnx model in its place.")
    for argv in (["compare", model, quant, "--data", model], ["quantize", model, "--data", quant, "-o", tmp_path / "x.onnx"],
                 ["analyze", model, "--data", data, "--eval", quant]):
        assert main([str(a) for a in argv]) == 2, argv
        line = _one_line(capsys)
        assert line == (f"error: {argv[-1] if argv[0] != 'quantize' else quant} is an ONNX model, not data: the data "
                        "is an .npz (one array per input), .npy, a folder of them, or a folder of images. Give --data "
                        "(or --eval) a data file; models are the command's positional arguments."), argv
    assert main(["compare", str(model), str(quant), "--data", str(proj)]) == 2
    assert _one_line(capsys).startswith(f"error: {proj} is a Workbench project, not data: ")
    assert not (tmp_path / "x.onnx").exists()


@pytest.mark.parametrize(("argv", "says"), [
    (["inspect", "{data}"], "{data} is data, not a model: workbench-cli inspect reads a model (MODEL.onnx)"),
    (["compare", "{data}", "{quant}"], "{data} is data and {quant} a model: the arguments look swapped; give the two "
     "models first and the data with --data: workbench-cli compare FLOAT.onnx QUANTIZED.onnx --data {data}"),
    (["evaluate", "{data}", "{model}", "{quant}"], "{data} is data and {model} a model: the arguments look swapped; "
     "give the two models first and the data with --data: workbench-cli evaluate FLOAT.onnx QUANTIZED.onnx --data {data}"),
])
def test_data_first_names_the_verbs_own_arguments(job, capsys, argv, says):
    """``inspect calib.npz`` was told to pass ``--data``, which inspect does not take; ``compare calib.npz
    q.onnx`` was told ``compare q.onnx --data calib.npz``, one model short."""
    model, data, _, quant = job
    names = {"data": data, "model": model, "quant": quant}
    with pytest.raises(SystemExit) as exc:
        main([a.format(**names) for a in argv])
    assert exc.value.code == 2
    verb = argv[0]
    assert _one_line(capsys) == f"error: workbench-cli {verb}: {says.format(**names)} (see workbench-cli {verb} --help)"
