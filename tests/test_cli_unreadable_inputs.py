"""Inputs a user cannot read, and a recipe saved with a byte order mark.

``convert`` of a model without read permission printed a PermissionError traceback; a calibration file without
read permission was called "not a readable .npz/.npy file" with the hint to re-save it with numpy. Both now say
"cannot be read (Permission denied). Check the file permissions." as the model loader does. A recipe JSON
saved by a Windows editor with a UTF-8 byte order mark was "not valid JSON ... at line 1 column 1" (nothing
visible there); it now reads as the same recipe.
"""

from __future__ import annotations

import builtins
import io
import json
import os
from pathlib import Path

from qdq_helpers import cli_model_files

from workbench.cli import main
from workbench.core import api


def _unreadable(path: Path, monkeypatch) -> None:
    """``path`` without read permission; as root (who reads it anyway) opening it fails as it would for a user."""
    path.chmod(0)
    if not os.access(path, os.R_OK):
        return
    real_open, real_io_open = builtins.open, io.open

    def refuse(real):
        def opener(file, *args, **kwargs):
            if isinstance(file, (str, os.PathLike)) and os.path.realpath(file) == os.path.realpath(path):
                raise PermissionError(13, "Permission denied", str(file))
            return real(file, *args, **kwargs)
        return opener

    monkeypatch.setattr(builtins, "open", refuse(real_open))
    monkeypatch.setattr(io, "open", refuse(real_io_open))


def _one_error(capsys) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


def test_convert_unreadable_model(tmp_path, capsys, monkeypatch):
    cli_model_files(tmp_path)
    q = tmp_path / "q.onnx"
    assert main(["quantize", str(tmp_path / "m.onnx"), "--data", str(tmp_path / "calib.npz"), "--no-auto",
                 "--no-latency-check", "-o", str(q)]) == 0
    capsys.readouterr()
    _unreadable(q, monkeypatch)
    out = tmp_path / "c.onnx"
    assert main(["convert", str(q), str(out), "--to", "qonnx"]) == 2
    assert _one_error(capsys) == f"error: {q}: cannot be read (Permission denied). Check the file permissions."
    assert not out.exists()


def test_quantize_unreadable_data(tmp_path, capsys, monkeypatch):
    cli_model_files(tmp_path)
    data = tmp_path / "calib.npz"
    _unreadable(data, monkeypatch)
    out = tmp_path / "q.onnx"
    assert main(["quantize", str(tmp_path / "m.onnx"), "--data", str(data), "-o", str(out)]) == 2
    assert _one_error(capsys) == f"error: {data}: cannot be read (Permission denied). Check the file permissions."
    assert not out.exists()


def test_recipe_with_byte_order_mark(tmp_path, capsys):
    cli_model_files(tmp_path)
    doc = {"preset": "s8s8", "exclude": ["mm"], "reduce_range": False}
    plain, marked = tmp_path / "r.json", tmp_path / "r_bom.json"
    plain.write_text(json.dumps(doc), encoding="utf-8")
    marked.write_text(json.dumps(doc), encoding="utf-8-sig")
    assert marked.read_bytes()[:3] == b"\xef\xbb\xbf"
    assert api.load_recipe(marked) == api.load_recipe(plain)
    assert main(["quantize", str(tmp_path / "m.onnx"), "--data", str(tmp_path / "calib.npz"), "--recipe", str(marked),
                 "--no-latency-check", "-o", str(tmp_path / "q.onnx")]) == 0
    assert "0 of 1 node units quantized, preset s8s8" in capsys.readouterr().out
