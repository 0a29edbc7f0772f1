"""Weights kept in the user's external data file (workbench.core.io.external): the same quantized
model as with every weight loaded, no change to the user's files, bounded copies.

The thresholds are lowered so a model of a few hundred KiB takes the path of a multi-GiB one.
"""

from __future__ import annotations

import hashlib

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.errors import ModelError
from workbench.core.io import external
from workbench.core.recipe.spec import NodeSettings


def _save_external(folder, name="m.onnx", opset=13):
    rng = np.random.default_rng(0)
    w0 = numpy_helper.from_array((rng.standard_normal((64, 128)) * 0.2).astype(np.float32), "W0")
    w1 = numpy_helper.from_array((rng.standard_normal((128, 32)) * 0.2).astype(np.float32), "W1")
    b = numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "b")
    nodes = [helper.make_node("MatMul", ["X", "W0"], ["H"], name="mm0"),
             helper.make_node("Relu", ["H"], ["R"], name="relu"),
             helper.make_node("MatMul", ["R", "W1"], ["M"], name="mm1"),
             helper.make_node("Constant", [], ["c"], name="const",
                              value=numpy_helper.from_array(np.full(32, 0.5, np.float32))),
             helper.make_node("Add", ["M", "b"], ["Mb"], name="add"),
             helper.make_node("Mul", ["Mb", "c"], ["Y"], name="mul")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 64])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 32])], [w0, w1, b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    folder.mkdir(exist_ok=True)
    onnx.save_model(m, str(folder / name), save_as_external_data=True, location=name + ".data", size_threshold=0)
    return folder / name


@pytest.fixture
def lazy(monkeypatch):
    monkeypatch.setattr(external, "LAZY_MODEL_BYTES", 0)
    monkeypatch.setattr(external, "LAZY_TENSOR_BYTES", 1024)  # W0 (32 KiB) and W1 (16 KiB) stay on disk, b loads


def _digest(folder):
    return {p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns) for p in folder.iterdir()}


def _arrays(proto):
    return {t.name: external.tensor_array(t).copy() for t in proto.graph.initializer}


def test_big_weights_stay_on_disk_and_read_the_same_values(tmp_path, lazy):
    src = _save_external(tmp_path / "m")
    want = {t.name: numpy_helper.to_array(t, str(src.parent))
            for t in onnx.load(str(src), load_external_data=False).graph.initializer}
    model = api.open_model(src)
    kept = external.lazy_tensors(model.proto)
    assert sorted(t.name for t in kept) == ["W0", "W1"]
    assert not any(t.HasField("raw_data") for t in kept)
    assert model.proto.graph.initializer[2].HasField("raw_data")  # b: 128 bytes, loaded
    for name, value in want.items():
        got = model.initializer(name)
        np.testing.assert_array_equal(got, value)
    assert not model.initializer("W0").flags.writeable
    assert any("stay in the external data file" in n for n in model.notes)


def test_an_external_tensor_the_reader_did_not_check_is_never_read(tmp_path):
    t = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[4])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", str(tmp_path / "x.data")), ("offset", "0"), ("length", "16")):
        t.external_data.add(key=k, value=v)
    (tmp_path / "x.data").write_bytes(bytes(16))
    with pytest.raises(ModelError, match="not loaded"):
        external.tensor_array(t)


@pytest.mark.parametrize(("preset", "opset"), [("dynamic-u8", 13), ("cpu-u8s8", 13), ("cpu-u8s8", 11)])
def test_quantized_model_is_the_same_as_with_loaded_weights(tmp_path, lazy, monkeypatch, preset, opset):
    """Also through the opset upgrade and the Constant lifting (onnx_ir) of preparation."""
    src = _save_external(tmp_path / "m", opset=opset)
    before = _digest(src.parent)
    data = {"kind": "random", "count": 8, "seed": 3}
    monkeypatch.setattr(external, "PREPACK", True)  # same onnxruntime kernels as the eager session
    model = api.open_model(src)
    assert [t.name for t in external.lazy_tensors(model.proto)] == ["W0", "W1"]
    assert model.opset == 13 and model.lifted_constants == 1
    lazy_res = api.quantize(model, api.make_recipe(preset), data=data)
    monkeypatch.setattr(external, "LAZY_MODEL_BYTES", 1 << 40)
    eager_res = api.quantize(api.open_model(src), api.make_recipe(preset), data=data)
    assert not external.has_lazy(eager_res.proto)
    assert [t.name for t in external.lazy_tensors(lazy_res.proto)] == []  # both weights quantized
    assert [n.SerializeToString() for n in lazy_res.proto.graph.node] == \
           [n.SerializeToString() for n in eager_res.proto.graph.node]
    a, b = _arrays(lazy_res.proto), _arrays(eager_res.proto)
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    assert _digest(src.parent) == before  # the user's model and data untouched


def _run(path, x):
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(None, {"X": x})[0]


@pytest.mark.parametrize("external_data", [True, False])
def test_export_streams_float_weights_from_the_source_file(tmp_path, lazy, monkeypatch, external_data):
    """mm1 excluded: its float weight W1 is still in the user's file and is copied into the output."""
    import workbench.core.io.save as save_mod

    src = _save_external(tmp_path / "m")
    before = _digest(src.parent)
    model = api.open_model(src)
    recipe = api.make_recipe("dynamic-u8", overrides={"mm1": NodeSettings(exclude=True)})
    res = api.quantize(model, recipe)
    assert [t.name for t in external.lazy_tensors(res.proto)] == ["W1"]
    if external_data:
        monkeypatch.setattr(save_mod, "EXTERNAL_THRESHOLD", 1024)
    out = tmp_path / "out" / "q.onnx"
    out.parent.mkdir()
    api.export(res, out)
    sizes = sorted(p.name for p in out.parent.iterdir())
    assert sizes == (["q.onnx", "q.onnx.data"] if external_data else ["q.onnx"])
    if external_data:
        first = (out.parent / "q.onnx.data").stat().st_size
        api.export(res, out)
        assert (out.parent / "q.onnx.data").stat().st_size == first
        assert first == 64 * 128 + 128 * 32 * 4  # int8 W0 + float W1, nothing twice
    saved = onnx.load(str(out))
    onnx.checker.check_model(saved)
    w1 = next(t for t in saved.graph.initializer if t.name == "W1")
    np.testing.assert_array_equal(numpy_helper.to_array(w1), model.initializer("W1"))
    monkeypatch.setattr(external, "LAZY_MODEL_BYTES", 1 << 40)  # the same export with every weight loaded
    eager = tmp_path / "eager.onnx"
    api.export(api.quantize(api.open_model(src), recipe), eager)
    x = np.random.default_rng(1).standard_normal((2, 64)).astype(np.float32)
    np.testing.assert_array_equal(_run(out, x), _run(eager, x))
    assert _digest(src.parent) == before


def test_evaluate_and_calibration_sessions_read_weights_in_place(tmp_path, lazy):
    src = _save_external(tmp_path / "m")
    model = api.open_model(src)
    res = api.quantize(model, api.make_recipe("cpu-u8s8"), data={"kind": "random", "count": 4, "seed": 0})
    report = api.evaluate(model, res.proto, {"kind": "random", "count": 4, "seed": 1})
    eager = api.evaluate(src, res.proto, {"kind": "random", "count": 4, "seed": 1})
    assert report.outputs[0].sqnr_db == pytest.approx(eager.outputs[0].sqnr_db, rel=1e-5)
    assert report.outputs[0].sqnr_db > 20


def test_data_outside_the_model_folder_is_refused_before_anything_is_kept_on_disk(tmp_path, lazy):
    src = _save_external(tmp_path / "m")
    (tmp_path / "m" / "m.onnx.data").rename(tmp_path / "outside.data")
    m = onnx.load(str(src), load_external_data=False)
    for t in m.graph.initializer:
        for e in t.external_data:
            if e.key == "location":
                e.value = "../outside.data"
    src.write_bytes(m.SerializeToString())
    with pytest.raises(ModelError, match="outside the model's folder"):
        api.open_model(src)
    assert not any(p.endswith("outside.data") for p in external._TRUSTED)


def test_analysis_of_a_model_with_weights_on_disk_matches_loaded_weights(tmp_path, lazy, monkeypatch):
    src = _save_external(tmp_path / "m")
    data = {"kind": "random", "count": 4, "seed": 2}
    monkeypatch.setattr(external, "PREPACK", True)
    model = api.open_model(src)
    lazy_rows = api.analyze(model, api.quantize(model, api.make_recipe("cpu-u8s8"), data=data), data)
    monkeypatch.setattr(external, "LAZY_MODEL_BYTES", 1 << 40)
    eager = api.open_model(src)
    eager_rows = api.analyze(eager, api.quantize(eager, api.make_recipe("cpu-u8s8"), data=data), data)
    assert [(r.node, r.sqnr_db) for r in lazy_rows] == [(r.node, r.sqnr_db) for r in eager_rows]
    assert len(lazy_rows) >= 2


def test_export_over_the_data_file_the_model_reads_is_refused(tmp_path, lazy):
    from workbench.core.errors import ExportError

    src = _save_external(tmp_path / "m")
    before = _digest(src.parent)
    model = api.open_model(src)
    res = api.quantize(model, api.make_recipe("dynamic-u8", overrides={"mm1": NodeSettings(exclude=True)}))
    with pytest.raises(ExportError, match="this is an input file|reads its weights from"):
        api.export(res, src)
    assert _digest(src.parent) == before


def test_a_data_file_changed_after_opening_is_not_read(tmp_path, lazy):
    src = _save_external(tmp_path / "m")
    model = api.open_model(src)
    data = src.parent / "m.onnx.data"
    data.write_bytes(data.read_bytes()[::-1] + bytes(8))  # size differs: mtime ticks can be coarse
    with pytest.raises(ModelError, match="changed"):
        model.initializer("W0")


def _worker_output(model_bytes: bytes, x: np.ndarray) -> np.ndarray:
    from workbench.core.runtime.session import make_session

    return make_session(onnx.load_from_string(model_bytes)).run(None, {"X": x})[0]


def test_a_spawned_worker_reads_the_weights_of_a_model_proto_it_is_sent(tmp_path, lazy, monkeypatch):
    """Sensitivity workers (spawn start method) get the proto as bytes; the trusted data files
    travel in the environment."""
    import concurrent.futures
    import multiprocessing

    src = _save_external(tmp_path / "m")
    model = api.open_model(src)
    x = np.random.default_rng(4).standard_normal((2, 64)).astype(np.float32)
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        got = pool.submit(_worker_output, model.proto.SerializeToString(), x).result(timeout=400)
    np.testing.assert_allclose(got, _run(src, x), rtol=1e-5, atol=1e-6)  # no prepacking there: rounding only
