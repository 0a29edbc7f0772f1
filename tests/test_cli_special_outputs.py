"""An output path that is a FIFO (or a device such as /dev/null) is refused before the job: outputs are
written to a temporary file renamed over the path, which replaced the device node itself with a regular
file (as root, `quantize ... -o /dev/null` turned /dev/null into a 34 KB model file)."""

from __future__ import annotations

import os
import stat

import pytest
from qdq_helpers import tiny_conv_files

from workbench.cli import main


def _model(tmp_path):
    return tiny_conv_files(tmp_path)


@pytest.mark.parametrize("verb", ["quantize", "analyze-json", "report", "convert"])
def test_fifo_output_is_refused_and_kept(tmp_path, capsys, verb):
    model, data = _model(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    if verb == "convert":
        q = tmp_path / "q.onnx"
        assert main(["quantize", str(model), "--data", str(data), "--no-auto", "-o", str(q)]) == 0
        capsys.readouterr()
        argv = ["convert", str(q), str(fifo), "--to", "qonnx"]
        flag = "--output"
    elif verb == "analyze-json":
        argv = ["analyze", str(model), "--data", str(data), "--json", str(fifo)]
        flag = "--json"
    else:
        argv = [verb, str(model), "--data", str(data), "-o", str(fifo)]
        flag = "--output"
    code = main(argv)
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("error:")]
    assert code == 2 and err == [f"error: {fifo}: is a FIFO, not a regular file; writing {flag} there would "
                                 "replace it with a file. Give the path of a regular file (to discard the output, "
                                 "write it to a temporary folder)."]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert not (tmp_path / "q.onnx").exists() or verb == "convert"


@pytest.mark.parametrize(("argv", "flag", "example"), [
    (["compare", "{model}", "{model}", "--json", "{folder}"], "--json", "out.json"),
    (["convert", "{model}", "{folder}", "--to", "qonnx"], "OUTPUT", "out.onnx"),
    (["report", "{model}", "--data", "{data}", "-o", "{folder}"], "--output", "report.html"),
    (["render", "{model}", "-o", "{folder}"], "--output", "graph.png"),
    (["quantize", "{model}", "--data", "{data}", "-o", "{out}", "--save-project", "{folder}"], "--save-project",
     "job.wbproj"),
    (["analyze", "{model}", "--data", "{data}", "--node-data", "{folder}"], "--node-data", "nodes.json"),
])
def test_a_folder_given_as_an_output_is_refused_with_a_name_of_its_kind(tmp_path, capsys, argv, flag, example):
    """Every folder given as an output was told to write ``FOLDER/out.onnx`` (a report, a picture and a JSON file
    too), and convert's positional OUTPUT was called --output."""
    model, data = _model(tmp_path)
    folder = tmp_path / "d"
    folder.mkdir()
    names = {"model": model, "data": data, "folder": folder, "out": tmp_path / "q.onnx"}
    assert main([a.format(**names) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: {folder}: is a folder; {flag} names the file to write. Give a file name inside it, e.g. "
                   f"{folder / example}.\n")
    assert list(folder.iterdir()) == [] and not (tmp_path / "q.onnx").exists()
