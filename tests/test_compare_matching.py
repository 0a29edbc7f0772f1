"""``compare`` on our own exports (float8, dynamic, weight-only int4) and onnxruntime's ``quantize_dynamic``:
which node became which, and per-tensor SQNR equal to an independent onnxruntime run of the same tensors."""

from __future__ import annotations

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from bundled_example import EXAMPLE
from onnxruntime.quantization import quantize_dynamic
from qdq_helpers import optimized_op_counts

from workbench.cli import main
from workbench.core import api
from workbench.core.inspection.correspond import interface_mismatch
from workbench.core.inspection.diff_error import compare_models

FLOAT, CALIB = EXAMPLE / "digits_cnn.onnx", EXAMPLE / "digits_cnn_calib.npz"
SAMPLES = 24
BATCH = 8  # compare runs batches of 8 (ANALYSIS_BATCH); DynamicQuantizeLinear picks its scale per run


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """digits_cnn exported by us with the float8, dynamic and weight-only int4 presets."""
    out = tmp_path_factory.mktemp("cmp")
    model = api.open_model(FLOAT)
    paths = {}
    for preset in ("fp8-e4m3", "dynamic-u8", "w4-block"):
        result = api.quantize(model, api.make_recipe(preset), data=str(CALIB), samples=32)
        paths[preset] = api.export(result, out / f"{preset}.onnx")
    paths["ort_dynamic"] = out / "ort_dynamic.onnx"
    quantize_dynamic(str(FLOAT), str(paths["ort_dynamic"]))
    return paths


def _sqnr(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(10 * np.log10(np.sum(a * a) / np.sum((a - b) ** 2)))


def _independent_sqnr(quant_path, float_tensor: str, quant_tensor: str) -> float:
    """SQNR of ``quant_tensor`` of the quantized file against ``float_tensor`` of the float model, both run
    by onnxruntime on the first SAMPLES calibration rows in batches of BATCH (the quantized file unoptimized)."""
    x = np.load(CALIB)["input"][:SAMPLES]
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    f = ort.InferenceSession(api.add_outputs(onnx.load(str(FLOAT)), [float_tensor]).SerializeToString())
    q = ort.InferenceSession(api.add_outputs(onnx.load(str(quant_path)), [quant_tensor]).SerializeToString(), so)
    batches = [{"input": x[i:i + BATCH]} for i in range(0, SAMPLES, BATCH)]
    return _sqnr(np.concatenate([f.run([float_tensor], b)[0] for b in batches]),
                 np.concatenate([q.run([quant_tensor], b)[0] for b in batches]))


def test_float8_relu_written_as_max_is_matched_to_its_max(exports):
    """Our float8 export writes each ReLU as Max(x, 0) under the ReLU's name. It was listed as folded into
    the Conv and as added, and the float ReLU output was compared with the Conv output before it:
    -1.73 dB where onnxruntime measures 24.87 dB on 32 samples."""
    qp = onnx.load(str(exports["fp8-e4m3"]))
    d = compare_models(api.open_model(FLOAT), qp, str(CALIB), samples=SAMPLES)
    relus = [n.name for n in onnx.load(str(FLOAT)).graph.node if n.op_type == "Relu"]
    assert {m.float_node: m.quant_op for m in d.matches if m.float_op == "Relu"} == dict.fromkeys(relus, "Max")
    assert len(d.matches) == 10 and d.folded == [] and d.added == [] and d.removed == []
    assert d.tensors["/f/f.2/Relu_output_0"] == "/f/f.2/Relu_output_0_dequantized"
    want = _independent_sqnr(exports["fp8-e4m3"], "/f/f.2/Relu_output_0", "/f/f.2/Relu_output_0_dequantized")
    assert d.sqnr["/f/f.2/Relu_output_0"] == pytest.approx(want, abs=1e-6)
    assert 20.0 < want < 35.0
    assert len(d.sqnr) == 10 and min(d.sqnr.values()) > 15.0


@pytest.mark.parametrize("key", ["dynamic-u8", "ort_dynamic"])
def test_dynamic_files_match_their_integer_units_and_float_tensors(exports, key):
    """Our dynamic export renames each unit (``/f/f.0/Conv_ConvInteger``): 6 of 10 nodes matched, 4 removed,
    "the second file holds no quantization". onnxruntime's paired the float logits and Conv outputs with
    the int32 outputs of its MatMulInteger / ConvInteger (no SQNR), though the file holds both by name."""
    qp = onnx.load(str(exports[key]))
    d = compare_models(api.open_model(FLOAT), qp, str(CALIB), samples=SAMPLES)
    units = {m.float_node: m.quant_op for m in d.matches if m.status == "quantized"}
    assert units == {"/f/f.0/Conv": "ConvInteger", "/f/f.3/Conv": "ConvInteger", "/f/f.7/Conv": "ConvInteger",
                     "/head/head.2/Gemm": "MatMulInteger"}
    assert len(d.matches) == 10 and d.removed == [] and d.folded == []
    assert "holds no quantization" not in d.summary()
    # every float tensor is paired with the float tensor of the same name (the unit's Add writes it)
    floats = [o for n in onnx.load(str(FLOAT)).graph.node for o in n.output]
    assert d.tensors == {t: t for t in floats} and set(d.sqnr) == set(floats)
    for t in ("logits", "/f/f.0/Conv_output_0"):
        assert d.sqnr[t] == pytest.approx(_independent_sqnr(exports[key], t, t), abs=1e-6)
    assert 35.0 < d.sqnr["logits"] < 50.0


def test_weight_only_logits_are_the_graph_output_after_the_bias(exports):
    """w4-block writes the Gemm as MatMul (int4 weight) + Add (bias): the float logits were compared with the
    MatMul output before the bias (30.23 dB on 32 rows)."""
    d = compare_models(api.open_model(FLOAT), onnx.load(str(exports["w4-block"])), str(CALIB), samples=SAMPLES)
    assert d.tensors["logits"] == "logits" and d.producers["logits"] == "/head/head.2/Gemm"
    assert d.sqnr["logits"] == pytest.approx(_independent_sqnr(exports["w4-block"], "logits", "logits"), abs=1e-6)


def test_two_float_files_still_say_no_quantization(exports):
    d = compare_models(api.open_model(FLOAT), onnx.load(str(FLOAT)))
    assert d.quantized_ops == 0 and d.summary().endswith("the second file holds no quantization (no Q/DQ, "
                                                         "no integer op): both compute in float")
    assert api.diff_models(onnx.load(str(FLOAT)), onnx.load(str(exports["dynamic-u8"]))).quantized_ops == 8


def _weight_only_counts(float_path, quant_path) -> tuple[dict[str, int], str]:
    d = api.diff_models(onnx.load(str(float_path)), onnx.load(str(quant_path)))
    return {s: sum(m.status == s for m in d.matches) for s in ("quantized", "weight_only", "float")}, d.summary()


def test_weight_only_matmuls_are_counted_as_such(exports):
    """The int4 MatMul of w4-block (float activation, int4 weight: onnxruntime's MatMulNBits) was counted
    "left float": "10 nodes matched (0 quantized, 4 compute ops left float)"."""
    counts, summary = _weight_only_counts(FLOAT, exports["w4-block"])
    assert counts == {"quantized": 0, "weight_only": 1, "float": 3}  # the 3 Conv stay float in w4-block
    assert counts["weight_only"] == optimized_op_counts(str(exports["w4-block"]))["MatMulNBits"]
    assert summary.startswith("10 nodes matched (0 quantized, 1 weight-only, 3 compute ops left float);")
    text = api.format_diff(api.diff_models(onnx.load(str(FLOAT)), onnx.load(str(exports["w4-block"]))))
    left = text.split("left float: 3\n")[1].split("\nadded:")[0].splitlines()
    assert left == ["  Conv /f/f.0/Conv", "  Conv /f/f.3/Conv", "  Conv /f/f.7/Conv"]


def test_weight_only_transformer_matmuls(corpus, tmp_path):
    """digits_transformer w4-block: "0 quantized, 14 compute ops left float" with 10 int4 MatMuls."""
    d = corpus / "digits_transformer"
    out = tmp_path / "w4.onnx"
    result = api.quantize(api.open_model(d / "model_opset17.onnx"), api.make_recipe("w4-block"),
                          data=str(d / "calib.npz"), samples=8)
    api.export(result, out)
    counts, summary = _weight_only_counts(d / "model_opset17.onnx", out)
    assert counts == {"quantized": 0, "weight_only": 10, "float": 4}  # 4 activation x activation attention MatMuls
    assert counts["weight_only"] == optimized_op_counts(str(out))["MatMulNBits"]


def _rename_output(src, dst, new: str):
    m = onnx.load(str(src))
    old = m.graph.output[0].name
    for n in m.graph.node:
        n.output[:] = [new if o == old else o for o in n.output]
    m.graph.output[0].name = new
    onnx.save(m, str(dst))
    return str(dst)


def test_compare_matches_renamed_outputs_by_position_with_evaluates_note(exports, tmp_path, capsys):
    """compare refused it: "do not correspond: graph outputs ['logits'] vs ['out_renamed']", while evaluate
    matches outputs by position with a note."""
    renamed = _rename_output(exports["fp8-e4m3"], tmp_path / "renamed.onnx", "out_renamed")
    note = "output names differ (['logits'] vs ['out_renamed']); matched by position"
    assert main(["evaluate", str(FLOAT), renamed, "--data", str(CALIB), "--samples", "8"]) == 0
    assert f"note: {note}" in capsys.readouterr().err  # evaluate's wording, which compare reuses
    out = tmp_path / "diff.json"
    assert main(["compare", str(FLOAT), renamed, "--data", str(CALIB), "--samples", str(SAMPLES),
                 "--json", str(out)]) == 0
    assert f"\nnote: {note}\n" in capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["notes"] == [note]
    logits = next(t for t in doc["tensors"] if t["float"] == "logits")
    assert logits["quantized"] == "out_renamed"
    assert logits["sqnr_db"] == pytest.approx(_independent_sqnr(renamed, "logits", "out_renamed"), abs=1e-6)
    # render --compare measures the same pair and says so too (it printed nothing)
    from workbench import cli
    args = cli.build_parser().parse_args(["render", str(FLOAT), "--compare", renamed, "--data", str(CALIB),
                                          "--samples", str(SAMPLES), "-o", str(tmp_path / "g.png")])
    mode, _, errors, *_ = cli._render_values(args, api.open_model(FLOAT))
    assert mode == "error" and errors and f"note: {note}" in capsys.readouterr().err.splitlines()
    # a renamed output of another rank, or outputs of another count, still do not correspond
    other = onnx.load(renamed)
    del other.graph.output[0].type.tensor_type.shape.dim[1:]
    assert interface_mismatch(onnx.load(str(FLOAT)), other, outputs_by_position=True) == \
        "output 'logits' has rank 2 vs 1"
    other.graph.output.add().CopyFrom(onnx.load(renamed).graph.output[0])
    other.graph.output[1].name = "/f/f.0/Conv_output_0"
    assert interface_mismatch(onnx.load(str(FLOAT)), other, outputs_by_position=True) == \
        "outputs ['logits'] vs ['/f/f.0/Conv_output_0', 'out_renamed']"


def test_raw_and_opened_quantized_files_give_the_same_names(exports):
    """The app diffed the raw file (unnamed nodes as "Reshape#0"), the CLI the opened one ("Reshape_0",
    as the canvas names them)."""
    raw = onnx.load(str(exports["ort_dynamic"]))
    assert sum(not n.name for n in raw.graph.node) == 3  # quantize_dynamic's bias Reshapes
    opened = api.open_model(exports["ort_dynamic"]).proto
    model = api.open_model(FLOAT)
    from_raw, from_opened = compare_models(model, raw), compare_models(model, opened)
    assert from_raw.to_json() == from_opened.to_json()
    names = [n.name for n in opened.graph.node]
    assert [n.name for n in from_raw.quant_proto.graph.node] == names
    reshapes = sorted(n for n, op in from_raw.added if op == "Reshape")
    assert reshapes == sorted(n for n in names if n.startswith("Reshape")) and len(reshapes) == 3
    assert not any("#" in n for n, _op in from_raw.added)
