"""MACs of the integer kernels of an already-quantized file (ConvInteger, QLinearConv, MatMulInteger,
MatMulIntegerToFloat, QLinearMatMul, QGemm, DynamicQuantizeLSTM), counted by hand from the shapes; contrib
ops no longer hide the shapes after them; a node whose shapes stay unknown is named, not added as 0."""

from __future__ import annotations

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from workbench.cli import main
from workbench.core.analysis.cost import model_cost

MS = "com.microsoft"


def _init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def _scalars(prefix, dtype=np.uint8):
    """A scale (float32 0.05) and a zero point (``dtype`` 0) named ``prefix``_s / ``prefix``_z."""
    return [_init(f"{prefix}_s", np.float32(0.05)), _init(f"{prefix}_z", dtype(0))]


def _weights(rng) -> list[onnx.TensorProto]:
    u8 = lambda *s: rng.integers(0, 255, s, dtype=np.uint8)  # noqa: E731
    i8 = lambda *s: rng.integers(-127, 127, s, dtype=np.int8)  # noqa: E731
    return [
        # DynamicQuantizeLSTM: W [dirs, input, 4 hidden], R [dirs, hidden, 4 hidden], B [dirs, 8 hidden]
        _init("lstm_W", i8(2, 4, 20)), _init("lstm_R", i8(2, 5, 20)), _init("lstm_B", np.zeros((2, 40), np.float32)),
        _init("lstm_Ws", np.full(2, 0.01, np.float32)), _init("lstm_Wz", np.zeros(2, np.int8)),
        _init("lstm_Rs", np.full(2, 0.01, np.float32)), _init("lstm_Rz", np.zeros(2, np.int8)),
        _init("flat", np.array([-1, 10], np.int64)), _init("image", np.array([1, 6, 3, 3], np.int64)),
        _init("mmi_B", u8(10, 7)), _init("mmi_Bz", np.uint8(128)),
        _init("mmf_B", i8(10, 8)), _init("mmf_Bs", np.float32(0.02)), _init("mmf_Bz", np.int8(0)),
        _init("qg_B", u8(9, 8)), *_scalars("qg_B"), _init("qg_C", np.zeros(9, np.int32)),
        *_scalars("q3"), _init("qmm_B", u8(9, 4)), *_scalars("qmm_B"), *_scalars("qmm_Y"),
        _init("ci_W", u8(2, 6, 2, 2)), _init("qc_W", u8(3, 6, 3, 3)), *_scalars("qc_W"), *_scalars("qc_Y"),
        _init("qc_B", np.zeros(3, np.int32)),
    ]


def _all_kernels_model() -> onnx.ModelProto:
    """X [3 steps, 2 batch, 4 features] -> DynamicQuantizeLSTM (bidirectional, hidden 5) -> [3, 2, 2, 5]
    -> Reshape [6, 10] -> MatMulInteger, MatMulIntegerToFloat -> QGemm -> QLinearMatMul, and the QGemm's
    quantized output reshaped to an image [1, 6, 3, 3] -> ConvInteger, QLinearConv. Every shape after the LSTM
    is only known through it (a contrib op ONNX shape inference does not know)."""
    n = helper.make_node
    nodes = [
        n("DynamicQuantizeLSTM", ["X", "lstm_W", "lstm_R", "lstm_B", "", "", "", "", "lstm_Ws", "lstm_Wz",
                                  "lstm_Rs", "lstm_Rz"], ["Y", "Y_h", "Y_c"], name="lstm", domain=MS,
          direction="bidirectional", hidden_size=5),
        n("Reshape", ["Y", "flat"], ["y2"]),
        n("DynamicQuantizeLinear", ["y2"], ["q", "q_s", "q_z"]),
        n("MatMulInteger", ["q", "mmi_B", "q_z", "mmi_Bz"], ["mmi_out"], name="mmi"),
        n("MatMulIntegerToFloat", ["q", "mmf_B", "q_s", "mmf_Bs", "q_z", "mmf_Bz"], ["mmf_out"], name="mmf",
          domain=MS),
        n("DynamicQuantizeLinear", ["mmf_out"], ["q2", "q2_s", "q2_z"]),
        n("QGemm", ["q2", "q2_s", "q2_z", "qg_B", "qg_B_s", "qg_B_z", "qg_C"], ["qg_out"], name="qgemm", domain=MS,
          transB=1),
        n("QuantizeLinear", ["qg_out", "q3_s", "q3_z"], ["q3"]),
        n("QLinearMatMul", ["q3", "q3_s", "q3_z", "qmm_B", "qmm_B_s", "qmm_B_z", "qmm_Y_s", "qmm_Y_z"], ["qmm_out"],
          name="qlinearmatmul"),
        n("Reshape", ["q3", "image"], ["img"]),
        n("ConvInteger", ["img", "ci_W", "q3_z"], ["ci_out"], name="convinteger"),
        n("QLinearConv", ["img", "q3_s", "q3_z", "qc_W", "qc_W_s", "qc_W_z", "qc_Y_s", "qc_Y_z", "qc_B"],
          ["qc_out"], name="qlinearconv", pads=[1, 1, 1, 1]),
    ]
    outs = [helper.make_tensor_value_info(o, t, s) for o, t, s in
            [("mmi_out", TensorProto.INT32, [6, 7]), ("qmm_out", TensorProto.UINT8, [6, 4]),
             ("ci_out", TensorProto.INT32, [1, 2, 2, 2]), ("qc_out", TensorProto.UINT8, [1, 3, 3, 3])]]
    g = helper.make_graph(nodes, "kernels", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 2, 4])], outs,
                          _weights(np.random.default_rng(0)))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(MS, 1)])
    m.ir_version = 8
    return m


# By hand (MACs = multiply-accumulates of the products, biases not counted):
#   lstm          2 directions x 3 steps x 2 batch x 4 x 5 hidden x (4 input + 5 hidden)  = 2,160
#   mmi           [6, 10] x [10, 7]: 6 x 7 outputs x K 10                               =   420
#   mmf           [6, 10] x [10, 8]: 6 x 8 x 10                                          =   480
#   qgemm         [6, 8] x [9, 8]^T: 6 x 9 x 8                                           =   432
#   qlinearmatmul [6, 9] x [9, 4]: 6 x 4 x 9                                             =   216
#   convinteger   [1, 6, 3, 3] * [2, 6, 2, 2] -> [1, 2, 2, 2]: 8 outputs x 6 x 2 x 2      =   192
#   qlinearconv   [1, 6, 3, 3] * [3, 6, 3, 3], pad 1 -> [1, 3, 3, 3]: 27 x 6 x 3 x 3     = 1,458
HAND = {"lstm": 2160, "mmi": 420, "mmf": 480, "qgemm": 432, "qlinearmatmul": 216, "convinteger": 192,
        "qlinearconv": 1458}
#   weights: lstm W + R = 2 x 4 x 20 + 2 x 5 x 20 = 360 (bias 80); the others their B / W tensors
WEIGHTS = {"lstm": 360, "mmi": 70, "mmf": 80, "qgemm": 72, "qlinearmatmul": 36, "convinteger": 48, "qlinearconv": 162}


def test_every_integer_kernel_counts_its_macs_by_hand():
    m = _all_kernels_model()
    # the model is one onnxruntime runs, at the shapes counted above
    outs = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"X": np.random.default_rng(1).standard_normal((3, 2, 4)).astype(np.float32)})
    assert [o.shape for o in outs] == [(6, 7), (6, 4), (1, 2, 2, 2), (1, 3, 3, 3)]
    rep = model_cost(m)
    assert {r.node: r.macs for r in rep.rows} == HAND
    assert {r.node: r.weight_params for r in rep.rows} == WEIGHTS
    assert {r.node: r.bias_params for r in rep.rows} == {"lstm": 80, "qgemm": 9, "qlinearconv": 3} | {
        k: 0 for k in ("mmi", "mmf", "qlinearmatmul", "convinteger")}
    assert rep.macs == sum(HAND.values()) == 5358 and rep.unknown == []
    assert [r.op_type for r in rep.rows] == ["DynamicQuantizeLSTM", "MatMulInteger", "MatMulIntegerToFloat", "QGemm",
                                             "QLinearMatMul", "ConvInteger", "QLinearConv"]


def test_cli_table_shows_whole_op_names_and_counts_the_integer_kernels(tmp_path, capsys):
    path = tmp_path / "kernels.onnx"
    onnx.save(_all_kernels_model(), path)
    assert main(["cost", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line.split() for line in lines[1:8]}
    assert {k: v[1] for k, v in rows.items()} == {
        "lstm": "DynamicQuantizeLSTM", "mmi": "MatMulInteger", "mmf": "MatMulIntegerToFloat", "qgemm": "QGemm",
        "qlinearmatmul": "QLinearMatMul", "convinteger": "ConvInteger", "qlinearconv": "QLinearConv"}
    assert {k: int(v[2].replace(",", "")) for k, v in rows.items()} == HAND
    assert lines[8].split()[:2] == ["total", "5,358"] and "exclude" not in lines[9]
    # the header's columns line up with the rows: the op column as wide as "MatMulIntegerToFloat"
    assert lines[0].index("MACs") + len("MACs") == lines[2].index("420") + len("420")


def _unknown_model() -> onnx.ModelProto:
    """A MatMulInteger after NonZero (its row count depends on the values) beside one of static shapes:
    [2, 3] x [3, 4] -> 2 x 4 x 3 = 24 MACs."""
    n = helper.make_node
    nodes = [n("NonZero", ["X"], ["nz"]), n("Transpose", ["nz"], ["nzt"], perm=[1, 0]),
             n("Cast", ["nzt"], ["a"], to=TensorProto.UINT8),
             n("MatMulInteger", ["a", "B2"], ["dyn_out"], name="dynamic_rows"),
             n("MatMulInteger", ["A", "B3"], ["fixed_out"], name="fixed")]
    inits = [_init("B2", np.ones((2, 5), np.uint8)), _init("B3", np.ones((3, 4), np.uint8))]
    g = helper.make_graph(nodes, "unknown", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4, 2]),
                                             helper.make_tensor_value_info("A", TensorProto.UINT8, [2, 3])],
                          [helper.make_tensor_value_info("dyn_out", TensorProto.INT32, ["rows", 5]),
                           helper.make_tensor_value_info("fixed_out", TensorProto.INT32, [2, 4])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def test_a_node_of_unknown_shape_is_named_not_added_as_zero(tmp_path, capsys):
    m = _unknown_model()
    rep = model_cost(m)
    assert [(r.node, r.macs) for r in rep.rows] == [("dynamic_rows", None), ("fixed", 24)]
    assert rep.unknown == ["dynamic_rows"] and rep.macs == 24
    assert rep.to_json()["totals"]["macs_unknown"] == ["dynamic_rows"]
    path = tmp_path / "unknown.onnx"
    onnx.save(m, path)
    assert main(["cost", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[:3] == ["dynamic_rows", "MatMulInteger", "?"] and lines[1].split()[4:7] == ["?"] * 3
    assert lines[3].split()[:2] == ["total", "24"]
    assert lines[4] == ("the MAC and BOPs totals exclude 1 node whose shapes stay unknown at these input shapes "
                        "(a size that depends on the values, a dimension no input fixes, or an operator before "
                        "them that shape inference does not know): dynamic_rows")


@pytest.mark.slow
def test_ddddocr_total_equals_a_hand_count(corpus, capsys):
    path = corpus / "ddddocr_common_old_int8" / "model.onnx"
    assert main(["cost", str(path), "--data", str(path.parent / "calib.npz"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = {r["node"]: r for r in doc["rows"]}
    # at 1x1x64x160 the CNN leaves 20 steps of 512 features (onnxruntime: the LSTM's X is [20, 1, 512])
    #   LSTM (bidirectional, hidden 512): 2 x 20 x 1 x 4 x 512 x (512 + 512)  =  83,886,080
    #   MatMulInteger [20, 1024] x [1024, 8210]: 20 x 8210 x 1024           = 168,140,800
    #   21 ConvInteger (numel(Y) x C_in x 3 x 3 or x 1 x 1, each checked against onnxruntime's shapes in
    #   tests/test_cost_quantized.py)                                          = 317,091,840
    assert rows["LSTM_202_quant"]["macs"] == 83_886_080
    assert rows["Gemm_220_MatMul_quant"]["macs"] == 168_140_800
    assert sum(r["macs"] for r in doc["rows"] if r["op_type"] == "ConvInteger") == 317_091_840
    assert doc["totals"]["macs"] == 83_886_080 + 168_140_800 + 317_091_840 and doc["totals"]["macs_unknown"] == []
    # weights: W [2, 512, 2048] + R [2, 512, 2048] int8, bias [2, 4096] float
    assert (rows["LSTM_202_quant"]["weight_params"], rows["LSTM_202_quant"]["bias_params"]) == (4_194_304, 8192)
    assert rows["LSTM_202_quant"]["kernel_bits"] == [8, 8] and rows["LSTM_202_quant"]["bops_kernel"] == 83_886_080 * 64


def _pool_where_model() -> onnx.ModelProto:
    """The shape of a QGemm known only through onnxruntime's QLinearAveragePool and QLinearWhere (what
    quantize_static's QOperator format writes for AveragePool / Where): X [1, 2, 5, 5] -> QLinearAveragePool
    (kernel 2, stride 2, ceil_mode 1: [1, 2, 3, 3]; floor mode would give 2 x 2) -> QLinearWhere(cond [1], pool,
    Y [3, 1, 1, 1]) -> [3, 2, 3, 3] -> Flatten [3, 18] -> QGemm with B [5, 18]^T: 3 x 5 x 18 = 270 MACs."""
    n = helper.make_node
    nodes = [
        n("QuantizeLinear", ["X", "x_s", "x_z"], ["xq"]),
        n("QLinearAveragePool", ["xq", "x_s", "x_z", "x_s", "x_z"], ["pool"], name="pool", domain=MS,
          kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
        n("QLinearWhere", ["cond", "pool", "x_s", "x_z", "wy", "x_s", "x_z", "x_s", "x_z"], ["sel"], name="where",
          domain=MS),
        n("Flatten", ["sel"], ["flat"], axis=1),
        n("QGemm", ["flat", "x_s", "x_z", "g_B", "x_s", "x_z", "", "x_s", "x_z"], ["out"], name="qgemm", domain=MS,
          transB=1),
    ]
    inits = [*_scalars("x"), _init("cond", np.array([True])), _init("wy", np.full((3, 1, 1, 1), 7, np.uint8)),
             _init("g_B", np.random.default_rng(0).integers(0, 255, (5, 18), dtype=np.uint8))]
    g = helper.make_graph(nodes, "pool_where", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 2, 5, 5])],
                          [helper.make_tensor_value_info("out", TensorProto.UINT8, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid(MS, 1)])
    m.ir_version = 8
    return m


def test_qlinear_average_pool_and_where_pass_their_shapes_on():
    """A QGemm after them was left out of the totals (digits_cnn quantized by onnxruntime's quantize_static,
    QOperator format: its head's QGemm after a QLinearAveragePool, 2,560 of 601,600 MACs, showed '?')."""
    m = _pool_where_model()
    out, = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"X": np.random.default_rng(1).random((1, 2, 5, 5), dtype=np.float32)})
    assert out.shape == (3, 5)  # the shapes counted below are those onnxruntime computes
    rep = model_cost(m)
    assert [(r.node, r.macs, r.weight_params) for r in rep.rows] == [("qgemm", 270, 90)]
    assert rep.unknown == [] and rep.macs == 270


def _ort_fusions_model() -> onnx.ModelProto:
    """The float fusions onnxruntime writes into an optimized file around its integer kernels: A [2, 4, 3] ->
    FusedMatMul(A, B [2, 5, 3], transB) [2, 4, 5] -> Gelu -> SkipLayerNormalization (output 0 and the sum, output 3)
    -> DynamicQuantizeMatMul(output 0, W [5, 7]) [2, 4, 7] and FusedMatMul(sum, C [2, 4, 6], transA) [2, 5, 6]."""
    n = helper.make_node
    nodes = [n("FusedMatMul", ["A", "fm_B"], ["fm"], name="scores", domain=MS, transB=1, alpha=0.5),
             n("Gelu", ["fm"], ["gelu"], domain=MS),
             n("SkipLayerNormalization", ["gelu", "gelu", "gamma", "beta"], ["sln", "", "", "sln_sum"], domain=MS),
             n("DynamicQuantizeMatMul", ["sln", "dq_W", "dq_s", "dq_z"], ["dqmm"], name="dqmm", domain=MS),
             n("FusedMatMul", ["sln_sum", "fm_C"], ["fm2"], name="transposed_a", domain=MS, transA=1)]
    rng = np.random.default_rng(0)
    inits = [_init("fm_B", rng.standard_normal((2, 5, 3)).astype(np.float32)), _init("gamma", np.ones(5, np.float32)),
             _init("beta", np.zeros(5, np.float32)), _init("dq_W", rng.integers(-127, 127, (5, 7), dtype=np.int8)),
             _init("dq_s", np.float32(0.02)), _init("dq_z", np.int8(0)),
             _init("fm_C", rng.standard_normal((2, 4, 6)).astype(np.float32))]
    g = helper.make_graph(nodes, "fusions", [helper.make_tensor_value_info("A", TensorProto.FLOAT, [2, 4, 3])],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in ("dqmm", "fm2")], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    m.ir_version = 8
    return m


def test_onnxruntime_fusions_pass_their_shapes_on_and_fused_matmul_counts():
    """An onnxruntime-optimized minilm_l6_v2 (quantize_dynamic, then ORT_ENABLE_EXTENDED) left 39 nodes unknown
    behind Gelu / SkipLayerNormalization and did not count its 6 attention FusedMatMuls (393,216 MACs each at
    sequence 32): 14,155,776 MACs, against 344,457,216 for the file before optimization."""
    m = _ort_fusions_model()
    outs = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"A": np.random.default_rng(1).standard_normal((2, 4, 3)).astype(np.float32)})
    assert [o.shape for o in outs] == [(2, 4, 7), (2, 5, 6)]  # the shapes counted below are onnxruntime's
    rep = model_cost(m)
    # scores: 2 x 4 x 5 outputs x K 3 = 120; dqmm: 2 x 4 x 7 x K 5 = 280; transposed_a: op(A) [2, 5, 4]: 2 x 5 x 6 x 4
    assert {r.node: r.macs for r in rep.rows} == {"scores": 120, "dqmm": 280, "transposed_a": 240}
    assert rep.unknown == [] and rep.macs == 640


def _recurrent_model(layout: int) -> onnx.ModelProto:
    """X -> LSTM (hidden 5, forward) and GRU (bidirectional, no hidden_size attribute: 4 from R) and RNN (hidden 3),
    with ``layout``: 0, X [3 steps, 2 batch, 6 features]; 1, X [2 batch, 3 steps, 6 features]."""
    rng = np.random.default_rng(0)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    n = helper.make_node
    nodes = [n("LSTM", ["X", "l_W", "l_R", "l_B"], ["l_Y"], name="lstm", hidden_size=5, layout=layout),
             n("GRU", ["X", "g_W", "g_R"], ["g_Y"], name="gru", direction="bidirectional", layout=layout),
             n("RNN", ["X", "r_W", "r_R"], ["r_Y"], name="rnn", hidden_size=3, layout=layout)]
    inits = [_init("l_W", f32(1, 20, 6)), _init("l_R", f32(1, 20, 5)), _init("l_B", f32(1, 40)),
             _init("g_W", f32(2, 12, 6)), _init("g_R", f32(2, 12, 4)), _init("r_W", f32(1, 3, 6)), _init("r_R", f32(1, 3, 3))]
    x = [2, 3, 6] if layout else [3, 2, 6]
    g = helper.make_graph(nodes, "recurrent", [helper.make_tensor_value_info("X", TensorProto.FLOAT, x)],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in ("l_Y", "g_Y", "r_Y")],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    return m


# By hand, 3 steps x 2 batch rows, 6 input features (per direction and step, each gate's X_t W and H_{t-1} R):
#   lstm  1 direction  x 3 x 2 x 4 gates x 5 hidden x (6 + 5) = 1,320; weights W 120 + R 100, bias 40
#   gru   2 directions x 3 x 2 x 3 gates x 4 hidden x (6 + 4) =   1,440; weights W 144 + R 96
#   rnn   1 direction  x 3 x 2 x 1 gate  x 3 hidden x (6 + 3) =     162; weights W 18 + R 9
RECURRENT = {"lstm": (1320, 220, 40), "gru": (1440, 240, 0), "rnn": (162, 27, 0)}


@pytest.mark.parametrize("layout", [0, 1])
def test_float_recurrent_ops_are_counted(layout):
    """A float LSTM was not counted while its DynamicQuantizeLSTM (onnxruntime's quantize_dynamic) was: a model
    of an LSTM (hidden 16, 10 steps) and a MatMul counted 800 MACs float and 16,160 quantized; silero_vad's
    16 kHz model counted 548,480 MACs without its LSTM and 679,552 with it, as its If-less export (Gemms)."""
    m = _recurrent_model(layout)
    # onnx.reference: onnxruntime runs neither layout 1 nor a GRU without hidden_size
    outs = ReferenceEvaluator(m).run(None, {"X": np.zeros([2, 3, 6] if layout else [3, 2, 6], np.float32)})
    # Y: [steps, directions, batch, hidden], with layout 1 [batch, steps, directions, hidden]
    shapes = [(3, 1, 2, 5), (3, 2, 2, 4), (3, 1, 2, 3)]
    assert [o.shape for o in outs] == [(s[2], s[0], s[1], s[3]) if layout else s for s in shapes]
    rep = model_cost(m)
    assert {r.node: (r.macs, r.weight_params, r.bias_params) for r in rep.rows} == RECURRENT
    assert rep.macs == 2922 and rep.unknown == []


def test_an_lstm_counts_the_same_float_and_after_quantize_dynamic(tmp_path):
    """onnxruntime's quantize_dynamic turns the LSTM into a DynamicQuantizeLSTM: the MACs and weight elements
    stay those of the float model (10 steps x 4 gates x hidden 16 x (8 + 16) = 15,360, then a MatMul of 800)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    rng = np.random.default_rng(0)
    n = helper.make_node
    nodes = [n("LSTM", ["X", "W", "R", "B"], ["Y"], name="lstm", hidden_size=16),
             n("Squeeze", ["Y", "axis"], ["y"]), n("MatMul", ["y", "head_W"], ["out"], name="head")]
    inits = [_init("W", rng.standard_normal((1, 64, 8)).astype(np.float32)),
             _init("R", rng.standard_normal((1, 64, 16)).astype(np.float32)), _init("B", np.zeros((1, 128), np.float32)),
             _init("axis", np.array([1], np.int64)), _init("head_W", rng.standard_normal((16, 5)).astype(np.float32))]
    g = helper.make_graph(nodes, "lstm", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [10, 1, 8])],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, [10, 1, 5])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, tmp_path / "f.onnx")
    quantize_dynamic(tmp_path / "f.onnx", tmp_path / "q.onnx", weight_type=QuantType.QInt8)
    q = onnx.load(tmp_path / "q.onnx")
    assert "DynamicQuantizeLSTM" in {node.op_type for node in q.graph.node}
    counts = [[(r.op_type, r.macs, r.weight_params, r.bias_params) for r in model_cost(x).rows] for x in (m, q)]
    assert [[c[1:] for c in rows] for rows in counts] == [[(15360, 1536, 128), (800, 80, 0)]] * 2


def _weight_quantized_in_graph_model() -> onnx.ModelProto:
    """What onnxruntime's quantize_static (QOperator) writes for a model holding its weights in Constant nodes
    (ppocr_mobile_v2_cls): X [1, 8, 5, 5] -> QuantizeLinear -> QLinearConv (pads 1) whose weight [16, 8, 3, 3]
    (1,152 elements, more than cost folds) is QuantizeLinear(Constant) -> DequantizeLinear; 25 x 16 x 72 = 28,800
    MACs."""
    n = helper.make_node
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((16, 8, 3, 3)).astype(np.float32), "w")
    nodes = [n("Constant", [], ["w_float"], value=w),
             n("QuantizeLinear", ["w_float", "w_s", "w_z"], ["w_q"]),
             n("QuantizeLinear", ["X", "x_s", "x_z"], ["xq"]),
             n("QLinearConv", ["xq", "x_s", "x_z", "w_q", "w_s", "w_z", "y_s", "y_z"], ["yq"], name="conv", pads=[1] * 4),
             n("DequantizeLinear", ["yq", "y_s", "y_z"], ["Y"])]
    inits = [*_scalars("x"), *_scalars("y"), _init("w_s", np.float32(0.02)), _init("w_z", np.int8(0))]
    g = helper.make_graph(nodes, "qop", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 8, 5, 5])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 16, 5, 5])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def test_a_weight_quantized_by_a_node_of_the_file_counts_its_elements(tmp_path, capsys):
    """ppocr_mobile_v2_cls quantized by quantize_static (QOperator) counted 40,384 B of float weights, not the
    float model's 504,832 B: 27 of its 54 QLinearConvs had weights of more than 1,024 elements behind a
    QuantizeLinear of a Constant and counted 0."""
    m = _weight_quantized_in_graph_model()
    out, = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"X": np.random.default_rng(1).standard_normal((1, 8, 5, 5)).astype(np.float32)})
    assert out.shape == (1, 16, 5, 5)
    path = tmp_path / "qop.onnx"
    onnx.save(m, path)
    assert main(["cost", str(path), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    assert (row["node"], row["macs"], row["weight_params"]) == ("conv", 28_800, 1152)
    assert (row["memory_bits"], row["memory_float_bits"]) == (1152 * 8, 1152 * 32)


@pytest.mark.parametrize("level, as_run", [(None, (32, 32)), (0, (32, 32)), (4, (4, 8))])
def test_file_matmul_nbits_runs_at_its_accuracy_level(level, as_run):
    """A file's MatMulNBits was counted as run at 4 x 8 bits whatever its accuracy_level; onnxruntime's CPU
    kernel quantizes the activation to int8 only at level 4 (matmul_nbits.cc), and computes float32 on the
    dequantized weight at 0 (unset) to 3: 32 x 32 as run, while it reads a 4-bit weight and a float input."""
    from qdq_helpers import matmul_nbits_model

    from workbench.core.inspection.kernel_bits import file_bits

    bits, kernel, _ = file_bits(matmul_nbits_model(level)[0])
    assert bits == {"mm": (4, 32)} and kernel == {"mm": as_run}
