"""node_facts: attributes written compactly, tensor dtypes / shapes / weights, Q/DQ looked through."""

from __future__ import annotations

import numpy as np
from bundled_example import EXAMPLE
from onnx import TensorProto, helper, numpy_helper

from workbench.core import api
from workbench.core.inspection.node_facts import attr_fact


def test_attributes_are_written_compactly_with_the_whole_value_kept():
    assert attr_fact(helper.make_attribute("epsilon", 1e-5)) == api.AttrFact("epsilon", "1e-05")
    assert attr_fact(helper.make_attribute("to", TensorProto.FLOAT16)) == api.AttrFact("to", "float16 (10)")
    assert attr_fact(helper.make_attribute("mode", "nearest")) == api.AttrFact("mode", "nearest")
    long = attr_fact(helper.make_attribute("sizes", list(range(12))))
    assert long.text == "[0, 1, 2, 3, 4, 5, 6, 7, …] (12 values)"
    assert long.full == "[" + ", ".join(map(str, range(12))) + "]"
    value = numpy_helper.from_array(np.array([0.5, 2.0], np.float32))
    assert attr_fact(helper.make_attribute("value", value)).text == "float32 [2] = [0.5, 2]"
    big = numpy_helper.from_array(np.zeros((4, 4), np.float32))
    assert attr_fact(helper.make_attribute("value", big)) == api.AttrFact("value", "float32 [4, 4]")


def test_tensors_of_a_custom_op_after_a_qdq_pair():
    w = numpy_helper.from_array(np.ones((3, 5), np.int8), "w")
    inits = [w, numpy_helper.from_array(np.float32(0.1), "s"), numpy_helper.from_array(np.uint8(3), "z")]
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("QuantizeLinear", ["r", "s", "z"], ["q"], name="q"),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"], name="dq"),
             helper.make_node("Fancy", ["d", "w", ""], ["y"], name="fancy", domain="com.example", k=3)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits,
                              value_info=[helper.make_tensor_value_info("d", TensorProto.FLOAT, ["n", "unk__2"])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    facts = api.node_facts(proto, "fancy")
    assert (facts.op_type, facts.domain, facts.attributes) == ("Fancy", "com.example", (api.AttrFact("k", "3"),))
    d, weight, absent = facts.inputs
    assert (d.slot, d.dtype_text, d.shape_text, d.producer, d.source) == ("input 0", "float32", "[n, ?]", "dq", "relu")
    assert (weight.weight, weight.dtype, weight.shape, weight.size, weight.nbytes) == (True, "int8", (3, 5), 15, 15)
    assert absent == api.TensorFact("input 2", "")
    (y,) = facts.outputs
    assert (y.slot, y.dtype_text, y.shape_text, y.graph_output) == ("output 0", "float32", "?", True)
    relu = api.NodeFactsIndex(proto).facts("relu")
    assert relu.inputs[0].slot == "X" and relu.outputs[0].readers == ("fancy",)


def _dq_outputs_as_run(proto, feed) -> dict[str, tuple[str, tuple[int, ...]]]:
    """(dtype, shape) of every DequantizeLinear output of ``proto``, from an onnxruntime run on ``feed``."""
    import onnxruntime as ort

    from workbench.core.inspection.quant_reader import dtype_name

    dqs = [n.output[0] for n in proto.graph.node if n.op_type == "DequantizeLinear"]
    run = api.add_outputs(proto, dqs)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # the Q/DQ nodes as written
    values = ort.InferenceSession(run.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(dqs, feed)
    return {t: (dtype_name(helper.np_dtype_to_tensor_dtype(v.dtype)), v.shape) for t, v in zip(dqs, values, strict=True)}


def _matches(fact, want) -> bool:
    dtype, shape = want
    return fact.dtype == dtype and fact.shape is not None and len(fact.shape) == len(shape) and all(
        d == s or isinstance(d, str) for d, s in zip(fact.shape, shape, strict=True))


def test_dequantize_outputs_of_an_export_without_value_info(tmp_path, monkeypatch):
    """Our QDQ export declares no value_info: the Inspector of the Exported tab (which reads the file as it
    is) showed "? ?" for the output of every DequantizeLinear, i.e. for each input of each Conv / Gemm. They
    are inferred now (onnx shape inference; where it fails, a DequantizeLinear writes its scale's type in
    its input's shape), and equal what onnxruntime computes."""

    import onnx


    out = tmp_path / "q.onnx"
    api.export(api.quantize(api.open_model(EXAMPLE / "digits_cnn.onnx"), api.make_recipe("cpu-u8s8"),
                            data=str(EXAMPLE / "digits_cnn_calib.npz"), samples=8), out)
    proto = onnx.load(str(out))
    assert len(proto.graph.value_info) == 0
    x = np.load(EXAMPLE / "digits_cnn_calib.npz")
    feed = {proto.graph.input[0].name: x[x.files[0]][:3]}
    ran = _dq_outputs_as_run(proto, feed)
    assert len(ran) == 15  # 7 activations, 4 weights, 4 biases
    index = api.NodeFactsIndex(proto)
    dq_names = [n.name for n in proto.graph.node if n.op_type == "DequantizeLinear"]
    for name in dq_names:
        (y,) = index.facts(name).outputs
        assert _matches(y, ran[y.name]) and "?" not in y.dtype_text + y.shape_text, (name, y, ran[y.name])
    conv = index.facts("/f/f.3/Conv")  # what the Node section shows of a Conv: X, W, B typed
    assert [t.dtype_text for t in conv.inputs] == ["float32"] * 3
    assert all("?" not in t.shape_text for t in conv.inputs)

    # shape inference failing (a model past 2 GB, an op it rejects): the Q/DQ rule alone types the weights'
    # and the graph input's DequantizeLinear outputs, whose inputs are known
    def refuse(*_a, **_k):
        raise onnx.shape_inference.InferenceError("refused")

    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", refuse)
    index = api.NodeFactsIndex(proto)
    known = {t.name for t in proto.graph.initializer} | {proto.graph.input[0].name}
    producer = {n.output[0]: n for n in proto.graph.node}
    typed = 0
    for name in dq_names:
        (y,) = index.facts(name).outputs
        src = producer[y.name].input[0]
        if src in known or producer.get(src) is not None and producer[src].input[0] in known:
            assert _matches(y, ran[y.name]), (name, y, ran[y.name])
            typed += 1
        else:  # the scale's type, the input's shape unknown
            assert (y.dtype, y.shape) == ("float", None)
    assert typed == 9  # 4 weights, 4 biases, the graph input's pair


def test_the_inspectors_shape_inference_leaves_large_weights_out(monkeypatch):
    """Shape inference ran on the whole model on the GUI thread (a copy and a serialisation of every weight):
    it gets a model whose initializers over 1024 elements are typed inputs instead; the types come out the same."""
    import onnx

    w = numpy_helper.from_array(np.ones((64, 64), np.float32), "w")
    shape = numpy_helper.from_array(np.array([1, 4096], np.int64), "shape")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
                           helper.make_node("Reshape", ["y", "shape"], ["z"], name="r")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)], [w, shape])
    proto = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    seen = []
    real = onnx.shape_inference.infer_shapes

    def spy(model, *a, **k):
        seen.append(sorted((t.name, len(t.raw_data)) for t in model.graph.initializer))
        return real(model, *a, **k)

    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", spy)
    index = api.NodeFactsIndex(proto)
    assert seen == [[("shape", 16)]]  # the 16 KiB weight left out, the Reshape's shape kept
    (y,) = index.facts("mm").outputs
    assert (y.dtype_text, y.shape_text) == ("float32", "[64, 64]")


def _qoperator_contrib_chain():
    """x -> QuantizeLinear (uint8) -> com.microsoft QLinearSigmoid, QLinearMul, QLinearConcat -> Split (of the
    uint8 data) -> DequantizeLinear, and an int4 MatMulNBits on a float input: onnxruntime's QOperator and
    weight-only kernels, whose outputs onnx shape inference cannot type."""
    ms = "com.microsoft"
    inits = [numpy_helper.from_array(np.float32(s), n) for s, n in ((0.02, "xs"), (1 / 255, "ss"), (0.01, "ms"), (0.03, "cs"))]
    inits += [numpy_helper.from_array(np.uint8(z), n) for z, n in ((128, "xz"), (0, "sz"), (100, "mz"), (90, "cz"))]
    packed = np.random.default_rng(0).integers(0, 256, (3, 1, 8), dtype=np.uint8)  # N 3, K 16, block 16
    inits += [numpy_helper.from_array(packed, "wq"), numpy_helper.from_array(np.full((3, 1), 0.1, np.float32), "wscale")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["q"], name="quant"),
             helper.make_node("QLinearSigmoid", ["q", "xs", "xz", "ss", "sz"], ["s"], name="sig", domain=ms),
             helper.make_node("QLinearMul", ["q", "xs", "xz", "s", "ss", "sz", "ms", "mz"], ["m"], name="mul", domain=ms),
             helper.make_node("QLinearConcat", ["cs", "cz", "m", "ms", "mz", "s", "ss", "sz"], ["c"], name="cat",
                              domain=ms, axis=1),
             helper.make_node("Split", ["c"], ["c0", "c1"], name="split", axis=1, num_outputs=2),
             helper.make_node("DequantizeLinear", ["c0", "cs", "cz"], ["y"], name="dq"),
             helper.make_node("MatMulNBits", ["y", "wq", "wscale"], ["z"], name="nbits", domain=ms, K=16, N=3, bits=4,
                              block_size=16)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("c1", TensorProto.UINT8, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid(ms, 1)])


def test_outputs_of_contrib_quantized_kernels_have_the_dtype_onnxruntime_gives_them():
    """The Inspector showed "? ?" for the output of every com.microsoft QLinear op of a QOperator model
    (onnxruntime quantize_static: QLinearSigmoid / QLinearMul / QLinearConcat on nudenet_320n), for what
    reads them (a Split of uint8 data) and for MatMulNBits' output: onnx shape inference does not know
    these ops. Their dtype is now the one the canvas colours them with, equal to what onnxruntime returns."""
    import onnxruntime as ort

    from workbench.core.inspection.quant_reader import dtype_name

    proto = _qoperator_contrib_chain()
    index = api.NodeFactsIndex(proto)
    outputs = [o for n in proto.graph.node for o in n.output]
    run = api.add_outputs(proto, outputs)
    x = np.random.default_rng(1).standard_normal((2, 16)).astype(np.float32)
    values = ort.InferenceSession(run.SerializeToString(), providers=["CPUExecutionProvider"]).run(outputs, {"x": x})
    ran = {t: dtype_name(helper.np_dtype_to_tensor_dtype(v.dtype)) for t, v in zip(outputs, values, strict=True)}
    assert ran == {"q": "uint8", "s": "uint8", "m": "uint8", "c": "uint8", "c0": "uint8", "c1": "uint8",
                   "y": "float", "z": "float"}
    shown = {t.name: t.dtype for n in proto.graph.node for t in index.facts(n.name).outputs}
    assert shown == ran
    assert [t.dtype_text for t in index.facts("cat").inputs] == ["float32", "uint8"] + ["uint8", "float32", "uint8"] * 2


def test_outputs_of_contrib_quantized_kernels_have_the_shape_onnxruntime_gives_them():
    """Their shapes were unknown ('uint8 ?' for QLinearMul's output and the Split after it, on QOperator
    nudenet_320n); onnx shape inference now runs with each contrib op stood in for by an ONNX op of the same
    output type and shape (graph.contrib_stand_ins: Identity, Add, Concat, MatMul), and every output's shape equals onnxruntime's."""
    import onnxruntime as ort

    proto = _qoperator_contrib_chain()
    outputs = [o for n in proto.graph.node for o in n.output]
    run = api.add_outputs(proto, outputs)
    x = np.random.default_rng(1).standard_normal((2, 16)).astype(np.float32)
    values = ort.InferenceSession(run.SerializeToString(), providers=["CPUExecutionProvider"]).run(outputs, {"x": x})
    ran = {t: v.shape for t, v in zip(outputs, values, strict=True)}
    assert ran["c"] == (2, 32) and ran["z"] == (2, 3)
    index = api.NodeFactsIndex(proto)
    shown = {t.name: t.shape for n in proto.graph.node for t in index.facts(n.name).outputs}
    assert shown == ran
    assert [n.op_type for n in proto.graph.node][1:4] == ["QLinearSigmoid", "QLinearMul", "QLinearConcat"]  # unchanged


def test_opening_a_model_gives_contrib_kernel_outputs_the_shapes_onnxruntime_gives_them(tmp_path):
    """The opened model (what the canvas writes under each node) had no shape for the outputs of the contrib
    QLinear ops and MatMulNBits, nor for what follows them: QOperator nudenet_320n had a shape for 111 of
    its 373 node outputs. Preparation's shape inference now stands them in (graph.contrib_stand_ins) and
    keeps only the model's own tensors' value_info."""
    import onnx
    import onnxruntime as ort

    proto = _qoperator_contrib_chain()
    for out in proto.graph.output:  # a rank, no sizes: onnx.checker refuses a graph output without a shape
        out.type.tensor_type.shape.dim.add()
        out.type.tensor_type.shape.dim.add()
    path = tmp_path / "chain.onnx"
    onnx.save(proto, str(path))
    outputs = [o for n in proto.graph.node for o in n.output]
    run = api.add_outputs(proto, outputs)
    x = np.random.default_rng(1).standard_normal((2, 16)).astype(np.float32)
    values = ort.InferenceSession(run.SerializeToString(), providers=["CPUExecutionProvider"]).run(outputs, {"x": x})
    prepared = api.open_model(path).proto
    declared = {vi.name: vi.type.tensor_type for vi in list(prepared.graph.value_info) + list(prepared.graph.output)}
    shown = {t: tuple(d.dim_value for d in declared[t].shape.dim) for t in outputs}
    assert shown == {t: v.shape for t, v in zip(outputs, values, strict=True)}
    assert set(vi.name for vi in prepared.graph.value_info) <= set(outputs)  # no stand-in's own tensor
    assert [n.op_type for n in prepared.graph.node] == [n.op_type for n in proto.graph.node]


def test_inputs_of_contrib_quantized_kernels_are_named_as_onnxruntime_declares_them():
    """The Node section named every input and output of a com.microsoft op 'input 0', 'input 1' ... (onnx has no
    schema for them): a QLinearMul's eight inputs could not be told apart without reading tensor names, where
    Netron shows A, A_scale, A_zero_point ... They now take the names onnxruntime registers for the op
    (docs/ContribOperators.md), a variadic input numbered as for ONNX ops; a custom op keeps 'input i'."""
    index = api.NodeFactsIndex(_qoperator_contrib_chain())

    def slots(node):
        facts = index.facts(node)
        return [(t.slot, t.name) for t in facts.inputs], [(t.slot, t.name) for t in facts.outputs]

    assert slots("sig") == ([("X", "q"), ("X_scale", "xs"), ("X_zero_point", "xz"), ("Y_scale", "ss"),
                             ("Y_zero_point", "sz")], [("Y", "s")])
    assert slots("mul") == ([("A", "q"), ("A_scale", "xs"), ("A_zero_point", "xz"), ("B", "s"), ("B_scale", "ss"),
                             ("B_zero_point", "sz"), ("C_scale", "ms"), ("C_zero_point", "mz")], [("C", "m")])
    assert slots("cat") == ([("Y_scale", "cs"), ("Y_zero_point", "cz")]
                            + [(f"inputs[{i}]", t) for i, t in enumerate(["m", "ms", "mz", "s", "ss", "sz"])],
                            [("Y", "c")])
    assert slots("nbits") == ([("A", "y"), ("B", "wq"), ("scales", "wscale")], [("Y", "z")])
    assert slots("quant") == ([("x", "x"), ("y_scale", "xs"), ("y_zero_point", "xz")], [("y", "q")])  # ONNX, as before


def test_a_custom_domain_op_keeps_numbered_slots():
    nodes = [helper.make_node("QLinearMul", ["a"], ["y"], name="mine", domain="com.example")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("a", TensorProto.UINT8, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, [2])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    facts = api.node_facts(proto, "mine")
    assert ([t.slot for t in facts.inputs], [t.slot for t in facts.outputs]) == (["input 0"], ["output 0"])
