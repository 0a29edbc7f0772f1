"""The automatic recipe search: observer choice by local error, CLI default and --no-search, replay without search."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main
from workbench.core import api
from workbench.core.calibration.observers import make_observer
from workbench.core.tuning import recipe_search
from workbench.core.tuning.recipe_search import CANDIDATES, MARGIN, search_recipe


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


ROWS, FEAT, OUT = 40, 64, 8


def _outlier_case(tmp_path):
    """x [N, 64] -> MatMul(W [64, 8]) -> y; 0.2 % of the calibration values of x are outliers of
    +-40 (x is N(0, 1) else), the held-out rows (the last 8) have none, so clipping beats MinMax."""
    rng = np.random.default_rng(7)
    w = rng.standard_normal((FEAT, OUT)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "outliers",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", FEAT])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", OUT])],
        [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    path = tmp_path / "outliers.onnx"
    onnx.save(model, path)
    x = rng.standard_normal((ROWS, FEAT)).astype(np.float32)
    hit = rng.random((ROWS - 8, FEAT)) < 0.002
    x[:ROWS - 8][hit] = 40.0 * np.sign(rng.standard_normal(int(hit.sum())))
    data = tmp_path / "calib.npz"
    np.savez(data, x=x)
    return path, data, x, w


def _fq(v: np.ndarray, scale: float, zp: int, lo: int, hi: int) -> np.ndarray:
    return (np.clip(np.rint(v.astype(np.float64) / scale) + zp, lo, hi) - zp) * scale


def _expected_errors(x: np.ndarray, w: np.ndarray, spec_x, held: int) -> dict[str, float]:
    """Per candidate: relative error of x's reader (the MatMul, x fake-quantized) on the held-out
    rows, ranges from the other rows (plain numpy). y is a graph output no quantized unit reads: it
    stays float, so it adds no error of its own."""
    cal, hold = x[:-held], x[-held:]
    out = {}
    for c in CANDIDATES:
        err = 0.0
        for spec, fit, ref_in, reader in ((spec_x, cal, hold, w),):
            obs = make_observer(spec.model_copy(update={"observer": c}), name="t")
            obs.update(fit)
            qp = obs.qparams()
            info = np.iinfo(qp.zero_point.dtype)
            q = _fq(ref_in, float(qp.scale), int(qp.zero_point), info.min, info.max)
            ref = ref_in.astype(np.float64) @ reader if reader is not None else ref_in
            got = q @ reader if reader is not None else q
            err += float(np.sum((got - ref) ** 2) / np.sum(ref ** 2))
        out[c] = err
    return out


def test_search_picks_the_observer_with_the_lowest_local_error(tmp_path):
    path, data, x, w = _outlier_case(tmp_path)
    model = api.open_model(path)
    recipe = api.make_recipe("cpu-u8s8")
    report = search_recipe(model, recipe, str(data))
    assert report.skipped is None and report.held_out == 8
    [choice] = report.choices
    assert choice.node == "mm" and sorted(choice.tensors) == ["x"]
    the_plan = api.plan(model, recipe)
    assert "y" not in the_plan.activations
    want = _expected_errors(x, w, the_plan.activations["x"], report.held_out)
    for c in CANDIDATES:
        assert choice.errors[c] == pytest.approx(want[c], rel=2e-3), c
    best = min(want, key=want.get)
    assert best != "minmax" and want[best] < MARGIN * want["minmax"]
    assert choice.observer == best
    assert report.recipe.overrides["mm"].activation.observer == best
    assert api.plan(model, report.recipe).activations["x"].observer == best


def test_search_keeps_minmax_where_it_is_best(tmp_path):
    """Without outliers MinMax is within MARGIN of the best: the recipe comes back unchanged."""
    path, data, x, _ = _outlier_case(tmp_path)
    np.savez(data, x=np.random.default_rng(1).uniform(-1, 1, x.shape).astype(np.float32))
    report = search_recipe(api.open_model(path), api.make_recipe("cpu-u8s8"), str(data))
    assert [c.observer for c in report.choices] == ["minmax"]
    assert report.recipe == api.make_recipe("cpu-u8s8")


def test_cli_search_is_opt_in_and_the_project_replays_without_searching(tmp_path, monkeypatch, capsys):
    path, data, _, _ = _outlier_case(tmp_path)
    out, proj = tmp_path / "searched.onnx", tmp_path / "job.wbproj"
    # --no-auto: the recipe choice would give x 16-bit activations (its outliers hold the output noise),
    # leaving no 8-bit MinMax tensor to search
    assert main(["quantize", str(path), "--data", str(data), "-o", str(out), "--save-project", str(proj),
                 "--search", "--no-auto"]) == 0
    err = capsys.readouterr().err
    assert "recipe search: 1 of 1 activation groups changed" in err and "x the calibration pass" in err
    saved = json.loads(proj.read_text())["recipe"]
    chosen = saved["overrides"]["mm"]["activation"]["observer"]
    assert chosen != "minmax"

    def no_search(*a, **k):
        raise AssertionError("a project replay must not search")

    monkeypatch.setattr(recipe_search, "search_recipe", no_search)
    monkeypatch.setattr(api, "search_recipe", no_search, raising=False)
    replayed = tmp_path / "replayed.onnx"
    assert main(["quantize", str(proj), "-o", str(replayed)]) == 0
    assert replayed.read_bytes() == out.read_bytes()

    plain = tmp_path / "plain.onnx"
    assert main(["quantize", str(path), "--data", str(data), "-o", str(plain), "--no-auto"]) == 0  # no search
    assert plain.read_bytes() != out.read_bytes()
    model = api.open_model(path)
    direct = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(data))
    api.export(direct, tmp_path / "direct.onnx")
    assert (tmp_path / "direct.onnx").read_bytes() == plain.read_bytes()


def test_int16_for_an_element_wise_tensor_that_stays_noisy_at_8_bits(tmp_path):
    """x -> MatMul -> y -> Mul(y, y) -> y2 -> Mul(y2, y2) -> z: z = y^4 is so heavy-tailed that no 8-bit
    range keeps it above 35 dB local SQNR, and no compute node reads it, so it gets int16; y feeds
    the Mul only but is decided by the MatMul (a compute unit), so it stays 8-bit."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((FEAT, OUT)).astype(np.float32) / 8
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
         helper.make_node("Mul", ["y", "y"], ["y2"], name="sq"),
         helper.make_node("Mul", ["y2", "y2"], ["z"], name="quad")], "tails",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", FEAT])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", OUT])],
        [numpy_helper.from_array(w, "w")])
    path = tmp_path / "tails.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    x = rng.standard_normal((ROWS, FEAT)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=x)
    model = api.open_model(path)
    report = search_recipe(model, api.make_recipe("cpu-u8s8"), str(tmp_path / "calib.npz"))
    by_node = {c.node: c for c in report.choices}
    quad = by_node["quad"]
    assert quad.tensors == ["z"]
    # independent check of z's own error at 8 bits, ranges from the non-held-out rows
    z = (x.astype(np.float64) @ w) ** 4
    spec = api.plan(model, api.make_recipe("cpu-u8s8")).activations["z"]
    obs = make_observer(spec.model_copy(update={"observer": quad.observer}), name="z")
    obs.update(z[:-report.held_out].astype(np.float32))
    qp = obs.qparams()
    info = np.iinfo(qp.zero_point.dtype)
    held = z[-report.held_out:].astype(np.float32)
    err = float(np.sum((_fq(held, float(qp.scale), int(qp.zero_point), info.min, info.max) - held) ** 2)
                / np.sum(held.astype(np.float64) ** 2))
    assert quad.errors[quad.observer] == pytest.approx(err, rel=2e-3)
    assert err > recipe_search.INT16_ABOVE and quad.dtype == "int16"
    assert by_node["mm"].dtype is None
    searched = api.plan(model, report.recipe)
    assert searched.activations["z"].dtype == "int16"
    assert searched.activations["y"].dtype == "uint8"
