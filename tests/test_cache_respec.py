"""A calibration cache made under one recipe, reused under another, gives the current recipe's specs.

Found in the app: after an int16 edit was analysed and undone, Export wrote an opset-17 model with an
INT16 zero point (onnxruntime refused to load it), and after an undone ``symmetric`` edit the analysis
showed figures of the symmetric ranges as current. The jobs skipped calibration when every tensor was
in the cache, and quantize used the cached observers with their old specs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from bundled_example import EXAMPLE
from onnx import numpy_helper

from workbench import cli
from workbench.core import api
from workbench.core.errors import CalibrationError
from workbench.core.jobs import job_export
from workbench.core.pipeline import latency_check
from workbench.core.progress import CancelToken
from workbench.core.runtime import unit_latency
from workbench.core.runtime.latency import LatencyComparison

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
def test_a_cache_of_an_undone_edit_exports_what_a_fresh_calibration_does(tmp_path, monkeypatch, edit):
    # the two exports' latency measurements fixed: timed, the latency placement's probes of digits_cnn's first Conv
    # and AveragePool could keep different units float in the two exports on a loaded machine
    monkeypatch.setattr(unit_latency, "compare", lambda f, q, feed, **k: LatencyComparison(float_s=1e-3, quant_s=2e-3, runs=5))
    monkeypatch.setattr(latency_check, "compare", lambda f, q, feed, **k: LatencyComparison(float_s=1e-3, quant_s=0.5e-3, runs=5))
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


@pytest.mark.slow
def test_the_apps_export_is_the_file_the_cli_writes(corpus, tmp_path, capsys, monkeypatch):
    """digits_transformer: the CLI's latency check keeps some attention MatMuls float (4 of 36 units on a quiet machine);
    the app's export wrote all 36 quantized although the README says the two files are equal. The measurements are
    replaced (each unit probe measures its quantized form slower, whole models measure quantized faster): timed,
    a loaded machine kept other units float in the second run (the check's figures are not cached when unreliable)."""
    monkeypatch.setattr(unit_latency, "compare", lambda f, q, feed, **k: LatencyComparison(float_s=1e-3, quant_s=2e-3, runs=5))
    monkeypatch.setattr(latency_check, "compare", lambda f, q, feed, **k: LatencyComparison(float_s=1e-3, quant_s=0.5e-3, runs=5))
    folder = corpus / "digits_transformer"
    model_path, data = folder / "model_opset17.onnx", str(folder / "calib.npz")
    cli_out = tmp_path / "cli.onnx"
    assert cli.main(["quantize", str(model_path), "--data", data, "--samples", "16", "--preset", "cpu-u8s8",
                 "--no-auto", "-o", str(cli_out)]) == 0
    cli_err = capsys.readouterr().err
    assert "kept in float" in cli_err  # the latency check changed something here
    payload = {"model_path": str(model_path), "recipe": api.make_recipe("cpu-u8s8").to_json(), "data": data,
               "samples": 16, "calibration": None, "reuse": True, "path": str(tmp_path / "app.onnx")}
    res = job_export(payload, lambda *a: None, CancelToken())
    assert Path(res["path"]).read_bytes() == cli_out.read_bytes()  # no cache yet: the CLI's very steps
    # the units kept float (not the note on no node about the units quantized to keep 85 % of them int8)
    kept = sorted(i.node for i in res["problems"] if i.code == "latency-kept-float" and i.node)
    # the app names the units the CLI named (its notes name each, the first in full)
    assert kept and all(n in cli_err for n in kept)
    assert sum(n.name in kept for n in onnx.load(str(cli_out)).graph.node) == len(kept)
    # with the app's cache of an earlier F5: the same units, ranges equal but for onnxruntime's float
    # rounding of a tensor the latency check adds (it is fetched beside other tensors)
    model = api.open_model(model_path)
    cache = api.calibrate(model, api.plan(model, api.make_recipe("cpu-u8s8"), guard=True), data, samples=16)
    res = job_export({**payload, "calibration": cache.to_json()}, lambda *a: None, CancelToken())
    # the export hands back the whole cache (it returned only the latency-checked plan's tensors, so the
    # next Analyze calibrated again)
    assert set(res["calibration"]["observers"]) >= set(cache.to_json()["observers"])
    got, want = (onnx.load(str(p)) for p in (res["path"], cli_out))
    scales = {i.name: numpy_helper.to_array(i) for i in want.graph.initializer if i.name.endswith("_scale")}
    again = sorted(i.node for i in res["problems"] if i.code == "latency-kept-float" and i.node)
    assert again == kept
    assert [(n.name, n.op_type) for n in got.graph.node] == [(n.name, n.op_type) for n in want.graph.node]
    shared = [i for i in got.graph.initializer if i.name in scales]
    assert shared
    for init in shared:
        np.testing.assert_allclose(numpy_helper.to_array(init), scales[init.name], rtol=1e-6)


def test_a_project_whose_observer_changed_after_calibrating_replays_from_its_data(tmp_path, capsys):
    """Calibrated with minmax, then one Conv's activation observer set to percentile and saved: the
    replay dropped the data because every tensor name was cached, and the cache was refused."""
    model = api.open_model(MODEL)
    cache = api.calibrate(model, api.plan(model, api.make_recipe("cpu-u8s8")), DATA, samples=16)
    recipe = _recipe_with(model, observer="percentile")
    project = api.new_project(MODEL, recipe, data={"kind": "npz", "path": DATA}, samples=16)
    project.calibration = cache.to_json()
    proj = tmp_path / "job.wbproj"
    api.save_project(project, proj)
    out = tmp_path / "replay.onnx"
    assert cli.main(["quantize", str(proj), "-o", str(out)]) == 0, capsys.readouterr().err
    expected = api.quantize(model, recipe, data=DATA, samples=16, calibration=cache)
    assert out.read_bytes() == expected.proto.SerializeToString()
