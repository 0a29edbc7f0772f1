"""Our QONNX export through the ``qonnx`` package's own tools: ``cleanup_model``, ``inference_cost``
and the executor (``execute_onnx``) on the cleaned model.

qonnx's ``FoldConstants`` folds one node per pass with a full shape inference and cleanup after
each; the shape arithmetic of dynamic-axis exports (130 nodes in digits_transformer) took
cleanup_model 126 s CPU. ``with_static_shapes`` fixes the input shapes and folds it first (one
onnxruntime run), so qonnx's cleanup has nothing left to fold (5-6 s CPU).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from qdq_helpers import op_counts, run
from qonnx.core.modelwrapper import ModelWrapper
from qonnx.core.onnx_exec import execute_onnx

from workbench.core import api
from workbench.core.analysis.cost import bits_from_configs, model_cost
from workbench.core.graph.static_shapes import fold_fixed_nodes
from workbench.core.qonnx.writer import with_static_shapes

RNG = np.random.default_rng(3)


def _dynamic_flatten_matmul() -> onnx.ModelProto:
    """x[N,4,3] -> Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])) -> MatMul(W[12,5]):
    the reshape target as exporters with a dynamic batch axis write it."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]),
             helper.make_node("Concat", ["n1", "minus1"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["f"]),
             helper.make_node("MatMul", ["f", "w"], ["y"], name="mm")]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array([0], np.int64), "axes"),
             numpy_helper.from_array(np.array([-1], np.int64), "minus1"),
             numpy_helper.from_array(RNG.normal(0, 1, (12, 5)).astype(np.float32), "w")]
    g = helper.make_graph(nodes, "dyn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_fold_fixed_nodes_folds_shape_arithmetic_and_keeps_values():
    m = _dynamic_flatten_matmul()
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 2
    x = {"x": RNG.normal(0, 1, (2, 4, 3)).astype(np.float32)}
    want = run(m, x)["y"]
    n, inferred = fold_fixed_nodes(m)
    assert n == 4 and op_counts(m) == {"Reshape": 1, "MatMul": 1}
    target = next(numpy_helper.to_array(i) for i in m.graph.initializer if i.name == "target")
    assert target.tolist() == [2, -1]
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in inferred.graph.value_info}
    assert shapes["f"] == [2, 12]
    np.testing.assert_array_equal(run(m, x)["y"], want)


def test_model_cost_counts_matmul_after_dynamic_reshape():
    rep = model_cost(_dynamic_flatten_matmul(), batch=3)
    assert [(r.node, r.macs) for r in rep.rows] == [("mm", 3 * 5 * 12)]  # numel(Y) * K
    minus1 = _dynamic_flatten_matmul()  # some exporters write a dynamic axis as dim_value -1
    minus1.graph.input[0].type.tensor_type.shape.dim[0].dim_value = -1
    rep = model_cost(minus1, batch=2)
    assert rep.macs == 2 * 5 * 12 and rep.notes == ["input 'x': dimension ? set to 2"]


def test_static_qonnx_copy_leaves_qonnx_cleanup_nothing_to_fold():
    from qdq_helpers import calib_qparams
    from qonnx.util.cleanup import cleanup_model

    from workbench.core.model.load import prepare_proto
    from workbench.core.planning.plan import build_plan
    from workbench.core.qonnx.convert import qdq_to_qonnx
    from workbench.core.writers.registry import write_model

    model = prepare_proto(_dynamic_flatten_matmul())
    plan = build_plan(model, api.make_recipe("cpu-u8s8"))
    feeds = [{"x": RNG.normal(0, 1, (1, 4, 3)).astype(np.float32)} for _ in range(4)]
    qdq = write_model(model, plan, calib_qparams(model, plan, feeds)).proto
    qx = qdq_to_qonnx(qdq)
    static = with_static_shapes(qx, {"x": [2, 4, 3]})
    assert op_counts(static)["Shape"] == 0 and op_counts(static)["Quant"] == op_counts(qx)["Quant"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clean = cleanup_model(ModelWrapper(static))
        x = RNG.normal(0, 1, (2, 4, 3)).astype(np.float32)
        got = execute_onnx(clean, {clean.graph.input[0].name: x})[clean.graph.output[0].name]
    assert op_counts(clean.model) == op_counts(static)  # nothing folded by qonnx, quantizers kept
    np.testing.assert_array_equal(got, run(qdq, {"x": x})["y"])


# -- corpus (slow) ---------------------------------------------------------------------------------

#: (model, file, calibration samples, inference_cost preprocess). Its preprocessing folds every
#: weight / bias Quant, one node per qonnx pass: 91 on ppocr_mobile_v2_cls at 6.1-6.6 s CPU a
#: pass (about 10 minutes), so there inference_cost reads the cleaned model as it is.
TOOL_MODELS = [("digits_cnn", "model_opset17.onnx", 8, True),
               ("digits_transformer", "model_opset17.onnx", 8, True),
               ("ppocr_mobile_v2_cls", "model.onnx", 4, False)]


def _fixed_input(proto: onnx.ModelProto, name: str, shape: list[int]) -> onnx.ModelProto:
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    dims = next(i for i in out.graph.input if i.name == name).type.tensor_type.shape
    del dims.dim[:]
    for d in shape:
        dims.dim.add().dim_value = d
    return out


def _qonnx_tools(static: onnx.ModelProto, x: np.ndarray, preprocess: bool):
    from qonnx.util.cleanup import cleanup_model
    from qonnx.util.inference_cost import inference_cost

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.process_time()
        clean = cleanup_model(ModelWrapper(static))
        t1 = time.process_time()
        cost = inference_cost(clean, discount_sparsity=False, preprocess=preprocess)["total_cost"]
        t2 = time.process_time()
        got = execute_onnx(clean, {clean.graph.input[0].name: x})[clean.graph.output[0].name]
    return clean, cost, got, (t1 - t0, t2 - t1)


@pytest.mark.slow
@pytest.mark.parametrize("name,file,samples,preprocess", TOOL_MODELS)
def test_corpus_qonnx_cleanup_and_inference_cost(corpus, tmp_path, name, file, samples, preprocess):
    model = api.open_model(corpus / name / file)
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(corpus / name / "calib.npz"),
                          samples=samples)
    qx = onnx.load(api.export(result, tmp_path / "m.qonnx.onnx", format="qonnx", model=model))
    inp = model.inputs[0].name
    x = np.load(corpus / name / "eval.npz")[inp][:1]
    static = with_static_shapes(qx, {inp: list(x.shape)})
    n_quant = op_counts(qx)["Quant"]
    assert op_counts(static)["Quant"] == n_quant
    clean, cost, got, (t_clean, t_cost) = _qonnx_tools(static, x, preprocess)
    print(f"{name}: {len(qx.graph.node)} nodes -> {len(static.graph.node)} static; qonnx cleanup_model "
          f"{t_clean:.1f} s CPU, inference_cost(preprocess={preprocess}) {t_cost:.1f} s CPU; MACs "
          f"{cost['total_macs']:.0f}, BOPs {cost['total_bops']:.0f}, weights {cost['total_mem_w_elems']:.0f}")
    assert op_counts(clean.model)["Quant"] == n_quant  # cleanup kept every quantizer (preserve_qnt_ops)
    bits = bits_from_configs({u.node: u.config for u in result.plan.units.values() if not u.excluded})
    ours = model_cost(_fixed_input(model.proto, inp, list(x.shape)), bits)
    assert all(r.macs is not None for r in ours.rows)
    assert cost["total_macs"] == ours.macs  # qonnx's count == workbench.core.analysis.cost
    if preprocess:  # weights folded to initializers: qonnx counts their elements
        assert cost["total_mem_w_elems"] == sum(r.weight_params for r in ours.rows)
        assert cost["total_bops"] >= ours.bops  # qonnx types Quant outputs with a zero point != 0 FLOAT32
    else:  # datatypes from our annotations (SCALEDINT<8> x SCALEDINT<8>); qonnx counts Conv weights
        assert cost["total_bops"] == ours.bops  # always, MatMul / Gemm weights only as initializers
        assert cost["total_mem_w_elems"] == sum(r.weight_params for r in ours.rows if r.op_type == "Conv")
    want = next(iter(run(result.proto, {inp: x}).values()))
    diff = float(np.max(np.abs(got - want)))
    assert diff <= 1e-5 * float(np.ptp(want)), f"cleaned QONNX in qonnx vs QDQ in onnxruntime: {diff:.3g}"
