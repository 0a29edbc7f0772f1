"""Model loading and preparation: bad files, external data, names, constants, opsets, quantized ops."""

from __future__ import annotations

import hashlib
import json
import os
import time
import zipfile

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from workbench.core import api
from workbench.core.errors import AlreadyQuantizedError, ModelError
from workbench.core.inspection.already_quantized import ensure_float_model
from workbench.core.inspection.report import format_report, inspect_model
from workbench.core.inspection.units import planned_units
from workbench.core.model.load import load_model, prepare_proto, upgrade_opset

RNG = np.random.default_rng(0)


def _mlp(opset: int = 13, names=("mm0", "relu", "mm1")) -> onnx.ModelProto:
    w0 = numpy_helper.from_array(RNG.standard_normal((8, 16)).astype(np.float32), "W0")
    w1 = numpy_helper.from_array(RNG.standard_normal((16, 4)).astype(np.float32), "W1")
    nodes = [helper.make_node("MatMul", ["X", "W0"], ["H"], name=names[0]),
             helper.make_node("Relu", ["H"], ["R"], name=names[1]),
             helper.make_node("MatMul", ["R", "W1"], ["Y"], name=names[2])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 8])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 4])], [w0, w1])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _options() -> ort.SessionOptions:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # compare graphs as written
    return so


def _ort(model: onnx.ModelProto, feed: dict) -> list[np.ndarray]:
    return ort.InferenceSession(model.SerializeToString(), _options(), providers=["CPUExecutionProvider"]).run(None, feed)


def _ref(model: onnx.ModelProto, feed: dict) -> list[np.ndarray]:
    return ReferenceEvaluator(model).run(None, feed)


def _save(model, path, **kw):
    onnx.save(model, str(path), **kw)
    return path


# -- bad files ---------------------------------------------------------------------------------

def test_missing_empty_truncated_and_non_onnx_files(tmp_path):
    with pytest.raises(ModelError, match="nope.onnx: no such model file"):
        load_model(tmp_path / "nope.onnx")
    (tmp_path / "empty.onnx").write_bytes(b"")
    with pytest.raises(ModelError, match=r"empty\.onnx: the file is empty.*Re-export"):
        load_model(tmp_path / "empty.onnx")
    data = _mlp().SerializeToString()
    (tmp_path / "cut.onnx").write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelError, match=r"cut\.onnx: not .*ONNX.*truncated"):
        load_model(tmp_path / "cut.onnx")
    (tmp_path / "text.onnx").write_text('{"not": "a model"}\n')
    with pytest.raises(ModelError, match=r"text\.onnx: this is a text file \(its first line: '\{\"not\": \"a model\"\}'\), "
                                         r"not an ONNX model\. Give the binary \.onnx model file itself"):
        load_model(tmp_path / "text.onnx")
    with pytest.raises(ModelError, match="is not a file.*this folder has cut.onnx"):
        load_model(tmp_path)
    np.savez(tmp_path / "weights.npz", a=np.ones(3))
    with pytest.raises(ModelError, match=r"weights\.npz is a NumPy data file \(\.npz, arrays a\), not an ONNX model\. "):
        load_model(tmp_path / "weights.npz")
    with zipfile.ZipFile(tmp_path / "ckpt.pt", "w") as z:  # torch.save's layout: a pickle beside the tensors
        z.writestr("ckpt/data.pkl", b"\x80\x02}q\x00.")
    with pytest.raises(ModelError, match=r"ckpt\.pt: this is a zip archive \(a PyTorch checkpoint or \.keras file\?\), "
                                         r"not an ONNX model.*Export it"):
        load_model(tmp_path / "ckpt.pt")


def test_every_truncation_point_is_refused(tmp_path):
    data = _mlp().SerializeToString()
    path = tmp_path / "t.onnx"
    for cut in range(1, len(data), max(1, len(data) // 40)):
        path.write_bytes(data[:cut])
        with pytest.raises(ModelError, match="t.onnx"):
            load_model(path)


def test_load_never_modifies_the_file_and_matches_reference(tmp_path):
    m = _mlp()
    path = _save(m, tmp_path / "m.onnx")
    before = path.read_bytes()
    model = load_model(path)
    assert path.read_bytes() == before
    assert model.sha256 == hashlib.sha256(before).hexdigest()
    x = RNG.standard_normal((3, 8)).astype(np.float32)
    np.testing.assert_allclose(_ort(model.proto, {"X": x})[0], _ref(m, {"X": x})[0], rtol=1e-5, atol=1e-5)
    assert [(i.name, i.dtype, i.shape) for i in model.inputs] == [("X", np.dtype(np.float32), ["N", 8])]
    assert model.output_names == ["Y"] and model.renames == [] and model.opset == 13
    np.testing.assert_array_equal(model.initializer("W1"), numpy_helper.to_array(m.graph.initializer[1]))


# -- external data -----------------------------------------------------------------------------

def _external(tmp_path, sub="model"):
    d = tmp_path / sub
    d.mkdir()
    m = _mlp()
    weights = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    path = d / "m.onnx"
    onnx.save(m, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location="m.onnx.data",
              size_threshold=0)
    return weights, path


def test_external_data_is_resolved_beside_the_model_not_the_cwd(tmp_path, monkeypatch):
    weights, path = _external(tmp_path)
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    sizes = (path.stat().st_size, (path.parent / "m.onnx.data").stat().st_size)
    model = load_model(os.path.relpath(path, elsewhere))
    assert model.external_data_files == ["m.onnx.data"]
    np.testing.assert_array_equal(model.initializer("W0"), weights["W0"])
    assert (path.stat().st_size, (path.parent / "m.onnx.data").stat().st_size) == sizes
    assert inspect_model(model)["weights"]["location"] == "external data"


def test_missing_or_truncated_external_data_names_file_and_tensor(tmp_path):
    _, path = _external(tmp_path)
    data = path.parent / "m.onnx.data"
    blob = data.read_bytes()
    data.write_bytes(blob[:100])
    with pytest.raises(ModelError, match=r"tensor 'W\d'.*m\.onnx\.data.*truncated"):
        load_model(path)
    data.unlink()
    with pytest.raises(ModelError, match=r"tensor 'W0'.*m\.onnx\.data.*missing"):
        load_model(path)


def _relocate(path, location):
    m = onnx.load(str(path), load_external_data=False)
    for t in m.graph.initializer:
        for e in t.external_data:
            if e.key == "location":
                e.value = location
    onnx.save(m, str(path))


@pytest.mark.parametrize("how", ["dotdot", "absolute", "symlink"])
def test_external_data_outside_the_model_folder_is_refused(tmp_path, how):
    _, path = _external(tmp_path)
    outside = tmp_path / "secret.data"
    (path.parent / "m.onnx.data").rename(outside)
    if how == "dotdot":
        _relocate(path, "../secret.data")
    elif how == "absolute":
        _relocate(path, str(outside))
    else:
        (path.parent / "m.onnx.data").symlink_to(outside)
    with pytest.raises(ModelError, match=r"(outside the model's folder|absolute path).*tensor|tensor.*(outside|absolute)"):
        load_model(path)


# -- names -------------------------------------------------------------------------------------

def _named_chain(names, extra_tensor="MatMul_0"):
    inits = [numpy_helper.from_array(RNG.standard_normal((4, 4)).astype(np.float32), f"W{i}")
             for i in range(len(names))]
    ins = ["X"] + [f"T{i}" for i in range(len(names) - 1)]
    outs = ins[1:] + [extra_tensor]
    nodes = [helper.make_node("MatMul", [i, f"W{k}"], [o], name=n) for k, (i, o, n) in enumerate(zip(ins, outs, names, strict=True))]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info(extra_tensor, TensorProto.FLOAT, [2, 4])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def test_unique_names_with_renames_reported_and_ambiguity_recorded():
    names = ["", "", "dup", "dup", "keep", "dup_0"]
    m = _named_chain(names)
    model = prepare_proto(m)
    got = [n.name for n in model.proto.graph.node]
    assert len(set(got)) == len(got) and all(got)
    assert got[4] == "keep" and got[5] == "dup_0"  # already-unique names are kept
    every = {"X", "MatMul_0", *[f"W{i}" for i in range(6)], *[f"T{i}" for i in range(5)], *names}
    new = [r.new for r in model.renames]
    assert not set(new) & every  # no clash with tensor "MatMul_0" nor node "dup_0"
    assert [(r.kind, r.old) for r in model.renames] == [("node", "")] * 2 + [("node", "dup")] * 2
    assert model.ambiguous_names == {"dup": [got[2], got[3]]}
    assert "dup" not in got
    x = RNG.standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_allclose(_ort(model.proto, {"X": x})[0], _ref(m, {"X": x})[0], rtol=1e-5, atol=1e-5)
    report = inspect_model(model)
    assert len(report["renames"]) == 4 and report["ambiguous_names"] == {"dup": [got[2], got[3]]}


def _if_model(shadow: str = "tmp"):
    """If whose branches both define tensor ``shadow`` (and name nodes alike); weights outside."""
    w1 = numpy_helper.from_array(RNG.standard_normal((4, 4)).astype(np.float32), "W1")
    w2 = numpy_helper.from_array(RNG.standard_normal((4, 4)).astype(np.float32), "W2")

    def branch(w, name):
        nodes = [helper.make_node("MatMul", ["X", w], [shadow], name="mm"),
                 helper.make_node("Relu", [shadow], [f"{name}_out"], name="")]
        return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, [1, 4])])

    nodes = [helper.make_node("If", ["cond"], ["M"], name="branch", then_branch=branch("W1", "then"),
                              else_branch=branch("W2", "else")),
             helper.make_node("Relu", ["M"], ["Y"], name="mm")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                                       helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 4])], [w1, w2])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def test_names_unique_across_subgraphs_and_iter_nodes_walks_them():
    m = _if_model()
    model = prepare_proto(m)
    walked = list(model.iter_nodes())
    names = [n.name for _, n in walked]
    assert len(walked) == 6 and len(set(names)) == 6 and all(names)
    assert {p for p, _ in walked} == {"", "branch/then_branch", "branch/else_branch"}
    outputs = [o for _, n in walked for o in n.output]
    assert len(set(outputs)) == len(outputs)  # 'tmp' defined in both branches is now two names
    assert any(r.kind == "tensor" and r.old == "tmp" for r in model.renames)
    assert model.ambiguous_names == {"mm": sorted(model.ambiguous_names["mm"])} and len(model.ambiguous_names["mm"]) == 3
    x = RNG.standard_normal((1, 4)).astype(np.float32)
    for cond in (True, False):
        feed = {"cond": np.array(cond), "X": x}
        np.testing.assert_allclose(_ort(model.proto, feed)[0], _ref(m, feed)[0], rtol=1e-5, atol=1e-5)
    assert model.node_graph(model.ambiguous_names["mm"][1]).startswith("branch/")


# -- weights -----------------------------------------------------------------------------------

def test_constants_lifted_and_initializer_inputs_dropped():
    w = RNG.standard_normal((4, 4)).astype(np.float32)
    b = RNG.standard_normal(4).astype(np.float32)
    nodes = [helper.make_node("Constant", [], ["Wc"], value=numpy_helper.from_array(w, "w")),
             helper.make_node("Constant", [], ["eps"], value_float=0.5),
             helper.make_node("MatMul", ["X", "Wc"], ["H"], name="mm"),
             helper.make_node("Add", ["H", "B"], ["A"], name="add"),
             helper.make_node("Add", ["A", "eps"], ["Y"], name="add_eps")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 4]),
                                       helper.make_tensor_value_info("B", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 4])],
                          [numpy_helper.from_array(b, "B")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model = prepare_proto(m)
    assert [n.op_type for n in model.proto.graph.node] == ["MatMul", "Add", "Add"]
    assert model.lifted_constants == 2 and {"Wc", "eps", "B"} <= model.initializer_names
    np.testing.assert_array_equal(model.initializer("Wc"), w)
    assert [i.name for i in model.inputs] == ["X"] and [i.name for i in model.proto.graph.input] == ["X"]
    assert any("also listed as graph inputs" in n and "B" in n for n in model.notes)
    x = RNG.standard_normal((1, 4)).astype(np.float32)
    np.testing.assert_allclose(_ort(model.proto, {"X": x})[0], x @ w + b + 0.5, rtol=1e-5, atol=1e-5)
    assert m.graph.node[0].op_type == "Constant"  # the caller's proto is untouched


def test_fp16_model_loads_with_fp16_inputs(tmp_path):
    w = numpy_helper.from_array(RNG.standard_normal((4, 4)).astype(np.float16), "W")
    g = helper.make_graph([helper.make_node("MatMul", ["X", "W"], ["Y"], name="mm")], "g",
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT16, [1, 4])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT16, [1, 4])], [w])
    model = load_model(_save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "h.onnx"))
    assert model.inputs[0].dtype == np.float16 and model.initializer("W").dtype == np.float16
    assert inspect_model(model)["weights"]["by_dtype"] == {"float16": 32}


# -- opsets ------------------------------------------------------------------------------------

def _squeeze_model(opset=11):
    nodes = [helper.make_node("Squeeze", ["X"], ["S"], axes=[0], name="sq"),
             helper.make_node("ReduceSum", ["S"], ["Y"], axes=[1], keepdims=0, name="sum")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 3, 5])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [3])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def test_old_opset_upgraded_to_13_and_numbers_kept():
    m = _squeeze_model(11)
    model = prepare_proto(m)
    assert model.original_opset == 11 and model.opset == 13
    assert any("11 -> 13" in n for n in model.notes)
    assert all(n.name for _, n in model.iter_nodes())
    x = RNG.standard_normal((1, 3, 5)).astype(np.float32)
    np.testing.assert_allclose(_ort(model.proto, {"X": x})[0], x[0].sum(axis=1), rtol=1e-5)


def test_upgrade_opset_to_21_sets_ir_version_and_passes_checker():
    m = _mlp(13)
    big = numpy_helper.from_array(RNG.standard_normal((4, 2048)).astype(np.float32), "Wbig")  # skeleton path
    m.graph.initializer.append(big)
    m.graph.node.append(helper.make_node("MatMul", ["Y", "Wbig"], ["Z"], name="mm_big"))
    m.graph.output.append(helper.make_tensor_value_info("Z", TensorProto.FLOAT, ["N", 2048]))
    helper.set_model_props(m, {"source": "test"})
    out = upgrade_opset(m, 21)
    assert [(o.domain, o.version) for o in out.opset_import] == [("", 21)] and out.ir_version >= 10
    onnx.checker.check_model(out)
    assert [i.name for i in out.graph.input] == ["X"] and {p.key: p.value for p in out.metadata_props} == {"source": "test"}
    assert {t.name for t in out.graph.initializer} == {"W0", "W1", "Wbig"}
    x = RNG.standard_normal((2, 8)).astype(np.float32)
    for a, b in zip(_ref(m, {"X": x}), _ort(out, {"X": x}), strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4)
    same = _mlp(17)
    assert upgrade_opset(same, 13) is same


def test_upgrade_failure_names_the_operator():
    g = helper.make_graph([helper.make_node("FooBar", ["X"], ["Y"], name="fb")], "g",
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 12)])
    with pytest.raises(ModelError, match=r"x\.onnx: cannot convert from opset 12 to opset 13.*'FooBar'.*'fb'"):
        upgrade_opset(m, 13, source="x.onnx")
    model = prepare_proto(m)  # loading still works, the opset is kept with a note
    assert model.opset == 12 and any("Opset 12 kept" in n for n in model.notes)


# -- already quantized -------------------------------------------------------------------------

def _qdq_model():
    w = numpy_helper.from_array(RNG.integers(-127, 127, (4, 4)).astype(np.int8), "Wq")
    inits = [w, numpy_helper.from_array(np.array(0.1, np.float32), "s"),
             numpy_helper.from_array(np.array(0, np.int8), "z")]
    nodes = [helper.make_node("QuantizeLinear", ["X", "s", "z"], ["Xq"]),
             helper.make_node("DequantizeLinear", ["Xq", "s", "z"], ["Xd"]),
             helper.make_node("DequantizeLinear", ["Wq", "s", "z"], ["Wd"]),
             helper.make_node("MatMul", ["Xd", "Wd"], ["M"]),
             helper.make_node("Quant", ["M", "s", "z", "bw"], ["Y"], domain="qonnx.custom_op.general")]
    inits.append(numpy_helper.from_array(np.array(8.0, np.float32), "bw"))
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 4])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                               helper.make_opsetid("qonnx.custom_op.general", 1)])


def test_quantized_models_load_inspect_and_are_refused_for_quantization():
    model = prepare_proto(_qdq_model())
    assert len(model.quantized_nodes) == 4
    assert {q.kind for q in model.quantized} == {"QDQ", "QONNX"}
    rep = inspect_model(model)
    assert rep["quantized"]["kinds"] == {"QDQ": 3, "QONNX": 1}
    assert rep["quantized"]["op_types"] == {"DequantizeLinear": 2, "QuantizeLinear": 1, "Quant": 1}
    with pytest.raises(AlreadyQuantizedError, match=r"4 quantized node.*DequantizeLinear x2.*Quantize the float model"):
        ensure_float_model(model)
    ensure_float_model(prepare_proto(_mlp()))  # a float model passes


def test_inspect_counts_and_report_text():
    model = prepare_proto(_mlp())
    rep = inspect_model(model)
    json.dumps(rep)
    assert rep["op_histogram"] == {"MatMul": 2, "Relu": 1} and rep["nodes"] == 3
    assert rep["weights"]["bytes"] == (8 * 16 + 16 * 4) * 4 and rep["weights"]["elements"] == 8 * 16 + 16 * 4
    assert rep["inputs"] == [{"name": "X", "dtype": "float32", "shape": ["N", 8]}]
    text = format_report(rep)
    assert "MatMul 2" in text and "X: float32 [N, 8]" in text
    assert rep["units"] is None and "units:" not in text  # the planner's view only when asked
    # two MatMul units (the Relu folds into the first); the report says so
    rep = api.inspect_model(model, units=True)
    assert rep["units"]["count"] == 2 and rep["units"]["by_op"] == {"MatMul": 2}
    assert rep["units"]["nodes"] == [n.name for n in model.graph.node if n.op_type == "MatMul"]
    assert "2 quantizable node units with cpu-u8s8: MatMul 2" in format_report(rep)
    assert planned_units(prepare_proto(_qdq_model())) is None  # already quantized: nothing to plan


def test_new_name_avoids_every_existing_name():
    model = prepare_proto(_mlp())
    assert model.new_name("W0") == "W0_0" and model.new_name("W0") == "W0_1" and model.new_name("fresh") == "fresh"


# -- corpus (slow) -----------------------------------------------------------------------------

@pytest.mark.slow
def test_corpus_quantized_model_is_recognised(corpus):
    path = corpus / "ddddocr_common_old_int8" / "model.onnx"
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    model = load_model(path)
    kinds = {q.op_type for q in model.quantized}
    assert kinds == {"ConvInteger", "DynamicQuantizeLinear", "MatMulInteger", "DynamicQuantizeLSTM"}
    assert inspect_model(model)["quantized"]["kinds"] == {"dynamic": len(model.quantized)}
    with pytest.raises(AlreadyQuantizedError, match="model.onnx is already quantized.*float model"):
        ensure_float_model(model)
    assert model.sha256 == before


@pytest.mark.slow
def test_corpus_models_prepare_and_run_like_the_original(corpus):
    manifest = json.loads((corpus.parent / "manifest.json").read_text())
    for entry in manifest["models"]:
        path = corpus.parent / entry["file"]
        t0 = time.perf_counter()
        model = load_model(path)
        took = time.perf_counter() - t0
        print(f"{entry['name']}: load+prepare {took:.2f} s, {len(model.notes)} notes")
        assert model.opset >= 13 or model.quantized, entry["name"]
        assert not any(n.op_type == "Constant" for _, n in model.iter_nodes() if n.output[0] not in model.output_names)
        assert [i.name for i in model.inputs] == [i["name"] for i in entry["inputs"]]
        names = [n.name for _, n in model.iter_nodes()]
        assert len(names) == len(set(names)) and all(names)
        with np.load(corpus.parent / entry["calib_npz"]) as z:
            row = {k: np.asarray(z[k][0] if entry["npz_layout"] == "stacked" else z[k][:1]) for k in z.files
                   if not k.startswith("gt_")}
        want = ort.InferenceSession(str(path), _options(), providers=["CPUExecutionProvider"]).run(None, row)
        got = _ort(model.proto, row)
        for a, b in zip(want, got, strict=True):
            np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(a).max())))


def _loop(name, w):
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name=""),
         helper.make_node("MatMul", ["acc_in", w], ["prod"], name="body_mm"),
         helper.make_node("Tanh", ["prod"], ["acc_out"], name="body_tanh")],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [1, 4])])
    return body


def test_two_loops_with_identical_bodies_get_unique_names_and_same_numbers():
    ws = [numpy_helper.from_array((RNG.standard_normal((4, 4)) * 0.5).astype(np.float32), f"W{i}") for i in range(2)]
    inits = ws + [numpy_helper.from_array(np.array(3, np.int64), "trips"),
                  numpy_helper.from_array(np.array(True), "go")]
    nodes = [helper.make_node("Loop", ["trips", "go", "X"], ["L0"], name="loop", body=_loop("a", "W0")),
             helper.make_node("Loop", ["trips", "go", "L0"], ["Y"], name="loop", body=_loop("b", "W1"))]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 4])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model = prepare_proto(m)
    walked = list(model.iter_nodes())
    names = [n.name for _, n in walked]
    assert len(walked) == 8 and len(set(names)) == 8 and all(names)
    defined = [o for _, n in walked for o in n.output] + [v.name for _, gr in model.iter_graphs() for v in gr.input]
    assert len(defined) == len(set(defined))
    assert sorted(model.ambiguous_names) == ["body_mm", "body_tanh", "loop"]
    x = RNG.standard_normal((1, 4)).astype(np.float32)
    np.testing.assert_allclose(_ort(model.proto, {"X": x})[0], _ref(m, {"X": x})[0], rtol=1e-5, atol=1e-5)


def test_sparse_constant_and_constant_output_do_not_break_preparation():
    sparse = helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "v"),
                                       numpy_helper.from_array(np.array([0, 3], np.int64), "i"), [4])
    nodes = [helper.make_node("Constant", [], ["S"], sparse_value=sparse),
             helper.make_node("Constant", [], ["C"], value=numpy_helper.from_array(np.ones(4, np.float32))),
             helper.make_node("Add", ["X", "S"], ["Y"], name="add")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4]),
                           helper.make_tensor_value_info("C", TensorProto.FLOAT, [4])])
    model = prepare_proto(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))
    assert sorted(n.op_type for n in model.graph.node) in (["Add", "Constant"], ["Add", "Constant", "Constant"])
    x = np.arange(4, dtype=np.float32)
    y, c = _ort(model.proto, {"X": x})
    np.testing.assert_array_equal(y, x + [1, 0, 0, 2])
    np.testing.assert_array_equal(c, np.ones(4, np.float32))


def test_symlinked_model_and_data_like_the_hf_cache_are_accepted(tmp_path):
    weights, path = _external(tmp_path, "blobs")
    snap = tmp_path / "snapshots" / "rev"
    snap.mkdir(parents=True)
    (snap / "m.onnx").symlink_to(path)
    (snap / "m.onnx.data").symlink_to(path.parent / "m.onnx.data")
    model = load_model(snap / "m.onnx")
    np.testing.assert_array_equal(model.initializer("W1"), weights["W1"])


def test_preparation_is_idempotent():
    for m in (_named_chain(["", "", "dup", "dup"]), _if_model(), _squeeze_model(11), _qdq_model()):
        once = prepare_proto(m)
        twice = prepare_proto(once.proto)
        assert twice.renames == [] and twice.ambiguous_names == {}
        assert twice.proto.SerializeToString() == once.proto.SerializeToString()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["silero_vad/silero_vad.onnx", "digits_transformer/model_opset14.onnx"])
def test_corpus_upgrade_to_21_keeps_outputs(corpus, name):
    model = load_model(corpus / name)
    with np.load(corpus / name.split("/")[0] / "calib.npz") as z:
        stacked = name.startswith("silero")
        feed = {i.name: np.asarray(z[i.name][0] if stacked else z[i.name][:2]) for i in model.inputs}
    up = upgrade_opset(model.proto, 21, source=name)
    assert dict((o.domain, o.version) for o in up.opset_import)[""] == 21 and up.ir_version >= 10
    for a, b in zip(_ort(model.proto, feed), _ort(up, feed), strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)


def test_shape_inference_keeps_symbolic_dims_even_for_big_weights():
    w = numpy_helper.from_array(RNG.standard_normal((8, 2048)).astype(np.float32), "Wbig")  # > skeleton limit
    nodes = [helper.make_node("MatMul", ["X", "Wbig"], ["H"], name="mm"),
             helper.make_node("Relu", ["H"], ["Y"], name="relu")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 8])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], [w])
    model = prepare_proto(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]))
    shapes = {vi.name: [d.dim_param or d.dim_value for d in vi.type.tensor_type.shape.dim]
              for vi in list(model.graph.value_info) + list(model.graph.output)}
    assert shapes == {"H": ["N", 2048], "Y": ["N", 2048]}
    assert [i.name for i in model.graph.input] == ["X"]
    np.testing.assert_array_equal(model.initializer("Wbig"), numpy_helper.to_array(w))


def test_corrupted_bytes_load_or_raise_model_error_only(tmp_path):
    """Flip 1-2 random bytes of small models (opset 11 with a Constant; If subgraphs): loading
    either works or raises ModelError naming the file, never another exception."""
    rng = np.random.default_rng(7)
    sources = [_squeeze_model(11).SerializeToString(), _if_model().SerializeToString()]
    path = tmp_path / "fuzz.onnx"
    outcomes = {"ok": 0, "refused": 0}
    for i in range(160):
        data = bytearray(sources[i % 2])
        for _ in range(int(rng.integers(1, 3))):
            data[int(rng.integers(0, len(data)))] = int(rng.integers(0, 256))
        path.write_bytes(bytes(data))
        try:
            load_model(path)
            outcomes["ok"] += 1
        except ModelError as exc:
            assert "fuzz.onnx" in str(exc)
            outcomes["refused"] += 1
    assert outcomes["ok"] > 0 and outcomes["refused"] > 0
