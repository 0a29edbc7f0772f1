"""``inspect`` of a quantized model summarizes its quantization parameters on one screen (counts by role,
dtype, granularity, symmetric or not, scale ranges, and the entries worth a look); ``--params`` lists every
tensor, and no line names the node twice. onnxruntime's QDQ ppocrv4_rec printed 200 lines ending
"... 380 more (use --json)", each "x_QuantizeLinear: activation x_QuantizeLinear_Output: ..."."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from workbench.cli import main
from workbench.core.inspection.report_text import param_lines


def _p(tensor, role, dtype, scale, zero_point=None, granularity="per_tensor", axis=None, block_size=None, node=""):
    """A QuantTensor.to_json dict."""
    d = {"tensor": tensor, "node": node or f"{tensor}_dq", "op_type": "DequantizeLinear", "role": role, "kind": "QDQ",
         "dtype": dtype, "granularity": granularity, "axis": axis, "block_size": block_size, "scale_name": "",
         "zero_point_name": "", "note": ""}
    for key, v in (("scale", scale), ("zero_point", zero_point)):
        if v is None:
            d[key] = None
            continue
        a = np.asarray(v, np.float64)
        d[key], d[f"{key}_shape"] = a.tolist(), list(a.shape)
        d[f"{key}_min"], d[f"{key}_max"] = float(a.min()), float(a.max())
    return d


PARAMS = [
    _p("x_q", "activation", "uint8", 0.02, 128),
    _p("r_q", "activation", "uint8", 0.01, 0),  # a Relu output: zero_point at the edge
    _p("m_q", "activation", "uint8", 50.0, 3),  # 255 * 50 > 1e4: huge
    _p("w1_q", "weight", "int8", 0.5, 0),
    _p("w2_q", "weight", "int8", [0.1, 1e-8], [0, 0], "per_channel", 0),  # a dead channel: tiny
    _p("w3_q", "weight", "int4", [[0.5, float("nan")]], None, "per_block", 1, 32),
    _p("b_q", "bias", "int32", [1e-9, 2e-9], [0, 0], "per_channel", 0),  # derived: never tiny
] + [_p(f"a{i}_q", "activation", "uint8", 0.03, 7) for i in range(10)]


def test_summary_counts_ranges_and_entries_worth_a_look():
    assert param_lines(PARAMS, "QDQ: 2 Conv uint8/int8, 1 MatMul uint8/int4") == [
        "quantization parameters: 17 quantized tensors (--params lists each)",
        "  activation    13  uint8 per-tensor, 1 symmetric, 12 asymmetric; scale 0.01..50",
        "  weight         1  int4 per-block axis 1 block_size 32, symmetric; scale nan..nan",
        "  weight         1  int8 per-channel axis 0, symmetric; scale 1e-08..0.1",
        "  weight         1  int8 per-tensor, symmetric; scale 0.5",
        "  bias           1  int32 per-channel axis 0, symmetric; scale 1e-09..2e-09",
        "worth a look:",
        "  scale zero or not finite (1 weight): the tensor dequantizes to nan, inf or 0:",
        "    weight w3_q (w3_q_dq): scale nan..nan",
        "  tiny scale (1 weight): the values span under 0.0001 (an epsilon, a zero bias, a dead channel):",
        "    weight w2_q (w2_q_dq): scale 1e-08..0.1",
        "  huge scale (1 activation): the values span over 10000, so small values round to zero_point "
        "(an outlier or a -inf mask widened the range):",
        "    activation m_q (m_q_dq): scale 50",
        "  zero_point at the dtype's edge (1 activation): one-sided ranges, so values of the other sign clip to 0 "
        "(usual after a Relu; --params lists them)",
    ]


def test_per_tensor_weights_of_conv_models_are_named_and_a_short_list_is_listed():
    params = [_p("x_QuantizeLinear_Output", "activation", "int8", 0.5, 0, node="x_QuantizeLinear"),
              _p("w", "weight", "int8", 0.25, 0, node="dq4")]
    assert param_lines(params, "QDQ: 1 Conv int8/int8") == [
        "quantization parameters: 2 quantized tensors",
        "  activation     1  int8 per-tensor, symmetric; scale 0.5",
        "  weight         1  int8 per-tensor, symmetric; scale 0.25",
        "worth a look:",
        "  every weight is per-tensor (1 weight), though the model's 1 Conv usually takes per-channel weights:",
        "    a scale per output channel keeps small channels' precision; quantize the float model with per_channel "
        "weights (Workbench's presets do)",
        "each:",
        "  activation x_QuantizeLinear_Output: int8 per_tensor; scale 0.5; zero_point 0",
        "  dq4: weight w: int8 per_tensor; scale 0.25; zero_point 0",
    ]
    # per-channel Conv weights: nothing to say; a float Conv is not counted
    assert param_lines(params[:1], "QDQ: 1 Conv float") == params_lines_plain(params[:1])


def params_lines_plain(params):
    return ["quantization parameters: 1 quantized tensors", "  activation     1  int8 per-tensor, symmetric; scale 0.5",
            "the tensor:", "  activation x_QuantizeLinear_Output: int8 per_tensor; scale 0.5; zero_point 0"]


def _rec_qdq(corpus, folder_out):
    """onnxruntime's quantize_static QDQ of ppocrv4_rec, calibrated on 4 rows of its calib.npz."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    folder = corpus / "ppocrv4_rec"
    x = np.load(folder / "calib.npz")["x"][:4]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.rows = iter([{"x": x[i:i + 1]} for i in range(len(x))])

        def get_next(self):
            return next(self.rows, None)

    out = folder_out / "rec_qdq.onnx"
    quantize_static(str(folder / "model.onnx"), str(out), Reader(), quant_format=QuantFormat.QDQ)
    return out


def _matmuls_by_weight(path):
    """(MatMuls whose second input is a constant behind its QuantizeLinear / DequantizeLinear, the others)."""
    proto = onnx.load(str(path))
    consts = {t.name for t in proto.graph.initializer} | {n.output[0] for n in proto.graph.node
                                                         if n.op_type == "Constant"}
    producer = {o: n for n in proto.graph.node for o in n.output}

    def constant(t):
        while t not in consts and t in producer and producer[t].op_type in ("QuantizeLinear", "DequantizeLinear"):
            t = producer[t].input[0]
        return t in consts

    weighted = [constant(n.input[1]) for n in proto.graph.node if n.op_type == "MatMul"]
    return sum(weighted), len(weighted) - sum(weighted)


def _expected_rows(path):
    """The summary rows computed from the file's QuantizeLinear nodes (weight: a constant input)."""
    proto = onnx.load(str(path))
    consts = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    consts.update({n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in proto.graph.node
                   if n.op_type == "Constant"})
    rows = {}
    for n in proto.graph.node:
        if n.op_type != "QuantizeLinear":
            continue
        role = "weight" if n.input[0] in consts else "activation"
        scale, zp = float(consts[n.input[1]]), int(consts[n.input[2]])
        assert consts[n.input[2]].dtype == np.int8
        rows.setdefault(role, []).append((scale, zp))
    lines = []
    for role in ("activation", "weight"):
        sc = [s for s, _ in rows[role]]
        sym = sum(z == 0 for _, z in rows[role])
        lines.append(f"  {role:<11}{len(sc):>5}  int8 per-tensor, {sym} symmetric, {len(sc) - sym} asymmetric; "
                     f"scale {min(sc):.3g}..{max(sc):.3g}")
    return lines, rows


@pytest.mark.slow
def test_ort_qdq_ppocrv4_rec_fits_on_a_screen_and_params_lists_each(corpus, tmp_path, capsys):
    rec_qdq = _rec_qdq(corpus, tmp_path)
    assert main(["inspect", str(rec_qdq)]) == 0
    out = capsys.readouterr().out.splitlines()
    rows, by_role = _expected_rows(rec_qdq)
    at = out.index("quantization parameters: 580 quantized tensors (--params lists each)")
    assert out[at + 1:at + 3] == rows
    assert len(by_role["activation"]) == 354 and len(by_role["weight"]) == 226
    edge = sum(z == -128 for _, z in by_role["activation"])
    tiny = sum(s * 255 < 1e-4 for s, _ in by_role["weight"])
    assert f"  zero_point at the dtype's edge ({edge} activations): one-sided ranges, so values of the other sign " \
           "clip to 0 (usual after a Relu; --params lists them)" in out
    assert f"  tiny scale ({tiny} weights): the values span under 0.0001 (an epsilon, a zero bias, a dead channel):" \
        in out
    # 13 MatMul run quantized, 9 of them on a constant weight; the other 4 multiply two activations (attention)
    assert _matmuls_by_weight(rec_qdq) == (9, 4)
    assert "  every weight is per-tensor (226 weights), though the model's 38 Conv and 9 MatMul usually take " \
           "per-channel weights:" in out
    assert len(out) <= 40 and not any("more (use --json)" in line for line in out)
    assert not any("_QuantizeLinear: " in line for line in out)  # the node named once, inside the tensor's name
    assert main(["inspect", str(rec_qdq), "--params"]) == 0
    out = capsys.readouterr().out.splitlines()
    listed = out[out.index("each:") + 1:]
    listed = listed[:next(i for i, line in enumerate(listed) if line.startswith("note:"))]
    assert len(listed) == 580
    assert listed[0] == "  activation x_QuantizeLinear_Output: int8 per_tensor; scale 0.00784314; zero_point 0"
    assert main(["inspect", str(rec_qdq), "--json"]) == 0
    params = json.loads(capsys.readouterr().out)["quantization_parameters"]
    assert len(params) == 580 and params[0]["node"] == "x_QuantizeLinear" and "consumers" not in params[0]


def _projection_and_scores(path):
    """x -> MatMul by a constant w (a projection) -> h; h x Transpose(h) (attention scores: two activations)."""
    from onnx import TensorProto, helper

    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="proj"),
             helper.make_node("Transpose", ["h"], ["ht"], name="t", perm=[0, 2, 1]),
             helper.make_node("MatMul", ["h", "ht"], ["y"], name="scores")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4])], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def test_per_tensor_weights_line_names_the_ops_with_a_constant_weight_once(tmp_path, capsys):
    """onnxruntime's QDQ minilm_l6_v2 (per_channel off) read 'though the model's 36 MatMul and 12 MatMul usually
    take per-channel weights': one entry per row of the summary, and its 12 attention MatMuls multiply two
    activations, no weight. The line now counts the compute nodes whose weight is a constant, once per op."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(1)
            self.rows = iter([{"x": rng.standard_normal((1, 4, 8)).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.rows, None)

    _projection_and_scores(tmp_path / "f.onnx")
    quantize_static(str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"), Reader(), quant_format=QuantFormat.QDQ,
                    per_channel=False, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    assert _matmuls_by_weight(tmp_path / "q.onnx") == (1, 1)
    assert main(["inspect", str(tmp_path / "q.onnx")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "summary:     QDQ: 1 MatMul uint8/int8, 1 MatMul uint8/uint8" in out
    assert "  every weight is per-tensor (1 weight), though the model's 1 MatMul usually takes per-channel weights:" \
        in out
    assert main(["inspect", str(tmp_path / "q.onnx"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["quantized"]["constant_weight_ops"] == {"MatMul": 1}


@pytest.mark.parametrize("summary, line", [
    ("QDQ: 1 Conv int8/int8", "the model's 1 Conv usually takes per-channel weights:"),  # was "1 Conv usually take"
    ("QDQ: 2 Conv int8/int8", "the model's 2 Conv usually take per-channel weights:"),
    ("QDQ: 1 Conv int8/int8, 1 MatMul int8/int8", "the model's 1 Conv and 1 MatMul usually take per-channel weights:"),
])
def test_per_tensor_weights_line_agrees_with_its_count(summary, line):
    notes = param_lines([_p("w", "weight", "int8", 0.25, 0)], summary)
    assert f"  every weight is per-tensor (1 weight), though {line}" in notes


def test_per_tensor_weights_line_from_the_summary_alone_sums_each_op():
    """Without the report's constant_weight_ops (param_lines called with the summary line only), two rows of
    one op are one entry: 36 + 12 MatMul, not '36 MatMul and 12 MatMul'."""
    params = [_p("w", "weight", "int8", 0.25, 0)]
    notes = param_lines(params, "QDQ: 36 MatMul uint8/int8, 2 Conv uint8/int8, 12 MatMul uint8/uint8")
    assert "  every weight is per-tensor (1 weight), though the model's 48 MatMul and 2 Conv usually take " \
           "per-channel weights:" in notes


def test_symmetric_matmulnbits_weights_read_symmetric_and_their_signed_scales_are_not_flagged(tmp_path, capsys):
    """onnxruntime's MatMulNBitsQuantizer with is_symmetric=True writes no zero_points (8 for 4 bits, the middle
    of uint4) and signed scales (a block's largest-magnitude weight over -8: about half are negative). inspect of
    minilm_l6_v2 so quantized read 'uint4 per-block ..., asymmetric' and 'scale not a positive finite number
    (36 weights): the tensor dequantizes to nan, inf or 0' for every weight; a negative scale dequantizes
    (q - 8) * scale as well as a positive one."""
    from onnx import TensorProto, helper
    from onnxruntime.quantization.matmul_nbits_quantizer import (
        DefaultWeightOnlyQuantConfig,
        MatMulNBitsQuantizer,
    )

    w = numpy_helper.from_array(np.random.default_rng(3).standard_normal((64, 16)).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 16])], [w])
    quantizer = MatMulNBitsQuantizer(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
                                     algo_config=DefaultWeightOnlyQuantConfig(block_size=32, is_symmetric=True))
    quantizer.process()
    path = tmp_path / "q4.onnx"
    quantizer.model.save_model_to_file(str(path), False)
    proto = onnx.load(str(path))
    (node,) = proto.graph.node
    assert node.op_type == "MatMulNBits" and len(node.input) == 3  # A, B, scales: no zero_points
    scales = numpy_helper.to_array(next(t for t in proto.graph.initializer if t.name == node.input[2]))
    assert scales.shape == (16, 2) and (scales < 0).any() and (scales > 0).any()
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert f"  weight         1  uint4 per-block axis 1 block_size 32, symmetric; " \
           f"scale {scales.min():.3g}..{scales.max():.3g}" in out
    assert "worth a look:" not in out
    assert main(["inspect", str(path), "--json"]) == 0
    (p,) = json.loads(capsys.readouterr().out)["quantization_parameters"]
    assert (p["scale_min"], p["scale_max"]) == (float(scales.min()), float(scales.max()))
    assert (p["scale_abs_min"], p["scale_abs_max"]) == (float(np.abs(scales).min()), float(np.abs(scales).max()))


def test_a_zero_scale_is_still_flagged_and_a_negative_one_is_not():
    params = [_p("w0", "weight", "int8", [0.5, 0.0], [0, 0], "per_channel", 0),
              _p("w1", "weight", "int8", [0.5, -0.25], [0, 0], "per_channel", 0)]
    params[1].update(scale_abs_min=0.25, scale_abs_max=0.5)
    params[0].update(scale_abs_min=0.0, scale_abs_max=0.5)
    lines = param_lines(params, "QDQ: 2 Conv float")
    assert lines[lines.index("worth a look:") + 1:lines.index("worth a look:") + 3] == [
        "  scale zero or not finite (1 weight): the tensor dequantizes to nan, inf or 0:", "    weight w0 (w0_dq): scale 0..0.5"]
    assert not any("w1" in line for line in lines[:lines.index("each:")])
