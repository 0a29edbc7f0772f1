"""The ``export`` section of a project survives the app.

``quantize --format qonnx --save-project`` records ``"export": {"format": "qonnx", ...}`` so that the
replay writes QONNX again. Saving the project in the app dropped the section, and the replay then wrote
QDQ.
"""

from __future__ import annotations

import onnx
from cli_projects import MODEL, cli_quantize, digits_folder, read_json


def test_ctrl_s_keeps_the_export_format_of_a_cli_project(qtbot, window, open_file, corpus, tmp_path):
    folder = digits_folder(corpus, tmp_path)
    proj = folder / "q.wbproj"
    cli_quantize(folder / MODEL, "--data", folder / "calib.npz", "--format", "qonnx", "--no-latency-check",
                 "-o", tmp_path / "a.onnx", "--save-project", proj)
    written = read_json(proj)
    assert written["export"]["format"] == "qonnx"

    open_file(window, proj)
    window.save_project()  # opened and saved: nothing changes
    assert read_json(proj) == written

    node = "/f/f.3/Conv"
    window.canvas.select_nodes([node])
    window.inspector.set_nodes([node])
    window.inspector.exclude.click()
    assert window.doc.modified
    window.save_project()
    saved = read_json(proj)
    assert saved["recipe"]["overrides"] == {node: {"exclude": True}}
    assert saved["export"] == written["export"]

    cli_quantize(proj, "-o", tmp_path / "b.onnx")
    ops = {n.op_type for n in onnx.load(tmp_path / "b.onnx").graph.node}
    assert "Quant" in ops and "QuantizeLinear" not in ops
