"""QONNX files from the CLI that the ``qonnx`` package (and FINN) run as written: ``--input-shape
NAME:DIMS``, batch 1 by default where the batch is the only symbolic dimension, every tensor's shape
in ``value_info``; run through ``execute_onnx``, ``cleanup_model`` and ``inference_cost`` without
any preparation of ours."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from workbench import cli
from workbench.core import api
from workbench.core.errors import ExportError
from workbench.core.qonnx.shapes import parse_input_shape, resolve_input_shapes


@pytest.fixture(autouse=True)
def _latency_scripted(fake_latency):
    """The latency check measures every quantized model at half its float model's latency (conftest's fake
    clock), so what these tests check does not depend on this machine's timings."""
    fake_latency.quantized_at(0.5)


RNG = np.random.default_rng(5)


def _tiny(dims) -> onnx.ModelProto:
    w = numpy_helper.from_array(RNG.normal(0, 1, (4, 3, 3, 3)).astype(np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])], "t",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_parse_input_shape():
    assert parse_input_shape("input:1,3,224,224") == ("input", [1, 3, 224, 224])
    assert parse_input_shape("input:0:1x3x8x8") == ("input:0", [1, 3, 8, 8])
    for bad in ("input", ":1,2", "x:1,a", "x:1,,2", "x:1,0", "x:"):
        with pytest.raises(ExportError):
            parse_input_shape(bad)


def test_resolve_input_shapes():
    assert resolve_input_shapes(_tiny(["N", 3, 8, 8])).shapes == {"x": [1, 3, 8, 8]}
    assert resolve_input_shapes(_tiny([2, 3, 8, 8])).shapes is None  # static already: written as before
    choice = resolve_input_shapes(_tiny(["N", 3, "h", "w"]))
    assert choice.shapes is None and "--input-shape" in choice.note and "x [N, 3, h, w]" in choice.note
    assert resolve_input_shapes(_tiny(["N", 3, "h", "w"]), {"x": [2, 3, 5, 6]}).shapes == {"x": [2, 3, 5, 6]}
    # the model's dims read "N x 3 x 8 x 8" (they ran together: "Nx3x8x8", minilm_l6_v2's "batchxsequence")
    for given, words in (({"y": [1, 3, 8, 8]}, "no input 'y'"),
                         ({"x": [1, 3, 8]}, r"has 4 dimensions \(N x 3 x 8 x 8\), not 3\."),
                         ({"x": [1, 4, 8, 8]}, r"dimension 1 of input 'x' is fixed to 3 in .* \(N x 3 x 8 x 8\)\.")):
        with pytest.raises(ExportError, match=words):
            resolve_input_shapes(_tiny(["N", 3, 8, 8]), given)


@pytest.mark.parametrize("flag,words", [("inp:1,1,8,8", "has no input 'inp' (inputs: input)"),
                                        ("input:1,8,8", "has 4 dimensions"),
                                        ("input:1,2,8,8", "is fixed to 1"),
                                        ("input:1,b,8,8", "is not a list of whole numbers")])
def test_cli_bad_input_shape_is_one_line_and_writes_nothing(corpus, tmp_path, capsys, flag, words):
    d = corpus / "digits_cnn"
    out = tmp_path / "q.onnx"
    try:
        rc = cli.main(["quantize", str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--samples", "2",
                       "--format", "qonnx", "--input-shape", flag, "-o", str(out)])
    except SystemExit as exc:  # usage errors (argparse) exit the same way: status 2, one line
        rc = exc.code
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert rc == 2 and len(err) == 1 and words in err[0], err
    assert not out.exists()


def test_cli_input_shape_needs_qonnx(corpus, tmp_path, capsys):
    d = corpus / "digits_cnn"
    rc = cli.main(["quantize", str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--samples", "2",
                   "--input-shape", "input:1,1,8,8", "-o", str(tmp_path / "q.onnx")])
    assert rc == 2 and "applies to QONNX output only" in capsys.readouterr().err


def test_convert_to_qonnx_gets_static_shapes(corpus, tmp_path):
    d = corpus / "digits_cnn"
    assert cli.main(["quantize", str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--samples", "4",
                     "-o", str(tmp_path / "q.onnx")]) == 0
    assert cli.main(["convert", str(tmp_path / "q.onnx"), str(tmp_path / "c.onnx"), "--to", "qonnx",
                     "--input-shape", "input:3,1,8,8"]) == 0
    m = onnx.load(tmp_path / "c.onnx")
    assert [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim] == [3, 1, 8, 8]
    _all_shapes_known(m)


def _all_shapes_known(m: onnx.ModelProto) -> None:
    known = {v.name: v for v in list(m.graph.value_info) + list(m.graph.output) + list(m.graph.input)}
    for n in m.graph.node:
        for o in n.output:
            dims = known[o].type.tensor_type.shape.dim
            assert all(d.HasField("dim_value") and d.dim_value > 0 for d in dims), o


# -- corpus: the files as the CLI writes them, in qonnx's own tools -----------------------------------

CORPUS_EXPORTS = [("digits_cnn", "model_opset17.onnx", [], 1e-5),
                  # qonnx's Quant rounds x / scale + zero_point in float32 (zero point added before rounding)
                  # where QuantizeLinear rounds x / scale: 4 of the 409,600 elements of nudenet's first
                  # uint8 activation land one step apart, and 60 SiLU layers amplify that to about 5-7% of
                  # the box range at a few output elements, as far as onnxruntime's fused integer kernels
                  # are from its own unfused run of the QDQ file (4.5%). 84.9% of the elements within 1e-5
                  # (scores 99.9%, boxes 17.5%): the size guard keeps the anchor-grid units float, so the
                  # boxes are decoded in float and a one-step difference upstream is no longer rounded away
                  # on their uint8 grid (92.9%, boxes 61.1%, when they were quantized).
                  ("nudenet_320n", "model.onnx", ["--input-shape", "images:1,3,320,320"], None)]


@pytest.mark.slow
@pytest.mark.parametrize("name,file,flags,tol", CORPUS_EXPORTS)
def test_cli_qonnx_runs_in_qonnx_as_written(corpus, tmp_path, capsys, name, file, flags, tol):
    pytest.importorskip("qonnx")
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.core.onnx_exec import execute_onnx
    from qonnx.util.cleanup import cleanup_model
    from qonnx.util.inference_cost import inference_cost

    d = corpus / name
    qx, qdq, proj = tmp_path / "m.qonnx.onnx", tmp_path / "m.qdq.onnx", tmp_path / "job.wbproj"
    assert cli.main(["quantize", str(d / file), "--data", str(d / "calib.npz"), "--samples", "8", "--format",
                     "qonnx", *flags, "-o", str(qx), "--save-project", str(proj), "--no-search", "--no-auto"]) == 0
    # the same job as QDQ (cached ranges; the project would replay as the QONNX it was saved with)
    assert cli.main(["quantize", str(proj), "--format", "qdq", "-o", str(qdq)]) == 0
    capsys.readouterr()
    m = onnx.load(qx)
    _all_shapes_known(m)
    inp = m.graph.input[0].name
    x = np.load(d / "eval.npz")[inp][:1]
    want = ort.InferenceSession(str(qdq)).run(None, {inp: x})[0]
    span = float(np.ptp(want))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        as_written = execute_onnx(ModelWrapper(str(qx)), {inp: x})[m.graph.output[0].name]
        clean = cleanup_model(ModelWrapper(str(qx)))
        assert [d.dim_value for d in clean.graph.input[0].type.tensor_type.shape.dim] == list(x.shape)
        cleaned = execute_onnx(clean, {clean.graph.input[0].name: x})[clean.graph.output[0].name]
        cost = inference_cost(clean, discount_sparsity=False, preprocess=name == "digits_cnn")["total_cost"]
    assert cost["total_macs"] > 0  # nudenet: qonnx counts no MACs for Softmax, Resize, Slice, ... ("unsupported")
    if name == "digits_cnn":
        assert cost["unsupported"] == "set()"
    np.testing.assert_allclose(cleaned, as_written, rtol=0, atol=1e-5 * span)
    diff = np.abs(as_written - want)
    print(f"{name}: max |qonnx - QDQ in onnxruntime| = {diff.max() / span:.3g} of the range, "
          f"{np.mean(diff <= 1e-5 * span):.4%} of elements within 1e-5; MACs {cost['total_macs']:.0f}")
    if tol is not None:
        assert diff.max() <= tol * span
    else:  # no further from the QDQ file than onnxruntime's own two ways of running it
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        plain = ort.InferenceSession(str(qdq), so).run(None, {inp: x})[0]
        spread = float(np.max(np.abs(plain - want)))
        print(f"{name}: onnxruntime integer kernels vs its unfused QDQ graph: {spread / span:.3g} of the range")
        assert np.mean(diff <= 1e-5 * span) >= 0.8 and diff.max() <= 2 * spread + 1e-5 * span


def test_api_export_keeps_symbolic_shapes_unless_asked(corpus, tmp_path):
    d = corpus / "digits_cnn"
    model = api.open_model(d / "model_opset17.onnx")
    result = api.quantize(model, api.make_recipe("cpu-u8s8"), data=str(d / "calib.npz"), samples=4)
    plain = onnx.load(api.export(result, tmp_path / "a.onnx", format="qonnx", model=model))
    assert plain.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "N"
    static = onnx.load(api.export(result, tmp_path / "b.onnx", format="qonnx", model=model, static_shapes=True))
    assert [d.dim_value for d in static.graph.input[0].type.tensor_type.shape.dim] == [1, 1, 8, 8]
    _all_shapes_known(static)


def test_a_project_saved_by_a_qonnx_export_replays_as_qonnx(corpus, tmp_path):
    """The project records the export format and input shapes; a replay without flags writes the same file."""
    d = corpus / "digits_cnn"
    first, again, qdq = tmp_path / "q.onnx", tmp_path / "again.onnx", tmp_path / "qdq.onnx"
    job = tmp_path / "job.wbproj"
    assert cli.main(["quantize", str(d / "model_opset17.onnx"), "--data", str(d / "calib.npz"), "--format", "qonnx",
                     "--input-shape", "input:2,1,8,8", "-o", str(first), "--save-project", str(job)]) == 0
    assert api.load_project(job).export == {"format": "qonnx", "input_shapes": {"input": [2, 1, 8, 8]}}
    assert cli.main(["quantize", str(job), "-o", str(again)]) == 0
    assert again.read_bytes() == first.read_bytes()
    m = onnx.load(str(again))
    assert any(n.op_type == "Quant" for n in m.graph.node)
    assert [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim] == [2, 1, 8, 8]
    assert cli.main(["quantize", str(job), "--format", "qdq", "-o", str(qdq)]) == 0  # the command line wins
    assert not any(n.op_type == "Quant" for n in onnx.load(str(qdq)).graph.node)
