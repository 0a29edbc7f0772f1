"""Preparation expectations of shared/cases (README table): 21 external data, 23 initializers as
inputs, 24 empty/duplicate node names; plus 11 (ragged data), 17 (fp16) and 20 (If subgraphs)."""

from __future__ import annotations

import hashlib
import shutil

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx.reference import ReferenceEvaluator

from workbench.core.data.loader import open_data
from workbench.core.errors import ModelError
from workbench.core.model.load import load_model


def _run(proto: onnx.ModelProto, feed: dict) -> list[np.ndarray]:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return ort.InferenceSession(proto.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feed)


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_case21_external_data_found_beside_the_model(cases, tmp_path, monkeypatch):
    onnx_path = cases / "21_external_data_2gb.onnx"
    data_path = cases / "21_external_data_2gb.onnx.data"
    before = (_digest(onnx_path), _digest(data_path))
    monkeypatch.chdir(tmp_path)  # nothing may depend on the working directory
    model = load_model(onnx_path)
    assert model.external_data_files == ["21_external_data_2gb.onnx.data"]
    assert model.initializer("W").shape == (256, 256) and model.initializer("W2").shape == (256, 8)
    src = open_data(cases / "21_external_data_2gb.npz", model)
    feed = next(iter(src.batches(1)))
    want = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"]).run(None, feed)[0]
    np.testing.assert_allclose(_run(model.proto, feed)[0], want, rtol=1e-6, atol=1e-6)
    assert (_digest(onnx_path), _digest(data_path)) == before
    alone = tmp_path / "copy"
    alone.mkdir()
    shutil.copy(onnx_path, alone / onnx_path.name)  # the model without its .data file
    with pytest.raises(ModelError, match=r"tensor 'W'.*21_external_data_2gb\.onnx\.data.*missing"):
        load_model(alone / onnx_path.name)


def test_case23_initializers_listed_as_inputs_are_weights(cases):
    path = cases / "23_initializers_as_graph_inputs.onnx"
    model = load_model(path)
    assert [i.name for i in model.inputs] == ["X"] and [i.name for i in model.graph.input] == ["X"]
    assert {"W", "B", "M"} <= model.initializer_names
    assert any("W, B, M" in n for n in model.notes)
    src = open_data(cases / "23_initializers_as_graph_inputs.npz", model)
    feeds = list(src.batches(1))
    assert len(feeds) == 8 and all(set(f) == {"X"} for f in feeds)  # weights are never asked of the data
    want = ReferenceEvaluator(onnx.load(str(path))).run(None, feeds[0])[0]
    np.testing.assert_allclose(_run(model.proto, feeds[0])[0], want, rtol=1e-5, atol=1e-5)


def test_case24_names_made_unique_and_dup_reported_ambiguous(cases):
    path = cases / "24_empty_and_duplicate_node_names.onnx"
    before = _digest(path)
    original = onnx.load(str(path))
    model = load_model(path)
    names = [n.name for n in model.graph.node]
    assert len(set(names)) == 4 and all(names) and "dup" not in names
    assert sorted(model.ambiguous_names) == ["dup"] and model.ambiguous_names["dup"] == names[2:]
    assert [(r.kind, r.old, r.new) for r in model.renames] == [("node", o, n) for o, n in
                                                                zip(["", "", "dup", "dup"], names, strict=True)]
    assert [model.original_name(n) for n in names] == ["", "", "dup", "dup"]
    onnx.checker.check_model(model.proto)
    feed = next(iter(open_data(cases / "24_empty_and_duplicate_node_names.npz", model).batches(1)))
    want = ReferenceEvaluator(original).run(None, feed)[0]  # onnxruntime refuses the original
    np.testing.assert_allclose(_run(model.proto, feed)[0], want, rtol=1e-5, atol=1e-5)
    assert _digest(path) == before == model.sha256


def test_case11_ragged_samples(cases):
    model = load_model(cases / "11_histogram_calib_variable_seq.onnx")
    src = open_data(cases / "11_histogram_calib_variable_seq.npz", model)
    assert src.num_samples() == 4
    assert [f["X"].shape for f in src.batches(4)] == [(1, t, 16) for t in (5, 7, 9, 12)]


def test_case17_fp16_model_and_data(cases):
    model = load_model(cases / "17_fp16_model.onnx")
    assert model.inputs[0].dtype == np.float16
    feeds = list(open_data(cases / "17_fp16_model.npz", model).batches(1))
    assert len(feeds) == 8 and feeds[0]["X"].dtype == np.float16
    assert _run(model.proto, feeds[0])[0].dtype == np.float16


def test_case20_if_branches_are_walked(cases):
    model = load_model(cases / "20_if_subgraph_matmul.onnx")
    where = {n.name: p for p, n in model.iter_nodes()}
    assert where["then_mm"] == "branch/then_branch" and where["else_mm"] == "branch/else_branch"
    feeds = list(open_data(cases / "20_if_subgraph_matmul.npz", model).batches(1))
    assert [bool(f["cond"]) for f in feeds] == [i % 2 == 0 for i in range(8)]
