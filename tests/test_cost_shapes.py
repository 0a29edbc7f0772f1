"""Cost at the shapes of the calibration data: symbolic height / width (nudenet_320n), a sample rate
that selects If branches (silero_vad), QONNX quantizers seen through. Each Conv's MACs are checked
against an independent count: the output shape onnxruntime really produces on that sample times
the weight's ``C_in / group x kernel`` (ONNX Conv)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from bundled_example import EXAMPLE

from workbench.core import api
from workbench.core.analysis.cost import data_sample, model_cost
from workbench.core.runtime.session import add_outputs
from workbench.core.tuning.autotune import _float_cost


def _ort_conv_macs(model, sample) -> dict[str, int]:
    """Conv node -> numel(Y) * prod(W.shape[1:]) with Y as onnxruntime computes it on ``sample``."""
    proto = model.proto
    convs = [n for n in proto.graph.node if n.op_type == "Conv"]
    weights = {i.name: list(i.dims) for i in proto.graph.initializer}
    sess = ort.InferenceSession(add_outputs(proto, [n.output[0] for n in convs]).SerializeToString(),
                                providers=["CPUExecutionProvider"])
    outs = sess.run([n.output[0] for n in convs], sample)
    return {n.name: int(np.size(y)) * math.prod(weights[n.input[1]][1:]) for n, y in zip(convs, outs, strict=True)}


@pytest.mark.slow
def test_nudenet_macs_at_the_calibration_shape_equal_onnxruntime_shapes(corpus):
    folder = corpus / "nudenet_320n"
    model = api.open_model(folder / "model.onnx")
    sample = data_sample(model, folder / "calib.npz")
    assert list(sample["images"].shape) == [1, 3, 320, 320]  # the model says batch x 3 x height x width
    rep = model_cost(model.proto, input_values=sample)
    rows = {r.node: r for r in rep.rows}
    expected = _ort_conv_macs(model, sample)
    assert len(expected) == 64 and all(r.macs is not None for r in rep.rows)
    assert {n: rows[n].macs for n in expected} == expected
    assert any("320x320 from the data" in n for n in rep.notes)
    at_one = model_cost(model.proto)  # no data: symbolic height / width at 1, which leaves shapes unknown
    assert any(r.macs is None for r in at_one.rows)


@pytest.mark.slow
def test_silero_vad_counts_the_branch_its_sample_rate_takes(corpus):
    folder = corpus / "silero_vad"
    flat = api.open_model(folder / "silero_vad_16k_op15.onnx")  # Convs in the main graph
    sample = data_sample(flat, folder / "calib.npz")
    rep = model_cost(flat.proto, input_values=sample)
    main = {r.node: r.macs for r in rep.rows if r.node in {n.name for n in flat.proto.graph.node}}
    assert main == _ort_conv_macs(flat, sample) and len(main) == 6
    assert all(r.macs is not None for r in rep.rows)
    # the same network with every layer inside If bodies: one branch counted, the same total
    hidden = api.open_model(folder / "silero_vad.onnx")
    rep_if = model_cost(hidden.proto, input_values=data_sample(hidden, folder / "calib.npz"))
    assert rep_if.rows and all(r.macs is not None for r in rep_if.rows)
    # and the decoder's LSTM in the If bodies of both (hidden 128, input 128, one step: 4 x 128 x (128 + 128)),
    # the total of silero_vad_op18_ifless.onnx, whose export computes it with Gemms
    lstm = [r.macs for r in rep.rows if r.op_type == "LSTM"]
    assert lstm == [131_072] and [r.macs for r in rep_if.rows if r.op_type == "LSTM"] == lstm
    assert rep_if.macs == rep.macs == sum(main.values()) + 131_072 == 679_552
    ifless = api.open_model(folder / "silero_vad_op18_ifless.onnx")
    assert model_cost(ifless.proto, input_values=data_sample(ifless, folder / "calib.npz")).macs == 679_552
    assert any(n.startswith("If If_0: only its then branch") for n in rep_if.notes)


def test_qonnx_export_has_no_unknown_cost(tmp_path):
    example = api.open_model(_example("digits_cnn.onnx"))
    result = api.quantize(example, api.make_recipe("cpu-u8s8"), data=_example("digits_cnn_calib.npz"), samples=16)
    path = api.export(result, tmp_path / "m.qonnx.onnx", format="qonnx", model=example)
    qonnx = api.open_model(path)
    assert any(n.domain == "qonnx.custom_op.general" for n in qonnx.proto.graph.node)
    rep = model_cost(qonnx.proto, input_values=data_sample(example, _example("digits_cnn_calib.npz")))
    ref = model_cost(example.proto)
    assert [r.macs for r in rep.rows] == [r.macs for r in ref.rows] and rep.macs == 601_600


def _example(name: str) -> Path:
    return EXAMPLE / name


@pytest.mark.slow
def test_cli_input_shape_counts_at_that_shape_and_refuses_what_does_not_fit(corpus, capsys):
    """``cost --input-shape images:1x3x384x640`` on nudenet_320n (symbolic height / width): every Conv's
    MACs equal the count from the output shapes onnxruntime produces at that size; it wins over the
    data's shape; a wrong name, rank or fixed dimension, or the input twice, is a one-line error."""
    import json

    from workbench.cli import main

    folder = corpus / "nudenet_320n"
    model = api.open_model(folder / "model.onnx")
    expected = _ort_conv_macs(model, {"images": np.zeros((1, 3, 384, 640), np.float32)})
    for extra in ([], ["--data", str(folder / "calib.npz")]):
        assert main(["cost", str(folder / "model.onnx"), "--input-shape", "images:1x3x384x640", "--json", *extra]) == 0
        rows = {r["node"]: r["macs"] for r in json.loads(capsys.readouterr().out)["rows"]}
        assert {n: rows[n] for n in expected} == expected and len(expected) == 64
    assert main(["cost", str(folder / "model.onnx")]) == 2  # height and width unknown: refused, not counted at 1
    err = capsys.readouterr().err
    assert "the input sizes are unknown (images: height, width)" in err and "--input-shape images:1x3x<height>x<width>" in err
    for arg, message in (("imgs:1x3x64x64", "--input-shape imgs: "),
                         ("images:1x3x384", "input 'images': the shape 1x3x384 of --input-shape has 3 dimensions; "
                                            "the model's input has 4 (batch x 3 x height x width)."),
                         ("images:1x4x64x64", "input 'images': dimension 1 of the shape 1x4x64x64 of --input-shape is "
                                              "4; the model fixes it to 3 (batch x 3 x height x width).")):
        assert main(["cost", str(folder / "model.onnx"), "--input-shape", arg]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert main(["cost", str(folder / "model.onnx"), "--input-shape", "images:1x3x64x64",
                 "--input-shape", "images:1x3x32x32"]) == 2
    assert "given twice" in capsys.readouterr().err


@pytest.mark.slow
def test_input_shapes_agree_on_shared_dimension_names(corpus, capsys):
    """minilm_l6_v2's three inputs share 'batch' and 'sequence': --input-shape input_ids:1x128 alone now
    sets the other inputs' 'sequence' to 128 (it set them to --batch 1), and 64 on attention_mask beside
    128 on input_ids is refused (it printed 62,914,560 MACs; onnxruntime cannot run those shapes)."""
    import json

    from workbench.cli import main

    model = str(corpus / "minilm_l6_v2" / "model.onnx")
    full = ["--input-shape", "input_ids:1x128", "--input-shape", "attention_mask:1x128",
            "--input-shape", "token_type_ids:1x128"]
    totals = []
    for args in (full, ["--input-shape", "input_ids:1x128"]):
        assert main(["cost", model, "--json", *args]) == 0
        totals.append(json.loads(capsys.readouterr().out)["totals"]["macs"])
    assert totals[0] == totals[1] > 0  # one given shape fixes the shared names for all three inputs
    assert main(["cost", model, "--input-shape", "input_ids:1x128", "--input-shape", "attention_mask:1x64"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "input 'attention_mask': dimension 'sequence' is 64" in err[0] and "128 in input 'input_ids'" in err[0]


def test_placeholder_dimension_names_are_unknowns_of_their_own(corpus, capsys):
    """ppocr_mobile_v2_cls declares x as [-1, 3, "?", "?"]: height 48 and width 192 are two unknowns,
    not one name that must agree (cost refused the data and --input-shape x:1x3x48x192 with "dimension
    '?' is 192 ... but 48"). Every Conv's MACs equal the count from onnxruntime's output shapes."""
    import json

    from workbench.cli import main

    folder = corpus / "ppocr_mobile_v2_cls"
    model = api.open_model(folder / "model.onnx")
    assert model.inputs[0].shape == [None, 3, "?", "?"]
    sample = data_sample(model, folder / "calib.npz")
    assert list(sample["x"].shape) == [1, 3, 48, 192]
    expected = _ort_conv_macs(model, sample)
    assert len(expected) == 53
    for args in (["--data", str(folder / "calib.npz")], ["--input-shape", "x:1x3x48x192"]):
        assert main(["cost", str(folder / "model.onnx"), "--json", *args]) == 0
        rows = {r["node"]: r["macs"] for r in json.loads(capsys.readouterr().out)["rows"]}
        assert {n: rows[n] for n in expected} == expected
    assert sum(expected.values()) == 16_314_976  # the Convs; the cost total adds a 200 x 2 MatMul
    curve_cost = _float_cost(model, folder / "calib.npz")  # autotune's curve priced nothing ("without weight size")
    assert curve_cost is not None and curve_cost.macs == 16_315_376


def test_placeholder_names_in_two_inputs_do_not_tie_them(tmp_path):
    """Two inputs whose second dimension is "?" (and one unnamed) take their own sizes from the data;
    a real shared name ("n") still has to agree."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from workbench.core.errors import ModelError

    def inp(name, second):
        vi = helper.make_tensor_value_info(name, TensorProto.FLOAT, ["n", 1])
        vi.type.tensor_type.shape.dim[1].Clear()
        if second is not None:
            vi.type.tensor_type.shape.dim[1].dim_param = second
        return vi

    w = {k: numpy_helper.from_array(np.ones((k, 2), np.float32), f"w{k}") for k in (4, 6, 5)}
    nodes = [helper.make_node("MatMul", [x, f"w{k}"], [f"y{k}"], name=f"mm{k}") for x, k in (("a", 4), ("b", 6), ("c", 5))]
    graph = helper.make_graph(nodes, "g", [inp("a", "?"), inp("b", "?"), inp("c", None)],
                              [helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, None) for k in (4, 6, 5)],
                              list(w.values()))
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    feed = {"a": np.zeros((3, 4), np.float32), "b": np.zeros((3, 6), np.float32), "c": np.zeros((3, 5), np.float32)}
    rep = model_cost(onnx.ModelProto.FromString(proto.SerializeToString()), input_values=feed)
    assert {r.node: r.macs for r in rep.rows} == {"mm4": 3 * 4 * 2, "mm6": 3 * 6 * 2, "mm5": 3 * 5 * 2}
    feed["b"] = np.zeros((2, 6), np.float32)  # "n" is 3 in a but 2 in b: a real name must agree
    with pytest.raises(ModelError, match="dimension 'n' is 2"):
        model_cost(proto, input_values=feed)


def test_cost_refuses_unknown_input_sizes_and_says_how_to_give_them(corpus, capsys):
    """``cost`` of a model with dynamic height / width (nudenet_320n) or sequence length (minilm_l6_v2) and no
    --data printed a whole table counted at 1 x 1 (nudenet_320n: 1,267,632 MACs, some Convs '?'); it now
    refuses in one line naming the dimensions, an --input-shape to type and the data beside the model. A
    batch dimension alone still counts at --batch, and one given shape fixes a shared dimension name."""
    from workbench.cli import main

    cases = {"nudenet_320n": ("images: height, width", "--input-shape images:1x3x<height>x<width>"),
             "minilm_l6_v2": ("input_ids: sequence; attention_mask: sequence; token_type_ids: sequence",
                              "--input-shape input_ids:1x<sequence>"),
             "ppocr_mobile_v2_cls": ("x: ?, ?", "--input-shape x:1x3x<dim2>x<dim3>")}
    for name, (dims, example) in cases.items():
        model, calib = corpus / name / "model.onnx", corpus / name / "calib.npz"
        assert main(["cost", str(model)]) == 2
        err = capsys.readouterr().err
        assert err == (f"error: {model}: the input sizes are unknown ({dims}); cost would count them as 1 and its "
                       f"MACs and BOPs would mean nothing. Give them: {example} (repeatable), or --data {calib} to "
                       f"count at its first sample's shapes ({calib} is beside the model).\n")
    assert api.unknown_dims(api.open_model(corpus / "minilm_l6_v2" / "model.onnx").proto,
                            {"input_ids": [1, 128]}) == {}
    assert main(["cost", str(corpus / "digits_cnn" / "model_opset13.onnx"), "--json"]) == 0  # [N, 1, 8, 8]
    capsys.readouterr()


def test_cli_input_shape_that_does_not_fit_says_which_dimension(corpus, tmp_path, capsys):
    """A rank or fixed dimension --input-shape gets wrong is named in one line: it printed "input input: the shape
    [1, 2] of --input-shape does not fit the model's ['?', 1, 8, 8]" (Python lists, and no word on what differs)."""
    from workbench.cli import main

    model = str(corpus / "digits_cnn" / "model_opset17.onnx")
    hint = ("Count the cost at shapes the model accepts: other data, or --input-shape NAME:DIMS with the model's fixed "
            "dims as they are.")
    for arg, message in (("input:1,2", "input 'input': the shape 1x2 of --input-shape has 2 dimensions; the model's "
                                       "input has 4 (N x 1 x 8 x 8)."),
                         ("input:1,3,8,8", "input 'input': dimension 1 of the shape 1x3x8x8 of --input-shape is 3; "
                                           "the model fixes it to 1 (N x 1 x 8 x 8).")):
        assert main(["cost", model, "--input-shape", arg]) == 2
        captured = capsys.readouterr()
        assert captured.err == f"error: {message} {hint}\n" and captured.out == ""
