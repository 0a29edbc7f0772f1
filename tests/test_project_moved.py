"""A project file copied to another folder: its relative model path no longer resolves."""

from __future__ import annotations

import shutil

from workbench import cli


def _moved(corpus, tmp_path, capsys):
    d = corpus / "digits_cnn"
    for sub in ("m", "a/b", "mv"):
        (tmp_path / sub).mkdir(parents=True)
    shutil.copy(d / "model_opset17.onnx", tmp_path / "m" / "model.onnx")
    assert cli.main(["quantize", str(tmp_path / "m" / "model.onnx"), "--data", str(d / "calib.npz"),
                     "--samples", "16", "--no-search", "-o", str(tmp_path / "ref.onnx"),
                     "--save-project", str(tmp_path / "a" / "b" / "job.wbproj")]) == 0
    # recorded as "../../m/model.onnx"; from mv/ that is tmp_path/../m/model.onnx
    shutil.copy(tmp_path / "a" / "b" / "job.wbproj", tmp_path / "mv" / "job.wbproj")
    capsys.readouterr()
    return tmp_path / "mv" / "job.wbproj"


def test_moved_project_error_names_normalised_path_and_model_flag(corpus, tmp_path, capsys):
    proj = _moved(corpus, tmp_path, capsys)
    (tmp_path / "m" / "model.onnx").rename(tmp_path / "gone.onnx")  # nor at the absolute path saved in it
    assert cli.main(["quantize", str(proj), "-o", str(tmp_path / "out.onnx")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    # the recorded path resolved against mv/ and normalised (no ".."), then the absolute one
    assert (f"the model was not found (moved or deleted): tried {tmp_path.resolve().parent / 'm' / 'model.onnx'} "
            f"(relative to the project) and {tmp_path.resolve() / 'm' / 'model.onnx'}") in err
    assert ".." not in err and "--model PATH" in err
    assert not (tmp_path / "out.onnx").exists()


def test_moved_project_with_same_model_file_replays_identically(corpus, tmp_path, capsys):
    proj = _moved(corpus, tmp_path, capsys)
    shutil.move(tmp_path / "m" / "model.onnx", tmp_path / "copy.onnx")
    assert cli.main(["quantize", str(proj), "--model", str(tmp_path / "copy.onnx"),
                     "-o", str(tmp_path / "out.onnx")]) == 0
    out = capsys.readouterr().out
    assert "override " not in out and "calibration cache:" not in out  # no retargeting table
    assert (tmp_path / "out.onnx").read_bytes() == (tmp_path / "ref.onnx").read_bytes()


def test_moved_project_with_other_model_retargets_and_says_old_model_missing(corpus, tmp_path, capsys):
    proj = _moved(corpus, tmp_path, capsys)
    (tmp_path / "m" / "model.onnx").unlink()
    other = corpus / "digits_cnn" / "model_opset13.onnx"
    assert cli.main(["quantize", str(proj), "--model", str(other), "--data",
                     str(corpus / "digits_cnn" / "calib.npz"), "--samples", "16",
                     "-o", str(tmp_path / "out.onnx")]) == 0
    out = capsys.readouterr().out
    notes = [line for line in out.splitlines() if "changed or is missing" in line]
    assert len(notes) == 1 and notes[0].startswith("note:")
    assert (tmp_path / "out.onnx").is_file()
