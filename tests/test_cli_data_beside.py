"""``quantize`` without ``--data`` names the calibration file beside the model (the one the app opens),
and passing it as told works."""

from __future__ import annotations

import shutil

from workbench.cli import main
from workbench.core import api


def test_quantize_without_data_names_the_calib_file_beside(corpus, tmp_path, capsys):
    mlp = corpus / "digits_mlp"
    model = tmp_path / "model.onnx"
    shutil.copyfile(mlp / "model_opset17.onnx", model)
    out = tmp_path / "out.onnx"
    assert main(["quantize", str(model), "-o", str(out)]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: Recipe preset 'cpu-u8s8' needs calibration data. Pass --data FILE.npz (or a folder of images), "
        "or use --preset dynamic-u8.")
    calib = tmp_path / "calib.npz"
    shutil.copyfile(mlp / "calib.npz", calib)
    assert main(["quantize", str(model), "-o", str(out)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: Recipe preset 'cpu-u8s8' needs calibration data. No --data given; {calib} is beside the model: "
        f"add --data {calib}.")
    assert not out.exists()
    assert main(["quantize", str(model), "-o", str(out), "--data", str(calib), "--samples", "8",
                 "--no-latency-check"]) == 0  # about the data beside the model, not latency
    assert out.is_file()


def test_the_model_own_calib_file_comes_first(tmp_path):
    model = tmp_path / "net.onnx"
    assert api.data_beside(model) is None
    (tmp_path / "calib.npz").write_bytes(b"")
    assert api.data_beside(model) == tmp_path / "calib.npz"
    (tmp_path / "net_calib.npz").write_bytes(b"")
    assert api.data_beside(model) == tmp_path / "net_calib.npz"
    (tmp_path / "other_calib.npz").mkdir()
    assert api.data_beside(tmp_path / "other.onnx") == tmp_path / "calib.npz"  # a folder is not a file
