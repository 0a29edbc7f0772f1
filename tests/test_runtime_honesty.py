"""Every figure from onnxruntime says what it was measured with; ``evaluate`` and ``analyze``'s end-to-end
figure agree for the same model and data; the int4 export records MatMulNBits' accuracy level."""

from __future__ import annotations

import re

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from qdq_helpers import attention_model, optimized_op_counts

from workbench.cli import main
from workbench.core import api
from workbench.core.analysis.evaluate import evaluate
from workbench.core.issues import IssueCode
from workbench.core.model.load import prepare_proto
from workbench.core.planning.kernels import ACCURACY_OPTION, ORT_ACCURACY_LEVEL
from workbench.core.writers.common import ACCURACY_KEY


def _cli(argv, capsys) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().out


def test_evaluate_and_analyze_report_the_same_runtime_and_agree(tmp_path, capsys):
    onnx.save(attention_model(float(np.finfo(np.float32).min)), str(tmp_path / "m.onnx"))
    np.savez(tmp_path / "d.npz", X=np.random.default_rng(5).standard_normal((12, 8, 16)).astype(np.float32))
    m, d, q = tmp_path / "m.onnx", tmp_path / "d.npz", tmp_path / "q.onnx"
    # both without the latency check: its probes depend on the machine, and the two must write one model
    assert _cli(["quantize", m, "--data", d, "-o", q, "--no-latency-check"], capsys)[0] == 0
    code, ev = _cli(["evaluate", m, q, "--data", d], capsys)
    assert code == 0
    code, an = _cli(["analyze", m, "--data", d, "--no-latency-check"], capsys)
    assert code == 0
    ev_rt = re.search(r"measured with (.*)$", ev.splitlines()[0]).group(1)
    an_rt = re.search(r"end to end .*measured with (.*)$", an, re.M).group(1)
    assert ev_rt == an_rt and "CPUExecutionProvider" in ev_rt and "ORT_ENABLE_ALL" in ev_rt
    assert re.search(r"per node unit .*measured with .*ORT_DISABLE_ALL", an)
    ev_db = float(re.search(r"^Y\s+(\S+)", ev, re.M).group(1))
    an_db = float(re.search(r"output Y: SQNR (\S+) dB", an).group(1))
    assert abs(ev_db - an_db) < 0.01 and 10 < ev_db < 60
    # the same figure straight from the API, and the report names the level it ran at
    rep = evaluate(str(m), str(q), str(d))
    assert abs(rep.output("Y").sqnr_db - ev_db) < 0.01 and rep.to_json()["runtime"] == ev_rt


def _mlp(k: int = 256) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((k, k)) / np.sqrt(k)).astype(np.float32), f"W{i}")
             for i in range(3)]
    nodes = [helper.make_node("MatMul", ["X", "W0"], ["a"], name="mm0"),
             helper.make_node("MatMul", ["a", "W1"], ["b"], name="mm1"),
             helper.make_node("MatMul", ["b", "W2"], ["Y"], name="mm2")]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", k])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", k])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_int4_export_records_the_matmulnbits_accuracy_level_onnxruntime_uses():
    res = api.quantize(prepare_proto(_mlp()), api.make_recipe("w4-block"))
    meta = {p.key: p.value for p in res.proto.metadata_props}
    assert meta[ACCURACY_KEY].startswith(f"{ORT_ACCURACY_LEVEL} ") and ACCURACY_OPTION in meta[ACCURACY_KEY]
    notes = [i for i in res.issues if i.code == IssueCode.MATMULNBITS_ACCURACY]
    assert len(notes) == 1 and "3 int4 DequantizeLinear + MatMul" in notes[0].message
    assert optimized_op_counts(res.proto)["MatMulNBits"] == 3
    x = np.random.default_rng(1).standard_normal((64, 256)).astype(np.float32)

    def out(level, accuracy=None):
        so = ort.SessionOptions()
        so.graph_optimization_level = level
        if accuracy is not None:
            so.add_session_config_entry(ACCURACY_OPTION, str(accuracy))
        sess = ort.InferenceSession(res.proto.SerializeToString(), so, providers=["CPUExecutionProvider"])
        return sess.run(None, {"X": x})[0]

    written = out(ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    rel = [float(np.linalg.norm(out(ort.GraphOptimizationLevel.ORT_ENABLE_ALL, a) - written) / np.linalg.norm(written))
           for a in (None, ORT_ACCURACY_LEVEL, 1)]
    # what the note says: the default is level 4 (int8 activations inside the kernel), level 1 is float32
    assert rel[0] == rel[1] and 1e-4 < rel[0] < 0.02 and rel[2] < 1e-5


def test_a16w8_matmuls_fused_into_matmulnbits_are_noted_and_run_at_int8(tmp_path):
    """a16w8 on three chained MatMuls: onnxruntime fuses each int8 weight's DequantizeLinear and the
    MatMul into MatMulNBits, whose default accuracy level quantizes the 16-bit activations to int8 per
    block. The export says so (one note, the metadata stamp); the error against the graph as written
    is what the note claims: level 1 matches it, the default does not, and is worse against float."""
    model = prepare_proto(_mlp())
    x = np.random.default_rng(1).standard_normal((64, 256)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", X=x[:32])
    data = str(tmp_path / "calib.npz")
    res = api.quantize(model, api.make_recipe("a16w8"), data=data)
    meta = {p.key: p.value for p in res.proto.metadata_props}
    assert meta[ACCURACY_KEY].startswith(f"{ORT_ACCURACY_LEVEL} ")
    notes = [i for i in res.issues if i.code == IssueCode.MATMULNBITS_ACCURACY]
    assert len(notes) == 1 and "3 MatMul units with integer weights beside 16-bit activations" in notes[0].message
    assert optimized_op_counts(res.proto)["MatMulNBits"] == 3

    def out(proto, level, accuracy=None):
        so = ort.SessionOptions()
        so.graph_optimization_level = level
        if accuracy is not None:
            so.add_session_config_entry(ACCURACY_OPTION, str(accuracy))
        return ort.InferenceSession(proto.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(
            None, {"X": x})[0]

    ref = out(model.proto, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    written = out(res.proto, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    default = out(res.proto, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)
    level1 = out(res.proto, ort.GraphOptimizationLevel.ORT_ENABLE_ALL, 1)

    def sqnr(a):
        return 10 * np.log10(float((ref ** 2).sum()) / float(((ref - a) ** 2).sum()))
    assert np.linalg.norm(level1 - written) / np.linalg.norm(written) < 1e-5
    # int8 activations inside the kernel cost what the note claims: 37.2 -> 35.7 dB here
    assert sqnr(written) - sqnr(default) > 1.0
    # an 8-bit recipe takes the integer kernels instead: no MatMulNBits, no note
    plain = api.quantize(model, api.make_recipe("cpu-u8s8"), data=data)
    assert not [i for i in plain.issues if i.code == IssueCode.MATMULNBITS_ACCURACY]
    assert optimized_op_counts(plain.proto)["MatMulNBits"] == 0


def test_matmul_of_int16_and_uint8_activations_is_not_claimed_as_matmulnbits(tmp_path):
    """A MatMul of two activations whose first input is on a 16-bit grid and second on an 8-bit one (a
    promoted producer beside an 8-bit one, as autotune's int16 steps leave digits_transformer's attention):
    MatMulNBits takes a constant weight only, so onnxruntime runs it as DequantizeLinear + float MatMul. The
    export noted '1 MatMul units with integer weights beside 8-bit activations: those onnxruntime fuses into
    MatMulNBits' and stamped the accuracy level into the model; it fuses none."""
    c1 = numpy_helper.from_array(np.array(2.0, np.float32), "c1")
    c2 = numpy_helper.from_array(np.array(3.0, np.float32), "c2")
    nodes = [helper.make_node("Mul", ["X", "c1"], ["a"], name="mul_a"),
             helper.make_node("Mul", ["X", "c2"], ["b"], name="mul_b"),
             helper.make_node("MatMul", ["a", "b"], ["y"], name="mm"),
             helper.make_node("Relu", ["y"], ["Y"], name="relu")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["N", 16, 16])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["N", 16, 16])], [c1, c2])
    model = prepare_proto(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
    np.savez(tmp_path / "c.npz", X=np.random.default_rng(0).standard_normal((8, 16, 16)).astype(np.float32))
    recipe = api.make_recipe("cpu-u8s8", overrides={"mul_a": {"activation": {"dtype": "int16"}}})
    res = api.quantize(model, recipe, data=str(tmp_path / "c.npz"))
    mm = next(n for n in res.proto.graph.node if n.op_type == "MatMul")
    inits = {i.name: i.data_type for i in res.proto.graph.initializer}
    read = [inits[n.input[2]] for n in res.proto.graph.node
            if n.op_type == "DequantizeLinear" and n.output[0] in mm.input]  # zero points' dtypes
    assert sorted(read) == sorted([TensorProto.INT16, TensorProto.UINT8])  # the case: 16-bit beside 8-bit
    assert optimized_op_counts(res.proto)["MatMulNBits"] == 0
    assert not [i for i in res.issues if i.code == IssueCode.MATMULNBITS_ACCURACY]
    assert ACCURACY_KEY not in {p.key for p in res.proto.metadata_props}


def test_weight_only_gemm_before_a_relu_is_not_claimed_as_matmulnbits(corpus):
    """digits_mlp w4-block: two of its three Gemms are followed by a Relu; written as MatMul + bias Add,
    onnxruntime fuses those into a float FusedGemm first. The export claimed 3 MatMulNBits units; it runs 1."""
    res = api.quantize(api.open_model(corpus / "digits_mlp" / "model_opset17.onnx"), api.make_recipe("w4-block"))
    ran = optimized_op_counts(res.proto)
    notes = [i for i in res.issues if i.code == IssueCode.MATMULNBITS_ACCURACY]
    kept = [i for i in res.issues if i.code == IssueCode.NO_MATMULNBITS and "FusedGemm" in i.message]
    assert ran["MatMulNBits"] == 1 and ran["FusedGemm"] == 2
    assert len(notes) == 1 and notes[0].message.startswith("1 int4 DequantizeLinear + MatMul unit: ") and len(kept) == 2


def test_dynamic_units_inside_if_bodies_cost_float_kernels(corpus):
    """silero_vad_op18_ifless under dynamic-u8: units inside If bodies are written weight-only (float
    activations), so cost counts them 32 x 32 as run, not at the integer kernels' 8 x 8."""
    from workbench.core.analysis.cost import plan_kernel_bits

    model = api.open_model(corpus / "silero_vad" / "silero_vad_op18_ifless.onnx")
    plan = api.plan(model, api.make_recipe("dynamic-u8"))
    inside = [u.node for u in plan.units.values() if not u.excluded and u.graph]
    bits = plan_kernel_bits(plan, model.proto.graph)
    assert inside and all(bits[n] == (32, 32) for n in inside)
