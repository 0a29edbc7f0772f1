"""A QDQ export of a recipe with QONNX-only dtypes (bipolar weights, 3-bit activations) is refused before any
work, naming the nodes and their dtypes, with the wording of who asked.

Found in the app: Export as QDQ calibrated and quantized the model first, then failed with the CLI's hint
"Export with --format qonnx"."""

from __future__ import annotations

import pytest
from bundled_example import EXAMPLE

from workbench.core import api
from workbench.core.errors import ExportError
from workbench.core.jobs import QDQ_ONLY_HINT, job_export, refuse_qdq_export
from workbench.core.progress import CancelToken

MODEL = EXAMPLE / "digits_cnn.onnx"
CASES = [({"weight": {"dtype": "bipolar"}}, "weight bipolar"), ({"activation": {"dtype": "uint3"}}, "activation uint3")]


def qonnx_recipe(settings: dict) -> api.Recipe:
    """cpu-u8s8 for QONNX with ``settings`` on the first Conv of the example model."""
    conv = next(n.name for n in api.open_model(MODEL).graph.node if n.op_type == "Conv")
    return api.Recipe.model_validate({"preset": "cpu-u8s8", "target": "qonnx", "overrides": {conv: settings}})


@pytest.mark.parametrize(("settings", "said"), CASES)
def test_the_export_job_refuses_qdq_before_calibrating(tmp_path, settings, said):
    steps = []
    out = tmp_path / "out.onnx"
    payload = {"model_path": str(MODEL), "recipe": qonnx_recipe(settings).to_json(), "samples": 8,
               "data": {"kind": "npz", "path": str(EXAMPLE / "digits_cnn_calib.npz")}, "calibration": None,
               "reuse": True, "path": str(out), "format": "qdq"}
    with pytest.raises(ExportError) as info:
        job_export(payload, lambda done, total, message: steps.append(message), CancelToken())
    assert info.value.message == f"A QDQ file cannot hold the QONNX-only dtypes of 1 node unit: /f/f.0/Conv ({said})."
    role = next(iter(settings))  # the hint names the recipe field that sets the dtype, then what to do in the app
    assert info.value.hint == (f'The recipe sets them in overrides["/f/f.0/Conv"].{role}.dtype: change that dtype to '
                               "one QDQ holds (int8, uint8, int4, uint4, int16, uint16), or export it as QONNX: "
                               "choose QONNX in the Export dialog's file type (File > Export..., Ctrl+E).")
    assert not [s for s in steps if s.startswith(("Calibrating", "Quantizing"))], steps
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_the_core_export_keeps_the_cli_hint_and_qonnx_still_writes(tmp_path):
    model = api.open_model(MODEL)
    result = api.quantize(model, qonnx_recipe(CASES[0][0]), data=str(EXAMPLE / "digits_cnn_calib.npz"), samples=8)
    with pytest.raises(ExportError) as info:
        api.export(result, tmp_path / "q.onnx")
    assert info.value.hint == "Export with --format qonnx." and not (tmp_path / "q.onnx").exists()
    api.export(result, tmp_path / "q.qonnx.onnx", format="qonnx", model=model)
    assert "BipolarQuant" in {n.op_type for n in api.open_model(tmp_path / "q.qonnx.onnx").graph.node}


def test_qdq_only_fields_name_each_field_with_its_nodes():
    """The core says which recipe fields set QONNX-only dtypes, with the units each reaches (the CLI and
    the app word their refusals from it); a field setting an ordinary dtype, or a preset's own, is not one."""
    model = api.open_model(MODEL)
    convs = [n.name for n in model.graph.node if n.op_type == "Conv"]
    recipe = api.Recipe.model_validate({
        "preset": "cpu-u8s8", "target": "qonnx",
        "rules": [{"op_type": "Conv", "activation": {"dtype": "uint3"}}, {"name": "*", "weight": {"dtype": "int8"}}],
        "overrides": {convs[0]: {"weight": {"dtype": "bipolar"}}}})
    fields = api.qdq_only_fields(recipe, api.plan(model, recipe))
    assert [(f.field, f.dtype, f.nodes) for f in fields] == [
        ("rules[0].activation.dtype", "uint3", convs),
        (f'overrides["{convs[0]}"].weight.dtype', "bipolar", [convs[0]])]
    assert api.qdq_only_fields_text(fields, prefix="recipe.") == (
        f'recipe.rules[0].activation.dtype, recipe.overrides["{convs[0]}"].weight.dtype')
    assert api.qdq_only_fields_text(fields * 3).endswith(" ...")
    plain = api.Recipe.model_validate({"preset": "cpu-u8s8", "target": "qonnx"})
    assert api.qdq_only_fields(plain, api.plan(model, plain)) == []
    refuse_qdq_export(plain, api.plan(model, plain))  # nothing QONNX-only: no refusal
    with pytest.raises(ExportError) as info:
        refuse_qdq_export(recipe, api.plan(model, recipe))
    assert info.value.hint.startswith("The recipe sets them in rules[0].activation.dtype, overrides[")
    assert QDQ_ONLY_HINT not in info.value.hint  # its own wording, naming the fields
