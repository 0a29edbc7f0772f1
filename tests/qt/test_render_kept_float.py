"""``render`` says what the app says of a group box holding units the recipe keeps float: "kept float" (the
app since 6e44bdf), not "no value" (the words of a block nothing was measured in). The CLI did not pass the
units kept float to the drawing child, so its boxes read "no value" and had no dashed outline."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import onnx
from bundled_example import EXAMPLE
from graph_models import blocks_model

from workbench import cli
from workbench.qt.render import render_to_file


def _texts(svg: Path) -> list[str]:
    return [" ".join(t.split()) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg.read_text(encoding="utf-8"))]


def test_a_box_of_units_kept_float_reads_kept_float(qtbot, tmp_path):
    model = tmp_path / "blocks.onnx"
    onnx.save(blocks_model(3, 3), model)
    out = tmp_path / "b.svg"
    render_to_file(str(model), str(out), mode="error", errors={f"/blk1/Relu_{i}": 20.0 + i for i in range(3)},
                   floats=[f"/blk0/Relu_{i}" for i in range(3)], depth=0)
    boxes = [t for t in _texts(out) if t.startswith("3 nodes")]
    assert sorted(boxes) == ["3 nodes · kept float", "3 nodes · no value", "3 nodes · worst 20.0 dB"], boxes


def test_render_passes_the_units_kept_float(tmp_path, monkeypatch):
    specs = []

    def child(argv, **_kwargs):  # the drawing child: its spec only
        specs.append(json.loads(Path(argv[-1]).read_text(encoding="utf-8")))
        return subprocess.CompletedProcess(argv, 0, stdout="wrote", stderr="")

    monkeypatch.setattr(cli.subprocess, "run", child)
    assert cli.main(["render", str(EXAMPLE / "digits_cnn.onnx"), "--colour", "dtype", "--exclude", "/f/f.3/Conv",
                     "--exclude", "/head/head.2/Gemm", "-o", str(tmp_path / "p.png")]) == 0
    assert specs[0]["floats"] == ["/f/f.3/Conv", "/head/head.2/Gemm"]  # the app's set_float_nodes names
