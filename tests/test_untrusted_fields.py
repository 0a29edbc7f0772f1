"""Untrusted fields of models, projects and recipes: a one-line error naming the file and the field
(exit 2, nothing written), never a traceback and never a silently different model."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main
from workbench.core.calibration.calibrate import CalibrationResult


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


RNG = np.random.default_rng(3)


def _model(opset: int = 13) -> onnx.ModelProto:
    w = numpy_helper.from_array(RNG.standard_normal((4, 3)).astype(np.float32), "W")
    g = helper.make_graph([helper.make_node("MatMul", ["X", "W"], ["Y"], name="mm")], "g",
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 3])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _run(argv, capsys):
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    err = [line for line in err if not line.startswith("[")]  # progress lines
    return code, err


def _external(tmp_path, offset="0", location="w.bin", length="48"):
    m = _model()
    t = m.graph.initializer[0]
    (tmp_path / "w.bin").write_bytes(numpy_helper.to_array(t).tobytes())
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        e = t.external_data.add()
        e.key, e.value = k, v
    path = tmp_path / "ext.onnx"
    path.write_bytes(m.SerializeToString())
    np.savez(tmp_path / "calib.npz", X=RNG.standard_normal((4, 4)).astype(np.float32))
    return path


@pytest.mark.parametrize("field,kw", [
    ("offset", {"offset": "-5"}), ("offset", {"offset": "abc"}), ("offset", {"offset": "1" + "0" * 5000}),
    ("length", {"length": "4.5"}), ("location", {"location": "w\x00.bin"}),
])
@pytest.mark.parametrize("verb", ["quantize", "inspect"])
def test_bad_external_data_field_is_one_line_naming_file_tensor_and_field(tmp_path, capsys, field, kw, verb):
    path = _external(tmp_path, **kw)
    argv = [verb, path] + (["--data", tmp_path / "calib.npz", "-o", tmp_path / "o.onnx"] if verb == "quantize" else [])
    code, err = _run(argv, capsys)
    assert code == 2 and len(err) == 1, err
    assert "ext.onnx" in err[0] and "'W'" in err[0] and f"'{field}'" in err[0]
    assert not (tmp_path / "o.onnx").exists()


def test_valid_external_data_still_loads(tmp_path, capsys):
    path = _external(tmp_path)
    code, _ = _run(["quantize", path, "--data", tmp_path / "calib.npz", "-o", tmp_path / "o.onnx"], capsys)
    assert code == 0 and (tmp_path / "o.onnx").is_file()


@pytest.mark.parametrize("opset", [0, -1, 10_000])
def test_default_opset_out_of_range_is_refused_before_any_work(tmp_path, capsys, opset):
    m = _model()
    m.opset_import[0].version = opset
    (tmp_path / "m.onnx").write_bytes(m.SerializeToString())
    np.savez(tmp_path / "calib.npz", X=np.ones((2, 4), np.float32))
    code, err = _run(["quantize", tmp_path / "m.onnx", "--data", tmp_path / "calib.npz", "-o", tmp_path / "o.onnx"],
                     capsys)
    assert code == 2 and len(err) == 1
    assert "m.onnx" in err[0] and "opset_import" in err[0] and str(opset) in err[0] and "bug" not in err[0]
    assert not (tmp_path / "o.onnx").exists()


# -- projects -----------------------------------------------------------------------------------

@pytest.fixture
def project(tmp_path, capsys):
    onnx.save(_model(), str(tmp_path / "m.onnx"))
    np.savez(tmp_path / "calib.npz", X=RNG.standard_normal((16, 4)).astype(np.float32))
    proj = tmp_path / "job.wbproj"
    assert main(["quantize", str(tmp_path / "m.onnx"), "--data", str(tmp_path / "calib.npz"), "-o",
                 str(tmp_path / "ref.onnx"), "--save-project", str(proj)]) == 0
    capsys.readouterr()
    return proj


def test_project_nested_200000_deep_is_one_line(project, capsys):
    text = project.read_text().rstrip()[:-1] + ', "results": ' + "[" * 200_000 + "]" * 200_000 + "}"
    project.write_text(text)
    code, err = _run(["quantize", project, "-o", project.parent / "o.onnx"], capsys)
    assert code == 2 and len(err) == 1 and "job.wbproj" in err[0] and "nested deeper" in err[0]
    assert "results" in err[0]


def test_project_nested_deep_but_under_the_recursion_limit_is_refused_too(project, capsys):
    doc = json.loads(project.read_text())
    doc["results"] = json.loads("[" * 500 + "]" * 500)
    project.write_text(json.dumps(doc))
    code, err = _run(["quantize", project, "-o", project.parent / "o.onnx"], capsys)
    assert code == 2 and len(err) == 1 and "nested deeper" in err[0] and "results" in err[0]


def test_project_with_a_100000_digit_integer_is_one_line_naming_the_field(project, capsys):
    project.write_text(project.read_text().rstrip()[:-1] + ', "samples": 1' + "0" * 100_000 + "}")
    code, err = _run(["quantize", project, "-o", project.parent / "o.onnx"], capsys)
    assert code == 2 and len(err) == 1 and "job.wbproj" in err[0] and "field samples" in err[0]


@pytest.mark.parametrize("samples", [-1, 0])
def test_project_with_a_non_positive_sample_count_is_one_line_naming_the_field(project, capsys, samples):
    doc = json.loads(project.read_text())
    doc["samples"] = samples
    project.write_text(json.dumps(doc))
    code, err = _run(["quantize", project, "-o", project.parent / "o.onnx"], capsys)
    assert code == 2 and len(err) == 1 and "job.wbproj" in err[0] and "field samples" in err[0]
    assert not (project.parent / "o.onnx").exists()


def _poison(project, tensor_update, data=True):
    doc = json.loads(project.read_text())
    tensor = next(iter(doc["calibration"]["observers"]))
    doc["calibration"]["observers"][tensor]["data"].update(tensor_update)
    if not data:
        doc["data"] = None
    project.write_text(json.dumps(doc))
    return tensor


@pytest.mark.parametrize("bad", [{"max": float("nan")}, {"min": 50.0}, {"min": float("-inf")}],
                         ids=["nan", "min-gt-max", "inf"])
def test_cached_range_that_no_calibration_gives_is_dropped_recalibrated_and_said(project, capsys, bad):
    tensor = _poison(project, bad)
    code, err = _run(["quantize", project, "-o", project.parent / "o.onnx"], capsys)
    assert code == 0
    assert any(tensor in line and "dropped and recalibrated" in line for line in err), err
    # recalibrated from the same data: the very model of the clean run
    assert (project.parent / "o.onnx").read_bytes() == (project.parent / "ref.onnx").read_bytes()


def test_cached_range_invalid_and_no_data_refuses_naming_the_field(project, capsys):
    tensor = _poison(project, {"min": 50.0}, data=False)
    code, err = _run(["quantize", project, "-o", project.parent / "o.onnx"], capsys)
    assert code == 2 and len(err) == 1
    assert "job.wbproj" in err[0] and f"calibration.observers[{tensor!r}]" in err[0] and "min 50 > max" in err[0]
    assert not (project.parent / "o.onnx").exists()


def test_from_json_drops_invalid_ranges_and_keeps_the_valid_ones(project):
    doc = json.loads(project.read_text())["calibration"]
    good = CalibrationResult.from_json(doc)
    assert not good.dropped
    tensor = next(iter(doc["observers"]))
    doc["observers"][tensor]["data"]["max"] = float("nan")
    bad = CalibrationResult.from_json(doc)
    assert [t for t, _ in bad.dropped] == [tensor] and tensor not in bad.observers
    assert set(bad.observers) == set(good.observers) - {tensor}


# -- recipes ------------------------------------------------------------------------------------

@pytest.mark.parametrize("granularity,axis", [("per_channel", 99), ("per_channel", -3), ("per_block", 2)])
def test_weight_axis_out_of_range_is_refused_naming_node_weight_and_valid_range(tmp_path, capsys, granularity, axis):
    onnx.save(_model(), str(tmp_path / "m.onnx"))
    np.savez(tmp_path / "calib.npz", X=np.ones((2, 4), np.float32))
    spec = {"granularity": granularity, "axis": axis, **({"block_size": 32} if granularity == "per_block" else {})}
    if granularity == "per_block":
        spec["dtype"] = "int4"
    (tmp_path / "r.json").write_text(json.dumps({"preset": "cpu-u8s8", "rules": [{"op_type": "MatMul", "weight": spec}]}))
    code, err = _run(["quantize", tmp_path / "m.onnx", "--recipe", tmp_path / "r.json", "--data", tmp_path / "calib.npz",
                      "-o", tmp_path / "o.onnx"], capsys)
    assert code == 2 and len(err) == 1, err
    assert "'mm'" in err[0] and "'W'" in err[0] and f"axis {axis}" in err[0] and "-2 to 1" in err[0]
    assert not (tmp_path / "o.onnx").exists()


def test_weight_axis_in_range_negative_is_accepted(tmp_path, capsys):
    onnx.save(_model(), str(tmp_path / "m.onnx"))
    np.savez(tmp_path / "calib.npz", X=np.ones((2, 4), np.float32))
    (tmp_path / "r.json").write_text(json.dumps({"preset": "cpu-u8s8", "rules": [
        {"op_type": "MatMul", "weight": {"granularity": "per_channel", "axis": -1}}]}))
    code, _ = _run(["quantize", tmp_path / "m.onnx", "--recipe", tmp_path / "r.json", "--data",
                    tmp_path / "calib.npz", "-o", tmp_path / "o.onnx"], capsys)
    assert code == 0


# -- weights and structure ----------------------------------------------------------------------

@pytest.mark.parametrize("value", [np.nan, np.inf])
@pytest.mark.parametrize("preset", ["cpu-u8s8", "dynamic-u8"])
def test_non_finite_weight_is_refused_naming_the_weight_even_without_data(tmp_path, capsys, value, preset):
    m = _model()
    w = numpy_helper.to_array(m.graph.initializer[0]).copy()
    w[1, 2] = value
    m.graph.initializer[0].CopyFrom(numpy_helper.from_array(w, "W"))
    onnx.save(m, str(tmp_path / "m.onnx"))
    np.savez(tmp_path / "calib.npz", X=np.ones((2, 4), np.float32))
    argv = ["quantize", tmp_path / "m.onnx", "--preset", preset, "-o", tmp_path / "o.onnx"]
    if preset != "dynamic-u8":
        argv += ["--data", tmp_path / "calib.npz"]
    code, err = _run(argv, capsys)
    assert code == 2 and len(err) == 1 and "weight 'W'" in err[0] and "NaN/Inf" in err[0]
    assert "calibration data" not in err[0] and not (tmp_path / "o.onnx").exists()


@pytest.mark.parametrize("mutation", ["ir_version", "no_output", "unsorted"])
def test_models_onnx_checker_rejects_are_refused_on_load_not_after_writing(tmp_path, capsys, mutation):
    m = _model()
    if mutation == "ir_version":
        m.ir_version = onnx.IR_VERSION + 1
    elif mutation == "no_output":
        del m.graph.output[:]
    else:
        m.graph.node.extend([helper.make_node("Relu", ["Z"], ["Y2"], name="late"),
                             helper.make_node("Relu", ["Y"], ["Z"], name="early")])
        m.graph.output.append(helper.make_tensor_value_info("Y2", TensorProto.FLOAT, ["N", 3]))
    (tmp_path / "m.onnx").write_bytes(m.SerializeToString())
    code, err = _run(["inspect", tmp_path / "m.onnx"], capsys)
    assert code == 2 and len(err) == 1 and "m.onnx" in err[0] and "bug" not in err[0]
