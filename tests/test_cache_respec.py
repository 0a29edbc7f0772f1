"""A calibration cache made under one recipe, reused under another, gives the current recipe's specs.

Found in the app: after an int16 edit was analysed and undone, Export wrote an opset-17 model with an
INT16 zero point (onnxruntime refused to load it), and after an undone ``symmetric`` edit the analysis
showed figures of the symmetric ranges as current. The jobs skipped calibration when every tensor was
in the cache, and quantize used the cached observers with their old specs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

import workbench
from workbench.core import api
from workbench.core.errors import CalibrationError
from workbench.core.jobs import job_export
from workbench.core.progress import CancelToken

EXAMPLE = Path(workbench.__file__).resolve().parent / "resources" / "example"
MODEL, DATA = EXAMPLE / "digits_cnn.onnx", str(EXAMPLE / "digits_cnn_calib.npz")


def _conv(model) -> str:
    return next(n.name for n in model.graph.node if n.op_type == "Conv")


def _recipe_with(model, **activation):
    return api.make_recipe("cpu-u8s8").with_overrides(
        [_conv(model)], api.NodeSettings(activation=api.PartialSpec(**activation)))


def _export(model, recipe, calibration, path, data=None) -> bytes:
    payload = {"model_path": str(MODEL), "recipe": recipe.to_json(), "data": data, "samples": 16,
               "calibration": calibration.to_json(), "reuse": True, "path": str(path)}
    job_export(payload, lambda *a: None, CancelToken())
    return Path(path).read_bytes()


@pytest.mark.parametrize("edit", [{"dtype": "int16"}, {"symmetric": True}])
def test_a_cache_of_an_undone_edit_exports_what_a_fresh_calibration_does(tmp_path, edit):
    model = api.open_model(MODEL)
    plain = api.make_recipe("cpu-u8s8")
    fresh = api.calibrate(model, api.plan(model, plain), DATA, samples=16)
    edited = _recipe_with(model, **edit)
    cache = api.calibrate(model, api.plan(model, edited), DATA, samples=16)  # the edit was analysed
    expected = _export(model, plain, fresh, tmp_path / "fresh.onnx", DATA)
    got = _export(model, plain, cache, tmp_path / "undone.onnx", DATA)  # then undone, and exported
    assert got == expected
    feeds = next(api.open_data_source(DATA, model).batches(1))
    sess = ort.InferenceSession(str(tmp_path / "undone.onnx"), providers=["CPUExecutionProvider"])
    assert np.isfinite(sess.run(None, feeds)[0]).all()  # it loads (an INT16 zero point at opset 17 did not)


def test_without_data_a_dtype_change_is_respecced_and_a_symmetry_change_refused(tmp_path):
    model = api.open_model(MODEL)
    plain = api.make_recipe("cpu-u8s8")
    int16_cache = api.calibrate(model, api.plan(model, _recipe_with(model, dtype="int16")), DATA, samples=16)
    fresh = api.calibrate(model, api.plan(model, plain), DATA, samples=16)
    a = api.quantize(model, plain, calibration=int16_cache)  # same statistics, the uint8 grid
    b = api.quantize(model, plain, calibration=fresh)
    assert a.proto.SerializeToString() == b.proto.SerializeToString()
    sym_plan = api.plan(model, _recipe_with(model, symmetric=True))
    changed = [t for t, spec in api.plan(model, plain).activations.items() if sym_plan.activations[t] != spec]
    assert len(changed) == 2  # the Conv's input and output grids
    sym_cache = api.calibrate(model, sym_plan, DATA, samples=16)
    with pytest.raises(CalibrationError, match=rf"no usable ranges for 2 tensors whose observer settings changed "
                                               rf"\({', '.join(changed)}\)"):
        api.quantize(model, plain, calibration=sym_cache)
