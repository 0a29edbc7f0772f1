"""Reading quantization parameters back from quantized models: onnxruntime quantize_static QDQ and
QOperator output, ddddocr's dynamic (ConvInteger / MatMulInteger / DynamicQuantizeLSTM) model, our
MX QDQ export; the inspect report and ``workbench-cli inspect`` show them."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench.cli import main as cli_main
from workbench.core.formats.numerics import dequantize
from workbench.core.formats.qparams import QParams
from workbench.core.inspection.quant_reader import params_by_node, read_quant_params
from workbench.core.inspection.report import format_report, inspect_model
from workbench.core.model.load import load_model, prepare_proto


def _inits(proto: onnx.ModelProto) -> dict[str, np.ndarray]:
    return {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}


@pytest.fixture
def ddddocr(corpus):
    path = corpus / "ddddocr_common_old_int8" / "model.onnx"
    if not path.is_file():
        pytest.skip(f"corpus model not found at {path}")
    return path


@pytest.mark.slow
def test_ddddocr_dynamic_params_equal_the_initializers(ddddocr):
    proto = onnx.load(str(ddddocr))
    inits = _inits(proto)
    params = read_quant_params(proto)
    by_tensor = {p.tensor: p for p in params}
    integer_nodes = [n for n in proto.graph.node if n.op_type in ("ConvInteger", "MatMulInteger")]
    assert len(integer_nodes) == 22
    for n in integer_nodes:
        w = by_tensor[n.input[1]]
        # onnxruntime names the weight scale <weight>_scale; the reader finds it structurally (the
        # constant factor of the Mul that rescales the integer output)
        expected_scale = inits[n.input[1][: -len("_quantized")] + "_scale"]
        np.testing.assert_array_equal(w.scale, expected_scale)
        np.testing.assert_array_equal(w.zero_point, inits[n.input[3]])
        assert w.role == "weight" and w.kind == "dynamic" and w.dtype == "uint8" and w.node == n.name
        assert proto.graph.initializer[[i.name for i in proto.graph.initializer].index(n.input[1])].data_type \
            == TensorProto.UINT8
        x = by_tensor[n.input[0]]
        assert x.scale is None and "run time" in x.note and n.name in x.consumers
    lstm = next(n for n in proto.graph.node if n.op_type == "DynamicQuantizeLSTM")
    for t, s, z in ((1, 8, 9), (2, 10, 11)):
        p = by_tensor[lstm.input[t]]
        np.testing.assert_array_equal(p.scale, inits[lstm.input[s]])
        np.testing.assert_array_equal(p.zero_point, inits[lstm.input[z]])
        assert p.dtype == "int8" and p.axis == 0 and p.scale.shape == (2,)
    assert sum(p.role == "weight" for p in params) == 24
    conv0 = params_by_node(params)["Conv_0_quant"]
    assert {p.role for p in conv0} == {"activation", "weight"}  # input from DynamicQuantizeLinear, weight


@pytest.mark.slow
def test_cli_inspect_prints_ddddocr_params(ddddocr, capsys):
    """By default a summary (dynamic: activation scales at run time); --params lists each tensor."""
    assert cli_main(["inspect", str(ddddocr)]) == 0
    out = capsys.readouterr().out.splitlines()
    at = out.index("quantization parameters: 46 quantized tensors (--params lists each)")
    params = read_quant_params(onnx.load(str(ddddocr)))
    uint8 = [float(np.min(p.scale)) for p in params if p.role == "weight" and p.dtype == "uint8"]
    lstm = [p.scale for p in params if p.role == "weight" and p.dtype == "int8"]
    assert out[at + 1:at + 5] == [
        "  activation    22  uint8 per-tensor, asymmetric; scale computed at run time",
        f"  weight        22  uint8 per-tensor, asymmetric; scale {min(uint8):.3g}..{max(uint8):.3g}",
        f"  weight         2  int8 per-channel axis 0, symmetric; scale {min(map(np.min, lstm)):.3g}.."
        f"{max(map(np.max, lstm)):.3g}",
        "note:        Opset 12 kept: the model is already quantized."]
    assert cli_main(["inspect", str(ddddocr), "--params"]) == 0
    out = capsys.readouterr().out
    scale = float(_inits(onnx.load(str(ddddocr)))["391_scale"])
    assert f"\n  Conv_0_quant: weight 391_quantized: uint8 per_tensor; scale {scale:.6g}; zero_point 121\n" in out


class _Reader:
    def __init__(self, x: np.ndarray):
        self.items = iter([{"input": x[i: i + 10]} for i in range(0, len(x), 10)])

    def get_next(self):
        return next(self.items, None)


def _ort_quantize(corpus, tmp_path, fmt):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    class Reader(_Reader, CalibrationDataReader):
        pass

    folder = corpus / "digits_cnn"
    out = tmp_path / f"cnn_{fmt}.onnx"
    calib = np.load(folder / "calib.npz")["input"]
    quantize_static(str(folder / "model_opset17.onnx"), str(out), Reader(calib),
                    quant_format=getattr(QuantFormat, fmt), per_channel=True)
    return onnx.load(str(folder / "model_opset17.onnx")), out


def _check_weights_dequantize_to_float(params, q_inits, float_inits, weight_of):
    """Recovered (scale, zero_point, axis) applied to the stored integers give the float weight back
    within half a quantization step per channel."""
    checked = 0
    for p in params:
        if p.role != "weight" or p.tensor not in q_inits:
            continue
        w = float_inits[weight_of(p.tensor)]
        qp = QParams(p.scale.astype(np.float32), p.zero_point, str(p.dtype), p.axis, None)
        deq = dequantize(q_inits[p.tensor], qp)
        step = np.broadcast_to(p.scale.reshape([-1] + [1] * (w.ndim - 1)) if p.axis == 0 else p.scale, w.shape)
        assert np.all(np.abs(deq - w) <= step * 0.5 + 1e-7), p.tensor
        checked += 1
    return checked


@pytest.mark.slow
def test_ort_quantize_static_qdq_digits_cnn(corpus, tmp_path):
    float_proto, path = _ort_quantize(corpus, tmp_path, "QDQ")
    proto = onnx.load(str(path))
    inits = _inits(proto)
    params = read_quant_params(proto)
    dq = [n for n in proto.graph.node if n.op_type == "DequantizeLinear"]
    by_tensor = {p.tensor: p for p in params}
    for n in dq:  # every DQ: recovered params are its initializers and attribute
        p = by_tensor[n.input[0]]
        np.testing.assert_array_equal(p.scale, inits[n.input[1]])
        np.testing.assert_array_equal(p.zero_point, inits[n.input[2]])
        axis = next((a.i for a in n.attribute if a.name == "axis"), 1)
        assert p.axis == (axis if inits[n.input[1]].size > 1 else None)
    weights = [p for p in params if p.role == "weight"]
    assert len(weights) == 4 and all(p.dtype == "int8" and p.axis == 0 for p in weights)
    assert {p.role for p in params} == {"weight", "bias", "activation"}
    names = {i.name for i in float_proto.graph.initializer}
    n = _check_weights_dequantize_to_float(params, inits, _inits(float_proto),
                                           lambda t: next(k for k in names if t.startswith(k)))
    assert n == 4
    text = format_report(inspect_model(load_model(path)))
    assert "quantization parameters:" in text and "weight" in text


@pytest.mark.slow
def test_ort_quantize_static_qoperator_digits_cnn(corpus, tmp_path):
    float_proto, path = _ort_quantize(corpus, tmp_path, "QOperator")
    proto = onnx.load(str(path))
    inits = _inits(proto)
    params = read_quant_params(proto)
    qconv = [n for n in proto.graph.node if n.op_type == "QLinearConv"]
    assert len(qconv) == 3
    by_tensor = {p.tensor: p for p in params}
    for n in qconv:
        w = by_tensor[n.input[3]]
        np.testing.assert_array_equal(w.scale, inits[n.input[4]])
        np.testing.assert_array_equal(w.zero_point, inits[n.input[5]])
        assert w.axis == 0 and w.kind == "QOperator" and w.dtype == "int8"
        y = by_tensor[n.output[0]]
        np.testing.assert_array_equal(y.scale, inits[n.input[6]])
        assert y.role == "output" and y.axis is None
    names = {i.name for i in float_proto.graph.initializer}
    n = _check_weights_dequantize_to_float(params, inits, _inits(float_proto),
                                           lambda t: next(k for k in names if t.startswith(k)))
    assert n >= 3


def test_reads_blocked_mx_and_int4_dq():
    w4 = helper.make_tensor("w4", TensorProto.INT4, [2, 8], np.arange(-8, 8).tolist())
    s4 = numpy_helper.from_array(np.array([[0.5, 0.25], [1.0, 2.0]], np.float32), "s4")
    nodes = [helper.make_node("DequantizeLinear", ["w4", "s4"], ["y4"], axis=1, block_size=4, name="dq4")]
    g = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info("y4", TensorProto.FLOAT, [2, 8])], [w4, s4])
    proto = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    (p,) = read_quant_params(proto)
    assert (p.dtype, p.axis, p.block_size, p.role, p.granularity) == ("int4", 1, 4, "weight", "per_block")
    np.testing.assert_array_equal(p.scale, numpy_helper.to_array(s4))
    assert p.zero_point is None
    text = format_report(inspect_model(prepare_proto(proto)))
    assert "dq4: weight w4: int4 per_block, axis 1, block_size 4; scale [0.5, 0.25, 1, 2]" in text


def test_reads_qonnx_quant_nodes():
    d = "qonnx.custom_op.general"
    w = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.array([0.1, 0.2, 0.3], np.float32).reshape(3, 1), "s"),
             numpy_helper.from_array(np.zeros((3, 1), np.float32), "z"), numpy_helper.from_array(np.float32(3), "b"),
             numpy_helper.from_array(np.float32(0.05), "sa")]
    nodes = [helper.make_node("Quant", ["w", "s", "z", "b"], ["wq"], domain=d, signed=1, narrow=0, name="qw"),
             helper.make_node("BipolarQuant", ["x", "sa"], ["xq"], domain=d, name="qx"),
             helper.make_node("MatMul", ["xq", "wq"], ["y"], name="mm")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], inits)
    proto = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(d, 1)])
    by = {p.tensor: p for p in read_quant_params(proto)}
    assert (by["w"].dtype, by["w"].role, by["w"].kind, by["w"].axis) == ("int3", "weight", "QONNX", 0)
    np.testing.assert_array_equal(by["w"].scale, numpy_helper.to_array(inits[1]))
    np.testing.assert_array_equal(by["w"].zero_point, np.zeros((3, 1), np.float32))
    assert (by["x"].dtype, by["x"].role, float(by["x"].scale)) == ("bipolar", "activation", np.float32(0.05))


def _matmul_nbits_model(k: int, n: int, block: int, symmetric: bool) -> onnx.ModelProto:
    """onnxruntime's MatMulNBitsQuantizer (4 bits) of a one-MatMul model with an off-centre weight [k, n]."""
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    rng = np.random.default_rng(0)
    w = (rng.standard_normal((k, n)) * np.linspace(0.1, 2.0, n) + 0.3).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, n])], [numpy_helper.from_array(w, "w")])
    q = MatMulNBitsQuantizer(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), block_size=block,
                             is_symmetric=symmetric)
    q.process()
    return q.model.model


@pytest.mark.parametrize("symmetric", [False, True])
def test_matmul_nbits_scale_and_zero_point_dequantize_as_onnxruntime_runs_it(symmetric):
    """The zero points of an int4 MatMulNBits were shown as the packed bytes (two 4-bit values a byte:
    '(shape [384, 6], 57..186)' on minilm_l6_v2 for true zero points 3..12 in [384, 12]); they are one
    value per block now, and with the scale they dequantize the packed weight to what onnxruntime computes."""
    import onnxruntime as ort

    k, n, block = 48, 8, 16  # 3 blocks a row: the packed zero points hold a padding nibble per row
    proto = _matmul_nbits_model(k, n, block, symmetric)
    (node,) = proto.graph.node
    assert node.op_type == "MatMulNBits"
    (p,) = read_quant_params(proto)
    assert (p.dtype, p.block_size, p.role, p.kind, p.granularity) == ("uint4", block, "weight", "weight_only", "per_block")
    assert p.scale.shape == (n, 3)
    inits = _inits(proto)
    packed = inits[node.input[1]]  # [N, blocks, block / 2] uint8, the first value in the low bits
    q = np.stack([packed & 15, packed >> 4], -1).reshape(n, 3, block).astype(np.float32)
    if symmetric:
        assert p.zero_point is None and len(node.input) < 4
        zp = np.full((n, 3), 8, np.float32)
    else:
        assert p.zero_point.shape == (n, 3) and p.zero_point.dtype == np.uint8
        assert p.zero_point.max() <= 15 and inits[node.input[3]].shape == (n, 2)
        zp = p.zero_point.astype(np.float32)
    w = ((q - zp[..., None]) * p.scale[..., None]).reshape(n, k)
    x = np.random.default_rng(1).standard_normal((2, k)).astype(np.float32)
    (y,) = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(x @ w.T, y, rtol=1e-4, atol=1e-4)
    if not symmetric:  # the packed bytes read as one value each would not
        wrong = ((q - inits[node.input[3]].astype(np.float32).repeat(2, 1)[:, :3, None]) * p.scale[..., None]).reshape(n, k)
        assert np.abs(x @ wrong.T - y).max() > 1.0


def test_dynamic_quantize_lstm_weight_scales_say_they_are_per_direction():
    """ddddocr's DynamicQuantizeLSTM weights read 'int8 per_channel, axis 0; scale [0.00194585, 0.001863]'
    with nothing saying axis 0 is the direction (bidirectional: 2 scales), not an output channel."""
    dirs, hidden, inp = 2, 3, 4
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.integers(-127, 128, (dirs, inp, 4 * hidden), dtype=np.int8), "w")
    r = numpy_helper.from_array(rng.integers(-127, 128, (dirs, hidden, 4 * hidden), dtype=np.int8), "r")
    ws = numpy_helper.from_array(np.array([0.01, 0.02], np.float32), "ws")
    rs = numpy_helper.from_array(np.linspace(0.01, 0.02, dirs * 4 * hidden, dtype=np.float32).reshape(dirs, -1), "rs")
    wz, rz = (numpy_helper.from_array(np.zeros(a.dims, np.int8), f"{a.name}_zp") for a in (ws, rs))
    node = helper.make_node("DynamicQuantizeLSTM", ["x", "w", "r", "", "", "", "", "", "ws", "ws_zp", "rs", "rs_zp"],
                            ["y"], name="lstm", domain="com.microsoft", direction="bidirectional", hidden_size=hidden)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 1, inp])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5, dirs, 1, hidden])],
                          [w, r, ws, rs, wz, rz])
    proto = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    by = {p.tensor: p for p in read_quant_params(proto)}
    assert by["w"].note == "one scale per direction, axis 0 = num_directions"
    assert by["r"].note == "a scale per direction, axis 0 = num_directions, and per gate channel, axis 1 = 4 * hidden_size"
    np.testing.assert_array_equal(by["w"].scale, numpy_helper.to_array(ws))
    np.testing.assert_array_equal(by["r"].scale, numpy_helper.to_array(rs))
    assert (by["w"].dtype, by["w"].role, by["w"].kind) == ("int8", "weight", "dynamic")
