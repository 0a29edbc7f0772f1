"""A replayed project whose calibration data moved, where the replay reads the data (bias correction reads the
Conv input means), is refused naming the project, its data.path field and the missing file, and saying to put
it back or point the field at it (the loader's "no such data file. Check the path." named no field, and a
replay takes no --data)."""

from __future__ import annotations

import shutil

from workbench.cli import main


def test_replay_names_the_moved_data_field(corpus, tmp_path, capsys):
    cnn = corpus / "digits_cnn"
    for name in ("model_opset17.onnx", "calib.npz"):
        shutil.copy(cnn / name, tmp_path / name)
    recipe, project = tmp_path / "r.json", tmp_path / "p.wbproj"
    recipe.write_text('{"bias_correction": true}')
    assert main(["quantize", str(tmp_path / "model_opset17.onnx"), "--data", str(tmp_path / "calib.npz"),
                 "--samples", "16", "--recipe", str(recipe), "--no-latency-check", "-o", str(tmp_path / "q.onnx"),
                 "--save-project", str(project)]) == 0
    (tmp_path / "calib.npz").rename(tmp_path / "moved.npz")
    capsys.readouterr()
    assert main(["quantize", str(project), "-o", str(tmp_path / "r.onnx")]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: {project}: project field data.path: the calibration data {tmp_path / 'calib.npz'} was not found "
        "(moved or deleted), and the replay reads it. Put the data back, set \"data\": {\"path\": \"NEW.npz\"} "
        "in the project file (a path relative to it) to where it is now, or give it: workbench-cli quantize "
        f"{project} --model {tmp_path / 'model_opset17.onnx'} --data NEW.npz -o OUT.onnx.")
    assert not (tmp_path / "r.onnx").exists()
    assert main(["quantize", str(project), "--model", str(tmp_path / "model_opset17.onnx"), "--data",
                 str(tmp_path / "moved.npz"), "-o", str(tmp_path / "r.onnx")]) == 0
    (tmp_path / "r.onnx").unlink()
    (tmp_path / "moved.npz").rename(tmp_path / "calib.npz")  # back: the replay runs
    assert main(["quantize", str(project), "-o", str(tmp_path / "r.onnx")]) == 0
