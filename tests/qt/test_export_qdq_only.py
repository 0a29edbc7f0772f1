"""File > Export as QDQ of a recipe with QONNX-only dtypes is refused before any job, in the app's words,
naming the recipe field that sets them (as the CLI does).

Found in the app: the export calibrated and quantized first, then failed with the CLI's hint
"Export with --format qonnx"."""

from __future__ import annotations

import json

import pytest
from bundled_example import EXAMPLE
from PySide6.QtWidgets import QFileDialog

from workbench.core import api
from workbench.qt.commands import push_edit


@pytest.mark.parametrize(("settings", "said"), [({"weight": {"dtype": "bipolar"}}, "weight bipolar"),
                                                ({"activation": {"dtype": "int3"}}, "activation int3")])
def test_qdq_export_of_qonnx_only_dtypes_is_refused_in_the_apps_words(qtbot, window, open_file, dialogs, monkeypatch,
                                                                      tmp_path, settings, said):
    open_file(window, EXAMPLE / "digits_cnn.onnx")
    conv = next(n.name for n in window.doc.model.graph.node if n.op_type == "Conv")
    recipe = api.Recipe.model_validate({**window.doc.recipe.model_dump(), "target": "qonnx",
                                        "overrides": {conv: settings}})
    assert push_edit(window.doc, recipe, "QONNX-only dtype")
    target = tmp_path / "out.onnx"
    offered = []

    def answer(parent, title, start, filters="", selected="", *a, **k):
        offered.append(selected)
        return str(target), selected  # the user keeps the file type offered: QDQ

    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(answer))
    window.act_export.trigger()
    assert offered == ["QDQ ONNX (*.onnx)"]
    assert not window.runs.busy  # refused before the job: no calibration started
    assert [kind for kind, _t, _x in dialogs] == ["critical"], dialogs.texts()
    text = dialogs[0][2]
    dialogs.clear()
    first = text.splitlines()[0]
    assert first == f"A QDQ file cannot hold the QONNX-only dtypes of 1 node unit: {conv} ({said}).", first
    assert "choose QONNX in the Export dialog's file type" in text and "--format" not in text
    role = next(iter(settings))  # the hint names the recipe field that sets the dtype
    assert f"The recipe sets them in overrides[{json.dumps(conv)}].{role}.dtype: change that dtype" in text, text
    assert window.status_label.text() == first
    assert list(tmp_path.iterdir()) == []
