"""A QONNX export holds what the quantize's model-changing passes changed: the recipe choice turns
``bias_correction`` on for digits_cnn, and the QONNX file of that job carries the same corrected Conv
biases as its QDQ file (it was written from the float model's weights, with the uncorrected biases); a
SmoothQuant recipe's QONNX file holds the smoothed weights and the inserted Mul (it failed with a KeyError)."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench import cli
from workbench.core import api
from workbench.core.recipe.recipe import SmoothQuantSpec


def _qonnx_biases(m: onnx.ModelProto) -> dict[str, np.ndarray]:
    """Conv name -> its bias as the QONNX file's Quant node gives it (qonnx's own int_quant)."""
    from qonnx.custom_op.general.quant import quant

    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    producers = {o: n for n in m.graph.node for o in n.output}
    out = {}
    for n in m.graph.node:
        if n.op_type != "Conv" or len(n.input) < 3:
            continue
        q = producers[n.input[2]]
        assert q.op_type == "Quant", n.name
        attrs = {a.name: a.i for a in q.attribute}
        x, scale, zp, bits = (inits[i] for i in q.input)
        out[n.name] = quant(x, scale, zp, bits, attrs["signed"], attrs["narrow"], "ROUND")
    return out


def _qdq_biases(m: onnx.ModelProto) -> dict[str, np.ndarray]:
    """Conv name -> its bias dequantized from the QDQ file's int32 initializer."""
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    producers = {o: n for n in m.graph.node for o in n.output}
    out = {}
    for n in m.graph.node:
        if n.op_type == "Conv" and len(n.input) > 2 and n.input[2] in producers:
            dq = producers[n.input[2]]
            assert dq.op_type == "DequantizeLinear" and inits[dq.input[0]].dtype == np.int32, n.name
            out[n.name] = inits[dq.input[0]].astype(np.float32) * inits[dq.input[1]]
    return out


def test_qonnx_export_keeps_the_bias_correction_of_the_qdq_file(corpus, tmp_path, capsys):
    pytest.importorskip("qonnx")
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.core.onnx_exec import execute_onnx

    d = corpus / "digits_cnn"
    qx, qdq, proj = tmp_path / "m.qonnx.onnx", tmp_path / "m.qdq.onnx", tmp_path / "job.wbproj"
    # the recipe choice on (no --no-auto); no latency check, whose measured placement could differ in the replay
    assert cli.main(["quantize", str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--format", "qonnx",
                     "-o", str(qx), "--save-project", str(proj), "--no-latency-check"]) == 0
    assert api.load_project(proj).recipe.bias_correction  # what makes the two files differ from the float biases
    assert cli.main(["quantize", str(proj), "--format", "qdq", "-o", str(qdq)]) == 0
    capsys.readouterr()

    m, mq = onnx.load(qx), onnx.load(qdq)
    got, want = _qonnx_biases(m), _qdq_biases(mq)
    assert sorted(got) == sorted(want) and len(want) == 3
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=0, err_msg=name)

    inp = m.graph.input[0].name
    rows = np.load(d / "eval.npz")[inp][:20]
    sess = ort.InferenceSession(str(qdq))
    wrapper = ModelWrapper(str(qx))
    for i in range(len(rows)):
        x = rows[i:i + 1]
        expect = sess.run(None, {inp: x})[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = execute_onnx(wrapper, {inp: x})[m.graph.output[0].name]
        # the tolerance of test_qonnx_cli_export's digits_cnn export
        np.testing.assert_allclose(out, expect, rtol=0, atol=1e-5 * float(np.ptp(expect)), err_msg=f"row {i}")


def test_qonnx_export_of_a_smoothquant_recipe_holds_the_smoothed_model(tmp_path):
    pytest.importorskip("qonnx")
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.core.onnx_exec import execute_onnx

    rng = np.random.default_rng(2)
    w = rng.normal(size=(16, 8)).astype(np.float32)
    w[:2] /= 100.0  # outlier input channels meet small weights
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("MatMul", ["r", "w"], ["y"], name="mm")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 8])],
                              [numpy_helper.from_array(w, "w")])
    src = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), src)

    def outliers(n):
        x = rng.normal(size=(n, 16)).astype(np.float32)
        x[:, :2] *= 100.0
        return x

    np.savez(tmp_path / "calib.npz", x=outliers(64))
    x = outliers(4)
    model = api.open_model(src)
    recipe = api.make_recipe("cpu-u8s8", op_types=["MatMul"]).model_copy(
        update={"smoothquant": SmoothQuantSpec(alpha=0.5)})
    result = api.quantize(model, recipe, data=str(tmp_path / "calib.npz"), samples=64)
    out = api.export(result, tmp_path / "q.onnx", format="qonnx", model=model, input_shapes={"x": [4, 16]})
    want = ort.InferenceSession(result.proto.SerializeToString()).run(None, {"x": x})[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wrapper = ModelWrapper(str(out))
        got = execute_onnx(wrapper, {"x": x})[wrapper.graph.output[0].name]
    assert [n.op_type for n in wrapper.graph.node] == ["Relu", "Mul", "Quant", "Quant", "MatMul"]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * float(np.ptp(want)))


def test_app_qonnx_export_keeps_the_bias_correction(corpus, tmp_path):
    """File > Export as QONNX (the export job) writes the corrected biases its QDQ export writes."""
    pytest.importorskip("qonnx")
    from workbench.core.jobs import job_export
    from workbench.core.progress import CancelToken

    d = corpus / "digits_cnn"
    recipe = api.make_recipe("cpu-u8s8").model_copy(update={"bias_correction": True})
    payload = {"model_path": str(d / "model_opset17.onnx"), "recipe": recipe.to_json(),
               "data": {"kind": "npz", "path": str(d / "calib.npz")}, "samples": 8, "calibration": None,
               "choose": False, "latency_check": False}
    paths = {fmt: tmp_path / f"m.{fmt}.onnx" for fmt in ("qonnx", "qdq")}
    for fmt, path in paths.items():
        job_export({**payload, "format": fmt, "path": str(path)}, lambda *_: None, CancelToken())
    got, want = _qonnx_biases(onnx.load(paths["qonnx"])), _qdq_biases(onnx.load(paths["qdq"]))
    assert sorted(got) == sorted(want) and len(want) == 3
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=0, err_msg=name)
