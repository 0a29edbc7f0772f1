"""A quantize that quantizes nothing, of a file whose node names preparation had to fix, writes a file onnxruntime loads.

Since db2c4ec such a result is written as the input file holds it (:func:`workbench.core.pipeline.export.float_as_given`).
shared/cases/24_empty_and_duplicate_node_names holds two nodes named ``dup`` and two unnamed ones: onnxruntime refuses
it ("two nodes with same node name (dup)"), opening it renames them (``dup_0``, ``dup_1``, the CLI's note saying "The
output uses the new names"), but ``quantize --exclude '*'`` wrote the original names back: a file onnxruntime refused.
Such a file is now written as given except for the names (the graph of the file, no opset upgrade, nothing folded, with
the opened model's names), so it loads, computes what the file computes and carries the names the notes used.
"""

from __future__ import annotations

import hashlib

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api

ROWS = 8


def _duplicate_names(tmp_path):
    """x [N, 3, 6, 6] -> Conv 'dup' -> BatchNormalization '' -> Relu 'dup' -> Conv '' -> y, opset 11."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array((rng.standard_normal((4, 3, 3, 3)) / 3).astype(np.float32), "w1"),
             numpy_helper.from_array((rng.standard_normal((2, 4, 1, 1)) / 2).astype(np.float32), "w2")]
    for name, value in (("g", 1.5), ("b", 0.1), ("m", 0.2), ("v", 0.9)):
        inits.append(numpy_helper.from_array(np.full(4, value, np.float32), name))
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c"], name="dup", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "g", "b", "m", "v"], ["n"]),
             helper.make_node("Relu", ["n"], ["r"], name="dup"),
             helper.make_node("Conv", ["r", "w2"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2, 6, 6])], inits)
    path = tmp_path / "dup.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], ir_version=7), path)
    x = rng.standard_normal((ROWS, 3, 6, 6)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", x=x)
    return path, tmp_path / "calib.npz", x


def test_a_file_with_duplicate_node_names_is_written_with_the_opened_names(tmp_path):
    path, data, x = _duplicate_names(tmp_path)
    with pytest.raises(Exception, match="same node name"):
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])  # what the user's file does
    model = api.open_model(path)
    recipe = api.make_recipe("cpu-u8s8")
    nothing = api.quantize(model, recipe.with_excluded(list(api.plan(model, recipe).units)), data=str(data))
    out = api.export(nothing, tmp_path / "float.onnx")
    written = onnx.load(str(out))
    names = [n.name for n in written.graph.node]
    assert names == ["dup_0", "BatchNormalization_0", "dup_1", "Conv_0"]  # unique, as opened: failed before
    assert [n.op_type for n in written.graph.node] == ["Conv", "BatchNormalization", "Relu", "Conv"]  # not folded
    assert [(o.domain, o.version) for o in written.opset_import] == [("", 11)]  # not upgraded
    assert set(names) <= {n.name for n in model.proto.graph.node} | {"BatchNormalization_0"}
    assert [p.key for p in written.metadata_props] == ["workbench.version", "workbench.mode", "workbench.recipe",
                                                       "workbench.issues"]
    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {"x": x})
    # the file's own graph, its nodes named apart by hand (onnx.reference's BatchNormalization-9 differs by 0.85)
    given = onnx.load(str(path))
    for i, node in enumerate(given.graph.node):
        node.name = f"n{i}"
    (want,) = ort.InferenceSession(given.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_array_equal(got, want)  # the same graph, the same kernels
    # the app's calibration keeps the bytes an export of the same inputs writes
    kept = api.keep_written(model, nothing, {}, [])
    assert hashlib.sha256(kept["model"]).hexdigest() == hashlib.sha256(out.read_bytes()).hexdigest()
